import { Injectable } from '@nestjs/common';
import { getAddress, type Hex } from 'viem';
import { encodeReceipt, evmSessionReceipt, PAYMENT_RECEIPT_HEADER, toProblemDetails } from '@mp/mpp';
import { ProblemError } from '@mp/platform';
import { scopeOf, type MppAnswer } from '../mpp/mpp.service';
import { Clock } from '../x402/clock';
import { SessionChannels, type ChannelRow } from './session-channels.repository';
import type { SessionChargeInput } from './sessions.api';

export interface ChannelView {
  channelId: string;
  network: string;
  chainId: number;
  escrow: string;
  token: string;
  payer: string;
  payee: string;
  authorizedSigner: string;
  deposit: string;
  acceptedCumulative: string;
  spent: string;
  settledOnChain: string;
  /** accepted − spent: what can still be charged without a new voucher */
  available: string;
  minVoucherDelta: string;
  state: 'open' | 'closing' | 'closed';
  closeRequestedAt: string | null;
  openTxHash: string;
  closeTxHash: string | null;
}

/**
 * The merchant's side of a session between vouchers: charges made before delivery (spent rises only within the
 * accepted vouchers, each chargeId once) and the channel's state. The accounting itself is SessionChannels' SQL.
 */
@Injectable()
export class SessionsService {
  constructor(
    private readonly channels: SessionChannels,
    private readonly clock: Clock,
  ) {}

  async charge(input: SessionChargeInput, merchantId: string | null): Promise<MppAnswer> {
    const amount = BigInt(input.amount);
    const units = input.units === undefined ? undefined : BigInt(input.units);
    const outcome = await this.channels.charge(scopeOf(merchantId), input.channelId, input.chargeId, amount, units);
    switch (outcome.kind) {
      case 'not-found':
        throw new ProblemError('not_found', `channel ${input.channelId} is not open with this merchant`);
      case 'conflict':
        throw new ProblemError(
          'session_charge_conflict',
          `chargeId ${input.chargeId} was charged ${outcome.amount} on channel ${input.channelId}, not ${input.amount}`,
          { chargeId: input.chargeId, amount: outcome.amount.toString() },
        );
      case 'not-open':
        return problem('session/channel-finalized', `channel ${input.channelId} is ${outcome.channel.state}: nothing more can be charged`);
      case 'need-voucher':
        // what the SSE `payment-need-voucher` event carries: the merchant relays it and the client signs up to requiredCumulative
        return problem(
          'session/insufficient-balance',
          `channel ${input.channelId} has ${outcome.channel.acceptedCumulative - outcome.channel.spent} accepted and unspent, the charge needs ${amount}`,
          {
            channelId: outcome.channel.channelId,
            requiredCumulative: outcome.requiredCumulative.toString(),
            acceptedCumulative: outcome.channel.acceptedCumulative.toString(),
            deposit: outcome.channel.deposit.toString(),
          },
        );
      case 'charged': {
        const { channel } = outcome;
        const receipt = evmSessionReceipt({
          challengeId: channel.lastChallengeId,
          channelId: channel.channelId,
          acceptedCumulative: channel.acceptedCumulative,
          spent: outcome.spentAfter,
          chainId: channel.chainId,
          timestamp: new Date(this.clock.nowMs()),
          ...(outcome.units !== null && { units: outcome.units }),
        });
        const header = encodeReceipt(receipt);
        return {
          status: 200,
          headers: { [PAYMENT_RECEIPT_HEADER]: header, 'Cache-Control': 'private' },
          body: {
            charged: true,
            repeated: outcome.repeated,
            channelId: channel.channelId,
            chargeId: input.chargeId,
            amount: outcome.amount.toString(),
            ...(outcome.units !== null && { units: outcome.units.toString() }),
            spent: outcome.spentAfter.toString(),
            acceptedCumulative: channel.acceptedCumulative.toString(),
            deposit: channel.deposit.toString(),
            receipt,
            paymentReceipt: header,
          },
        };
      }
    }
  }

  async view(channelId: Hex, merchantId: string | null): Promise<ChannelView> {
    const channel = await this.channels.find(channelId);
    if (!channel || channel.scope !== scopeOf(merchantId)) throw new ProblemError('not_found', `channel ${channelId} is not open with this merchant`);
    return viewOf(channel);
  }
}

function problem(code: 'session/insufficient-balance' | 'session/channel-finalized', detail: string, extensions?: Record<string, unknown>): MppAnswer {
  return {
    status: code === 'session/insufficient-balance' ? 402 : 410,
    headers: { 'Content-Type': 'application/problem+json', 'Cache-Control': 'no-store' },
    body: { ...toProblemDetails(code, { detail, ...(extensions && { extensions }) }) },
  };
}

function viewOf(c: ChannelRow): ChannelView {
  return {
    channelId: c.channelId,
    network: c.network,
    chainId: c.chainId,
    escrow: getAddress(c.escrow),
    token: getAddress(c.token),
    payer: getAddress(c.payer),
    payee: getAddress(c.payee),
    authorizedSigner: getAddress(c.authorizedSigner),
    deposit: c.deposit.toString(),
    acceptedCumulative: c.acceptedCumulative.toString(),
    spent: c.spent.toString(),
    settledOnChain: c.settledOnChain.toString(),
    available: (c.acceptedCumulative - c.spent).toString(),
    minVoucherDelta: c.minVoucherDelta.toString(),
    state: c.state,
    closeRequestedAt: c.closeRequestedAt?.toISOString() ?? null,
    openTxHash: c.openTxHash,
    closeTxHash: c.closeTxHash,
  };
}
