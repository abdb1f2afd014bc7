import { Inject, Injectable, Logger } from '@nestjs/common';
import { encodeFunctionData, getAddress, isAddressEqual, parseEventLogs, type Address, type Hex, type TransactionReceipt } from 'viem';
import { sessionEscrowAbi } from '@mp/chain';
import { decideClose, settlementDue, type ChannelBook, type VoucherInput } from '@mp/channels';
import type { MppError } from '@mp/mpp';
import { FACILITATOR_CONFIG, type FacilitatorConfig, type SessionsConfig } from '../config/facilitator.config';
import { NetworkRegistry, type Network } from '../networks/network-registry';
import { SessionChannels, type ChannelRow } from './session-channels.repository';
import { SessionOperations, type OperationOutcome } from './session-operations';

/** Settings when sessions are off (no payee key): nothing is offered, so nothing is read. */
export const NO_SESSIONS: SessionsConfig = { payeeKeys: new Map(), waitMs: 0, settleMinAmount: 1n, settleMaxAgeMs: 1, idleCloseMs: 1, pollMs: 0 };

/** Most channels one tick looks at (the least recently changed first, so all get their turn). */
const CHANNELS_PER_TICK = 500;

export type CloseResult = { ok: true; channel: ChannelRow; txHash: Hex } | { ok: false; error: MppError };

/**
 * What the payee does on chain with a channel, exactly once each (SessionOperations): settle the highest accepted
 * voucher, close (the payer's close voucher if it covers spent, else the highest accepted: @mp/channels decideClose),
 * and, every SESSION_SETTLE_POLL_MS in the worker, watch the escrow: a CloseRequested makes the channel closing
 * (`channel.close_requested`) and it is settled at once, within the grace period; a finalized channel (the payer's
 * withdraw after the grace, or a close whose answer was lost) is recorded closed from its ChannelClosed event.
 * Channels are settled when `settlementDue` (SESSION_SETTLE_MIN_AMOUNT unsettled, or the oldest unsettled acceptance
 * older than SESSION_SETTLE_MAX_AGE_MS), and closed by us after SESSION_IDLE_CLOSE_MS without a voucher.
 */
@Injectable()
export class SessionSettlement {
  private readonly logger = new Logger(SessionSettlement.name);
  private readonly sessions: SessionsConfig;

  constructor(
    @Inject(FACILITATOR_CONFIG) config: FacilitatorConfig,
    private readonly networks: NetworkRegistry,
    private readonly channels: SessionChannels,
    private readonly operations: SessionOperations,
  ) {
    this.sessions = config.sessions ?? NO_SESSIONS;
  }

  /**
   * Closes the channel on chain: no charge is taken once it is `closing`; a close that would revert or reverted
   * opens it again. `closeVoucher` undefined: the highest accepted voucher (an idle close).
   */
  async close(row: ChannelRow, closeVoucher: VoucherInput | undefined, challengeId: string): Promise<CloseResult> {
    const closing = await this.channels.beginClose(row.channelId, challengeId);
    if (!closing) return { ok: false, error: { code: 'session/channel-finalized', detail: `channel ${row.channelId} is finalized` } };
    const decision = decideClose(bookOf(closing), closeVoucher);
    if (decision.kind !== 'close') return { ok: false, error: { code: 'session/channel-finalized', detail: decision.detail } };
    const network = this.networkOf(closing);
    const escrow = getAddress(closing.escrow);
    const args = [closing.channelId, decision.cumulativeAmount, (decision.signature ?? '0x') as Hex] as const;
    const outcome = await this.operations.run({
      key: `close:${closing.channelId}:${decision.cumulativeAmount}`,
      kind: 'close',
      channelId: closing.channelId,
      network,
      escrow,
      functionName: 'close',
      args,
      data: encodeFunctionData({ abi: sessionEscrowAbi, functionName: 'close', args }),
      senderKey: this.payeeKey(closing),
      waitMs: this.sessions.waitMs,
      judge: (receipt) => judgeEvent(receipt, escrow, closing.channelId, 'ChannelClosed'),
    });
    if (!outcome.ok) {
      if (!('pending' in outcome)) await this.channels.reopen(closing.channelId);
      return { ok: false, error: { code: 'pending' in outcome ? 'internal-payment-error' : outcome.code, detail: outcome.detail } };
    }
    const channel = await this.channels.closed(closing.channelId, {
      by: 'close',
      ...(decision.signature !== undefined && { signature: decision.signature }),
      settledToPayee: BigInt(outcome.result.settledToPayee!),
      refundedToPayer: BigInt(outcome.result.refundedToPayer!),
      txHash: outcome.txHash,
    });
    return { ok: true, channel, txHash: outcome.txHash };
  }

  /** Settles the highest accepted voucher on chain (the payee is paid accepted − settled). */
  async settle(row: ChannelRow): Promise<OperationOutcome> {
    const network = this.networkOf(row);
    const escrow = getAddress(row.escrow);
    const args = [row.channelId, row.acceptedCumulative, row.acceptedSignature as Hex] as const;
    const outcome = await this.operations.run({
      key: `settle:${row.channelId}:${row.acceptedCumulative}`,
      kind: 'settle',
      channelId: row.channelId,
      network,
      escrow,
      functionName: 'settle',
      args,
      data: encodeFunctionData({ abi: sessionEscrowAbi, functionName: 'settle', args }),
      senderKey: this.payeeKey(row),
      waitMs: this.sessions.waitMs,
      judge: (receipt) => judgeEvent(receipt, escrow, row.channelId, 'Settled'),
    });
    if (outcome.ok) await this.channels.settled(row.channelId, BigInt(outcome.result.newSettled!), outcome.txHash);
    return outcome;
  }

  /** One pass of the worker: watch every live channel, settle what is due, close the idle ones. */
  async tick(now = new Date()): Promise<void> {
    const policy = { minUnsettled: this.sessions.settleMinAmount, maxAgeMs: this.sessions.settleMaxAgeMs };
    // only the networks this process serves with an escrow (another deployment's channels are not ours to watch)
    const served = this.networks
      .all()
      .filter((n) => n.config.sessionEscrow)
      .map((n) => n.config.network);
    for (const row of await this.channels.live(served, CHANNELS_PER_TICK)) {
      try {
        const watched = await this.watch(row);
        if (watched.state === 'closed' || !watched.acceptedSignature) continue;
        // a close under way (the payer's close credential) is that request's to finish
        if (watched.state === 'closing' && watched.closeRequestedAt === null) continue;
        if (settlementDue(bookOf(watched), policy, now)) {
          const outcome = await this.settle(watched);
          if (!outcome.ok) this.logger.warn(`settling channel ${row.channelId}: ${outcome.detail}`);
        }
      } catch (error) {
        this.logger.warn(`channel ${row.channelId}: ${(error as Error).message.split('\n')[0]}`);
      }
    }
    for (const row of await this.channels.idleSince(served, new Date(now.getTime() - this.sessions.idleCloseMs), CHANNELS_PER_TICK)) {
      const closed = await this.close(row, undefined, row.lastChallengeId).catch((error: Error) => ({ ok: false as const, error: { detail: error.message } }));
      if (!closed.ok) this.logger.warn(`closing idle channel ${row.channelId}: ${closed.error.detail}`);
    }
  }

  /** The escrow's view of one channel, recorded: a close request (closing, settle at once) or finalization (closed). */
  async watch(row: ChannelRow): Promise<ChannelRow> {
    const network = this.networkOf(row);
    const escrow = getAddress(row.escrow);
    const chain = await network.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [row.channelId] });
    if (chain.finalized) {
      const [closed] = await network.client.getContractEvents({
        address: escrow,
        abi: sessionEscrowAbi,
        eventName: 'ChannelClosed',
        args: { channelId: row.channelId },
        fromBlock: 'earliest',
      });
      if (!closed?.transactionHash || closed.args.settledToPayee === undefined || closed.args.refundedToPayer === undefined) return row;
      const ours = await this.operations.sentBy(closed.transactionHash);
      return this.channels.closed(row.channelId, {
        by: ours ? 'close' : 'withdraw',
        settledToPayee: closed.args.settledToPayee,
        refundedToPayer: closed.args.refundedToPayer,
        txHash: closed.transactionHash,
      });
    }
    if (chain.closeRequestedAt !== 0n && row.closeRequestedAt === null) {
      const requests = await network.client.getContractEvents({
        address: escrow,
        abi: sessionEscrowAbi,
        eventName: 'CloseRequested',
        args: { channelId: row.channelId },
        fromBlock: 'earliest',
      });
      const request = requests.at(-1);
      const grace = await network.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'CLOSE_GRACE_PERIOD' });
      const graceEnd = request?.args.closeGraceEnd ?? chain.closeRequestedAt + grace;
      const marked = await this.channels.closeRequested(
        row.channelId,
        new Date(Number(chain.closeRequestedAt) * 1000),
        new Date(Number(graceEnd) * 1000),
        (request?.transactionHash ?? `0x${'0'.repeat(64)}`) as Hex,
      );
      return marked ?? row;
    }
    return row;
  }

  private networkOf(row: ChannelRow): Network {
    const network = this.networks.resolve(row.network, 2);
    if (!network) throw new Error(`channel ${row.channelId} is on ${row.network}, which is not served any more`);
    return network;
  }

  private payeeKey(row: ChannelRow): Hex {
    const key = this.sessions.payeeKeys.get(row.payee.toLowerCase());
    if (!key) throw new Error(`channel ${row.channelId} pays ${row.payee}, whose key is not in SESSION_PAYEE_KEYS any more`);
    return key;
  }
}

/** The channel's book for @mp/channels' pure decisions. */
export function bookOf(row: ChannelRow): ChannelBook {
  return {
    channelId: row.channelId,
    deposit: row.deposit,
    acceptedCumulative: row.acceptedCumulative,
    acceptedSignature: row.acceptedSignature ?? undefined,
    spent: row.spent,
    settledOnChain: row.settledOnChain,
    minVoucherDelta: row.minVoucherDelta,
    closeRequested: row.closeRequestedAt !== null,
    finalized: row.state === 'closed',
    unsettledSince: row.unsettledSince ?? undefined,
  };
}

/** A mined transaction's effect on the channel, from the escrow's event (never from an error string). */
export function judgeEvent(
  receipt: TransactionReceipt,
  escrow: Address,
  channelId: Hex,
  eventName: 'ChannelOpened' | 'TopUp' | 'ChannelClosed' | 'Settled',
): OperationOutcome {
  const txHash = receipt.transactionHash.toLowerCase() as Hex;
  const log = parseEventLogs({ abi: sessionEscrowAbi, logs: receipt.logs, eventName }).find(
    (l) => isAddressEqual(l.address, escrow) && (l.args as { channelId: Hex }).channelId.toLowerCase() === channelId,
  );
  if (!log)
    return { ok: false, code: 'session/transaction-reverted', detail: `transaction ${txHash} emitted no ${eventName} for channel ${channelId}`, txHash };
  const result: Record<string, string> = {};
  for (const [name, value] of Object.entries(log.args as Record<string, unknown>)) if (typeof value === 'bigint') result[name] = value.toString();
  return { ok: true, txHash, result };
}
