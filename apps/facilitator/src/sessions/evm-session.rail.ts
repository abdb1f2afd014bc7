import { Inject, Injectable } from '@nestjs/common';
import {
  encodeFunctionData,
  getAddress,
  isAddressEqual,
  parseEventLogs,
  recoverTypedDataAddress,
  zeroAddress,
  type Address,
  type Hex,
  type TransactionReceipt,
} from 'viem';
import { isTransportFailure, sessionEscrowAbi } from '@mp/chain';
import { decideClose, type ChannelBook, type SignatureVerdict } from '@mp/channels';
import {
  checkEvmSession,
  EVM_METHOD,
  evmSessionReceipt,
  evmSessionRequestProblems,
  evmSessionRequestSchema,
  IMPLEMENTED_SESSION_CREDENTIAL_TYPES,
  isLowS,
  normalizeEvmSessionRequest,
  SESSION_INTENT,
  voucherTypedData,
  type CheckedDeposit,
  type EvmSessionReceipt,
  type EvmSessionRequest,
  type MppError,
} from '@mp/mpp';
import { FACILITATOR_CONFIG, type FacilitatorConfig, type SessionsConfig } from '../config/facilitator.config';
import type { ChargeAttempt, ChargeRail, RailSettlement, RailVerdict, RequestCheck } from '../mpp/charges/charge-rail';
import { NetworkRegistry, type Network } from '../networks/network-registry';
import { Clock } from '../x402/clock';
import { SessionChannels, type ChannelRow } from './session-channels.repository';
import { SessionOperations, type OperationOutcome } from './session-operations';

/** What a session credential gets: a receipt (200), or a problem. */
export type SessionAnswer = { ok: true; receipt: EvmSessionReceipt; payer: string } | { ok: false; error: MppError };

type OnChainChannel = {
  finalized: boolean;
  closeRequestedAt: bigint;
  payer: Address;
  payee: Address;
  token: Address;
  authorizedSigner: Address;
  deposit: bigint;
  settled: bigint;
};

const fail = (code: MppError['code'], detail: string): { ok: false; error: MppError } => ({ ok: false, error: { code, detail } });

/**
 * Method `evm`, intent `session` (draft-evm-session-00, recurring-and-streaming.md §2): channels in our escrow, paid
 * with cumulative vouchers. Not claim-once like a charge: one challenge opens a channel, and every later credential
 * (voucher, top-up, close) echoes a challenge we issued for the same route (HMAC binding, expiry and route checked by
 * MppService as for charges, so an expired challenge is refused and the client retries with the fresh one from the
 * 402, as mppx's server does) and names a channel of the same merchant scope. Vouchers follow the spec's order exactly;
 * state lives in SessionChannels, transactions go through SessionOperations (exactly once, outcome from the receipt).
 */
@Injectable()
export class EvmSessionRail implements ChargeRail {
  readonly method = EVM_METHOD;
  readonly intent = SESSION_INTENT;
  private readonly sessions: SessionsConfig;

  constructor(
    @Inject(FACILITATOR_CONFIG) config: FacilitatorConfig,
    private readonly networks: NetworkRegistry,
    private readonly channels: SessionChannels,
    private readonly operations: SessionOperations,
    private readonly clock: Clock,
  ) {
    this.sessions = config.sessions ?? { payeeKeys: new Map(), waitMs: 0 };
  }

  /** Fills in the escrow of the chain, the credential types the escrow implements and minVoucherDelta; the recipient must be a payee we hold the key of. */
  normalize(request: unknown): RequestCheck {
    if (typeof request !== 'object' || request === null || Array.isArray(request)) return { ok: false, problems: ['request: must be an object'] };
    const input = request as Record<string, unknown>;
    const details = (typeof input.methodDetails === 'object' && input.methodDetails !== null ? input.methodDetails : {}) as Record<string, unknown>;
    const chainId = details.chainId;
    if (typeof chainId !== 'number') return { ok: false, problems: ['request.methodDetails.chainId: must be the chain id (a number)'] };
    const network = this.networks.resolve(`eip155:${chainId}`, 2);
    if (!network) return { ok: false, problems: [`request.methodDetails.chainId: chain ${chainId} is not served by this facilitator`] };
    const escrow = network.config.sessionEscrow;
    if (!escrow) return { ok: false, problems: [`request.methodDetails.chainId: no session escrow is configured on eip155:${chainId}`] };
    const filled = {
      ...input,
      methodDetails: {
        credentialTypes: [...IMPLEMENTED_SESSION_CREDENTIAL_TYPES],
        minVoucherDelta: '0',
        ...details,
        escrowContract: details.escrowContract ?? escrow,
      },
    };
    const problems = evmSessionRequestProblems(filled);
    if (problems.length) return { ok: false, problems };
    const parsed = evmSessionRequestSchema.parse(filled);
    if (!isAddressEqual(parsed.methodDetails.escrowContract as Address, escrow))
      return { ok: false, problems: [`request.methodDetails.escrowContract: the session escrow on eip155:${chainId} is ${escrow}`] };
    if (!this.networks.asset(network, parsed.currency))
      return { ok: false, problems: [`request.currency: ${parsed.currency} is not an accepted asset on eip155:${chainId}`] };
    if (!this.sessions.payeeKeys.has(parsed.recipient.toLowerCase()))
      return {
        ok: false,
        problems: [
          `request.recipient: ${getAddress(parsed.recipient)} is not a session payee of this facilitator (SESSION_PAYEE_KEYS): settle and close must come from the payee`,
        ],
      };
    return { ok: true, request: normalizeEvmSessionRequest(parsed) };
  }

  /** /mpp/verify: the stateless checks, and for a voucher or close on a known channel its signature. Nothing is written. */
  async verify(attempt: ChargeAttempt): Promise<RailVerdict> {
    const checked = this.check(attempt);
    if (!checked.ok) return checked;
    const c = checked.value.checked;
    if (c.action !== 'voucher' && c.action !== 'close') return { ok: true };
    const channel = await this.channelOf(attempt, c.channelId, checked.value.request);
    if (!channel.ok) return channel;
    const verdict = await this.signatureVerdict(channel.row, c.cumulativeAmount, c.voucherSignature);
    if (verdict !== 'valid') return fail(`session/${verdict}`, verdictDetail(verdict));
    return { ok: true, payer: getAddress(channel.row.payer) };
  }

  /** Not used: a session credential is presented (MppService calls `present`), never claimed once. */
  settle(): Promise<RailSettlement> {
    return Promise.resolve({ ok: false, error: { code: 'method-unsupported', detail: 'session credentials are not claimed once' }, final: true });
  }

  /** Opens, tops up, accepts a voucher or closes, by the credential's action; the answer carries the channel's receipt. */
  async present(attempt: ChargeAttempt): Promise<SessionAnswer> {
    const checked = this.check(attempt);
    if (!checked.ok) return checked;
    const { request, checked: c } = checked.value;
    try {
      switch (c.action) {
        case 'open':
          return c.type === 'hash'
            ? await this.openByHash(attempt, request, c.channelId, c.hash, c.cumulativeAmount, c.voucherSignature)
            : await this.openRelayed(attempt, request, c.deposit, c.cumulativeAmount, c.voucherSignature);
        case 'topUp':
          return c.type === 'hash'
            ? await this.topUpByHash(attempt, request, c.channelId, c.hash, c.additionalDeposit)
            : await this.topUpRelayed(attempt, request, c.deposit);
        case 'voucher': {
          if (c.deposit?.action === 'open') return await this.openRelayed(attempt, request, c.deposit, c.cumulativeAmount, c.voucherSignature);
          if (c.deposit?.action === 'topUp') {
            // the deposit runs first; if it fails, the whole credential fails
            const topped = await this.topUpRelayed(attempt, request, c.deposit);
            if (!topped.ok) return topped;
          }
          return await this.voucher(attempt, request, c.channelId, c.cumulativeAmount, c.voucherSignature);
        }
        case 'close':
          return await this.close(attempt, request, c.channelId, c.cumulativeAmount, c.voucherSignature);
      }
    } catch (error) {
      if (isTransportFailure(error))
        return fail('internal-payment-error', `the chain is unreachable: ${(error as Error).message.split('\n')[0]}; send the credential again`);
      throw error;
    }
  }

  private check(attempt: ChargeAttempt) {
    const { challenge, credential } = attempt;
    return checkEvmSession(challenge, credential.payload, credential.source, this.clock.nowSeconds());
  }

  private network(request: EvmSessionRequest): Network {
    // normalize() served this request's chain when the challenge was issued and again when its terms were matched
    return this.networks.resolve(`eip155:${request.methodDetails.chainId}`, 2)!;
  }

  private payeeKey(payee: string): Hex | undefined {
    return this.sessions.payeeKeys.get(payee.toLowerCase());
  }

  /** The channel a credential names: ours, in the caller's merchant scope, with the terms of this challenge. */
  private async channelOf(
    attempt: ChargeAttempt,
    channelId: Hex,
    request: EvmSessionRequest,
  ): Promise<{ ok: true; row: ChannelRow } | { ok: false; error: MppError }> {
    const row = await this.channels.find(channelId);
    if (!row || row.scope !== (attempt.merchantId ?? '')) return fail('session/channel-not-found', `channel ${channelId} is not open with this merchant`);
    if (
      row.chainId !== request.methodDetails.chainId ||
      !isAddressEqual(row.escrow as Address, request.methodDetails.escrowContract as Address) ||
      !isAddressEqual(row.token as Address, request.currency as Address) ||
      !isAddressEqual(row.payee as Address, request.recipient as Address)
    )
      return fail('verification-failed', `channel ${channelId} was opened on other terms (escrow, token or recipient) than this challenge's`);
    return { ok: true, row };
  }

  /**
   * The spec's steps 3–5: recover the EIP-712 signer, low s, the on-chain signer (ECDSA; an ERC-1271 signer, a
   * contract, is asked on chain only when recovery does not match).
   */
  private async signatureVerdict(
    channel: Pick<ChannelRow, 'channelId' | 'chainId' | 'escrow' | 'authorizedSigner' | 'network'>,
    cumulativeAmount: bigint,
    signature: Hex,
  ): Promise<SignatureVerdict> {
    const typed = voucherTypedData({ chainId: channel.chainId, escrowContract: channel.escrow as Address }, { channelId: channel.channelId, cumulativeAmount });
    let recovered: Address;
    try {
      recovered = await recoverTypedDataAddress({ ...typed, signature });
    } catch {
      return 'invalid-signature';
    }
    if (!isLowS(signature)) return 'invalid-signature';
    if (isAddressEqual(recovered, channel.authorizedSigner as Address)) return 'valid';
    const network = this.networks.resolve(channel.network, 2);
    if (network) {
      const code = await network.client.getCode({ address: channel.authorizedSigner as Address });
      if (code && code !== '0x') {
        const valid = await network.client.verifyTypedData({ ...typed, address: channel.authorizedSigner as Address, signature });
        return valid ? 'valid' : 'signer-mismatch';
      }
    }
    return 'signer-mismatch';
  }

  private async readChannel(network: Network, escrow: Address, channelId: Hex): Promise<OnChainChannel> {
    return (await network.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channelId] })) as OnChainChannel;
  }

  /** The receipt of a transaction the payer sent, within SESSION_WAIT_MS; status 0x0 is final. */
  private async payerReceipt(network: Network, hash: Hex): Promise<{ ok: true; receipt: TransactionReceipt } | { ok: false; error: MppError }> {
    try {
      const receipt = await network.client.waitForTransactionReceipt({
        hash,
        timeout: Math.max(this.sessions.waitMs, 1),
        pollingInterval: network.config.pollingIntervalMs,
        retryCount: 0,
      });
      if (receipt.status !== 'success') return fail('session/transaction-reverted', `transaction ${hash} reverted`);
      return { ok: true, receipt };
    } catch (error) {
      const name = (error as Error).name;
      if (name === 'WaitForTransactionReceiptTimeoutError')
        return fail('internal-payment-error', `transaction ${hash} has no receipt yet; send the credential again once it is mined`);
      if (name === 'TransactionReceiptNotFoundError' || name === 'TransactionNotFoundError')
        return fail('verification-failed', `transaction ${hash} is not known to the chain`);
      throw error;
    }
  }

  /** On-chain facts a new channel must have (§2.3 Open): our escrow, payee us, token = currency, funded, not closing. */
  private onChainProblem(chain: OnChainChannel, request: EvmSessionRequest, channelId: Hex): MppError | undefined {
    if (chain.payer === zeroAddress) return { code: 'session/channel-not-found', detail: `channel ${channelId} does not exist on the escrow` };
    if (chain.finalized) return { code: 'session/channel-finalized', detail: `channel ${channelId} is finalized` };
    if (!isAddressEqual(chain.payee, request.recipient as Address) || !this.payeeKey(chain.payee))
      return { code: 'verification-failed', detail: `channel ${channelId} pays ${chain.payee}, not the recipient ${getAddress(request.recipient)}` };
    if (!isAddressEqual(chain.token, request.currency as Address))
      return { code: 'verification-failed', detail: `channel ${channelId} holds ${chain.token}, not ${getAddress(request.currency)}` };
    if (chain.closeRequestedAt !== 0n) return { code: 'session/channel-finalized', detail: `the payer requested to close channel ${channelId}` };
    if (chain.deposit - chain.settled < BigInt(request.amount))
      return {
        code: 'session/insufficient-balance',
        detail: `channel ${channelId} holds ${chain.deposit - chain.settled}, less than the price ${request.amount}`,
      };
    return undefined;
  }

  private async openByHash(
    attempt: ChargeAttempt,
    request: EvmSessionRequest,
    channelId: Hex,
    hash: Hex,
    cumulativeAmount: bigint,
    signature: Hex,
  ): Promise<SessionAnswer> {
    const existing = await this.channels.find(channelId);
    if (existing) return this.reopened(attempt, request, existing, hash, cumulativeAmount, signature);
    const network = this.network(request);
    const escrow = getAddress(request.methodDetails.escrowContract);
    const mined = await this.payerReceipt(network, hash);
    if (!mined.ok) return mined;
    const opened = parseEventLogs({ abi: sessionEscrowAbi, logs: mined.receipt.logs, eventName: 'ChannelOpened' }).some(
      (log) => isAddressEqual(log.address, escrow) && log.args.channelId.toLowerCase() === channelId,
    );
    if (!opened) return fail('verification-failed', `transaction ${hash} does not open channel ${channelId} on the escrow ${escrow}`);
    return this.record(attempt, request, network, escrow, channelId, hash, cumulativeAmount, signature);
  }

  private async openRelayed(
    attempt: ChargeAttempt,
    request: EvmSessionRequest,
    deposit: CheckedDeposit & { action: 'open' },
    cumulativeAmount: bigint,
    signature: Hex,
  ): Promise<SessionAnswer> {
    const { channelId, terms } = deposit;
    const existing = await this.channels.find(channelId);
    if (existing) return this.reopened(attempt, request, existing, undefined, cumulativeAmount, signature);
    const network = this.network(request);
    const escrow = getAddress(request.methodDetails.escrowContract);
    const senderKey = this.payeeKey(terms.payee);
    if (!senderKey) return fail('verification-failed', `${terms.payee} is not a session payee of this facilitator`);
    if (deposit.deposit < BigInt(request.amount))
      return fail('session/insufficient-balance', `the deposit ${deposit.deposit} is below the price ${request.amount}`);
    // the voucher first: nothing is relayed (no gas spent) for a credential whose own voucher is not the payer's
    const signer = terms.authorizedSigner === zeroAddress ? terms.payer : terms.authorizedSigner;
    const verdict = await this.signatureVerdict(
      { channelId, chainId: network.config.chainId, escrow, authorizedSigner: signer, network: network.config.network },
      cumulativeAmount,
      signature,
    );
    if (verdict !== 'valid') return fail(`session/${verdict}`, verdictDetail(verdict));
    const args = [
      terms.payee,
      terms.token,
      deposit.deposit,
      terms.salt,
      terms.authorizedSigner,
      terms.payer,
      deposit.validAfter,
      deposit.validBefore,
      deposit.nonce,
      deposit.signature,
    ] as const;
    const outcome = await this.operations.run({
      key: `open:${channelId}`,
      kind: 'open',
      channelId,
      network,
      escrow,
      functionName: 'openWithAuthorization',
      args,
      data: encodeFunctionData({ abi: sessionEscrowAbi, functionName: 'openWithAuthorization', args }),
      senderKey,
      waitMs: this.sessions.waitMs,
      judge: (receipt) => judgeEvent(receipt, escrow, channelId, 'ChannelOpened'),
    });
    if (!outcome.ok) return outcomeProblem(outcome);
    return this.record(attempt, request, network, escrow, channelId, outcome.txHash, cumulativeAmount, signature);
  }

  /** A channel opened on chain (by the payer or by us): checked against the chain and the request, then recorded with its first voucher. */
  private async record(
    attempt: ChargeAttempt,
    request: EvmSessionRequest,
    network: Network,
    escrow: Address,
    channelId: Hex,
    openTxHash: Hex,
    cumulativeAmount: bigint,
    signature: Hex,
  ): Promise<SessionAnswer> {
    const chain = await this.readChannel(network, escrow, channelId);
    const problem = this.onChainProblem(chain, request, channelId);
    if (problem) return { ok: false, error: problem };
    const signer = chain.authorizedSigner === zeroAddress ? chain.payer : chain.authorizedSigner;
    const verdict = await this.signatureVerdict(
      { channelId, chainId: network.config.chainId, escrow, authorizedSigner: signer, network: network.config.network },
      cumulativeAmount,
      signature,
    );
    if (verdict !== 'valid') return fail(`session/${verdict}`, verdictDetail(verdict));
    const { channel } = await this.channels.open({
      channelId,
      scope: attempt.merchantId ?? '',
      merchantId: attempt.merchantId,
      network: network.config.network,
      chainId: network.config.chainId,
      escrow,
      token: chain.token,
      payer: chain.payer,
      payee: chain.payee,
      authorizedSigner: signer,
      deposit: chain.deposit,
      settledOnChain: chain.settled,
      minVoucherDelta: BigInt(request.methodDetails.minVoucherDelta ?? '0'),
      challengeId: attempt.challenge.id,
      openTxHash,
    });
    if (channel.scope !== (attempt.merchantId ?? '')) return fail('session/channel-not-found', `channel ${channelId} is not open with this merchant`);
    return this.voucherOn(attempt, channel, cumulativeAmount, signature, verdict);
  }

  /** An open credential for a channel we already have (sent again, or opened by another challenge): its voucher, as any voucher. */
  private async reopened(
    attempt: ChargeAttempt,
    request: EvmSessionRequest,
    existing: ChannelRow,
    hash: Hex | undefined,
    cumulativeAmount: bigint,
    signature: Hex,
  ): Promise<SessionAnswer> {
    if (hash !== undefined && hash.toLowerCase() !== existing.openTxHash)
      return fail('verification-failed', `channel ${existing.channelId} was opened by another transaction`);
    return this.voucher(attempt, request, existing.channelId, cumulativeAmount, signature);
  }

  private async topUpByHash(attempt: ChargeAttempt, request: EvmSessionRequest, channelId: Hex, hash: Hex, additionalDeposit: bigint): Promise<SessionAnswer> {
    const found = await this.channelOf(attempt, channelId, request);
    if (!found.ok) return found;
    if (found.row.state === 'closed') return fail('session/channel-finalized', `channel ${channelId} is finalized`);
    const network = this.network(request);
    const escrow = getAddress(request.methodDetails.escrowContract);
    const mined = await this.payerReceipt(network, hash);
    if (!mined.ok) return mined;
    // the deposit must rise by exactly additionalDeposit
    const toppedUp = parseEventLogs({ abi: sessionEscrowAbi, logs: mined.receipt.logs, eventName: 'TopUp' }).some(
      (log) => isAddressEqual(log.address, escrow) && log.args.channelId.toLowerCase() === channelId && log.args.additionalDeposit === additionalDeposit,
    );
    if (!toppedUp) return fail('verification-failed', `transaction ${hash} does not top up channel ${channelId} by ${additionalDeposit}`);
    return this.countTopUp(attempt, network, escrow, channelId, hash, additionalDeposit);
  }

  private async topUpRelayed(attempt: ChargeAttempt, request: EvmSessionRequest, deposit: CheckedDeposit & { action: 'topUp' }): Promise<SessionAnswer> {
    const { channelId } = deposit;
    const found = await this.channelOf(attempt, channelId, request);
    if (!found.ok) return found;
    if (found.row.state === 'closed') return fail('session/channel-finalized', `channel ${channelId} is finalized`);
    if (!isAddressEqual(deposit.from, found.row.payer as Address)) return fail('verification-failed', `the top-up is signed by ${deposit.from}, not the payer`);
    const network = this.network(request);
    const escrow = getAddress(request.methodDetails.escrowContract);
    const args = [
      channelId,
      deposit.additionalDeposit,
      deposit.from,
      deposit.topUpSalt,
      deposit.validAfter,
      deposit.validBefore,
      deposit.nonce,
      deposit.signature,
    ] as const;
    const outcome = await this.operations.run({
      key: `topUp:${channelId}:${deposit.nonce}`,
      kind: 'topUp',
      channelId,
      network,
      escrow,
      functionName: 'topUpWithAuthorization',
      args,
      data: encodeFunctionData({ abi: sessionEscrowAbi, functionName: 'topUpWithAuthorization', args }),
      senderKey: this.payeeKey(found.row.payee)!,
      waitMs: this.sessions.waitMs,
      judge: (receipt) => judgeEvent(receipt, escrow, channelId, 'TopUp'),
    });
    if (!outcome.ok) return outcomeProblem(outcome);
    return this.countTopUp(attempt, network, escrow, channelId, outcome.txHash, deposit.additionalDeposit);
  }

  private async countTopUp(attempt: ChargeAttempt, network: Network, escrow: Address, channelId: Hex, hash: Hex, amount: bigint): Promise<SessionAnswer> {
    const chain = await this.readChannel(network, escrow, channelId);
    if (chain.finalized) return fail('session/channel-finalized', `channel ${channelId} is finalized`);
    const { channel } = await this.channels.topUp(channelId, hash, amount, chain.deposit);
    return this.answer(attempt, channel);
  }

  private async voucher(attempt: ChargeAttempt, request: EvmSessionRequest, channelId: Hex, cumulativeAmount: bigint, signature: Hex): Promise<SessionAnswer> {
    const found = await this.channelOf(attempt, channelId, request);
    if (!found.ok) return found;
    // 1. no close requested (nor a close under way, nor finalized)
    const stopped = stoppedProblem(found.row);
    if (stopped) return stopped;
    // 3–5. the signature (the deposit of step 2 ran before this was called)
    const verdict = await this.signatureVerdict(found.row, cumulativeAmount, signature);
    return this.voucherOn(attempt, found.row, cumulativeAmount, signature, verdict);
  }

  /** Steps 6–10 on a channel whose signature verdict is known. */
  private async voucherOn(
    attempt: ChargeAttempt,
    row: ChannelRow,
    cumulativeAmount: bigint,
    signature: Hex,
    verdict: SignatureVerdict,
  ): Promise<SessionAnswer> {
    if (verdict !== 'valid') return fail(`session/${verdict}`, verdictDetail(verdict));
    for (let channel = row; ;) {
      const stopped = stoppedProblem(channel);
      if (stopped) return stopped;
      // 6. only now: at or below the highest is an idempotent success
      if (cumulativeAmount <= channel.acceptedCumulative) return this.answer(attempt, channel);
      // 7. the step
      const delta = cumulativeAmount - channel.acceptedCumulative;
      if (delta < channel.minVoucherDelta) return fail('session/delta-too-small', `the voucher adds ${delta}, the minimum step is ${channel.minVoucherDelta}`);
      // 8. within the deposit
      if (cumulativeAmount > channel.deposit)
        return fail('session/amount-exceeds-deposit', `the voucher authorizes ${cumulativeAmount}, the deposit is ${channel.deposit}`);
      // 9–10. persist and raise, guarded by the row; refused only if another voucher moved it meanwhile: judged again
      const accepted = await this.channels.acceptVoucher(channel.channelId, cumulativeAmount, signature, attempt.challenge.id);
      if (accepted) return this.answer(attempt, accepted);
      channel = (await this.channels.find(channel.channelId))!;
    }
  }

  private async close(attempt: ChargeAttempt, request: EvmSessionRequest, channelId: Hex, cumulativeAmount: bigint, signature: Hex): Promise<SessionAnswer> {
    const found = await this.channelOf(attempt, channelId, request);
    if (!found.ok) return found;
    // the same close again: its receipt
    if (found.row.state === 'closed') {
      return found.row.closeTxHash
        ? this.answer(attempt, found.row, found.row.closeTxHash as Hex)
        : fail('session/channel-finalized', `channel ${channelId} is finalized`);
    }
    // ours: a close credential must be the payer's own (anyone holding a challenge could otherwise close the channel)
    const verdict = await this.signatureVerdict(found.row, cumulativeAmount, signature);
    if (verdict !== 'valid') return fail(`session/${verdict}`, verdictDetail(verdict));
    // no charge after this point: the close settles what has been spent
    const closing = await this.channels.beginClose(channelId, attempt.challenge.id);
    if (!closing) return fail('session/channel-finalized', `channel ${channelId} is finalized`);
    const decision = decideClose(bookOf(closing), { cumulativeAmount, signature, verdict, at: new Date(this.clock.nowMs()) });
    if (decision.kind !== 'close') return fail('session/channel-finalized', decision.detail);
    const network = this.network(request);
    const escrow = getAddress(closing.escrow);
    const args = [channelId, decision.cumulativeAmount, (decision.signature ?? '0x') as Hex] as const;
    const outcome = await this.operations.run({
      key: `close:${channelId}:${decision.cumulativeAmount}`,
      kind: 'close',
      channelId,
      network,
      escrow,
      functionName: 'close',
      args,
      data: encodeFunctionData({ abi: sessionEscrowAbi, functionName: 'close', args }),
      senderKey: this.payeeKey(closing.payee)!,
      waitMs: this.sessions.waitMs,
      judge: (receipt) => judgeEvent(receipt, escrow, channelId, 'ChannelClosed'),
    });
    if (!outcome.ok) {
      if (!('pending' in outcome)) await this.channels.reopen(channelId);
      return outcomeProblem(outcome);
    }
    const closed = await this.channels.closed(channelId, {
      cumulativeAmount: decision.cumulativeAmount,
      signature: decision.signature,
      settledToPayee: BigInt(outcome.result.settledToPayee!),
      refundedToPayer: BigInt(outcome.result.refundedToPayer!),
      txHash: outcome.txHash,
    });
    return this.answer(attempt, closed, outcome.txHash);
  }

  private answer(attempt: ChargeAttempt, channel: ChannelRow, txHash?: Hex): SessionAnswer {
    return {
      ok: true,
      payer: getAddress(channel.payer),
      receipt: evmSessionReceipt({
        challengeId: attempt.challenge.id,
        channelId: channel.channelId,
        acceptedCumulative: channel.acceptedCumulative,
        spent: channel.spent,
        chainId: channel.chainId,
        timestamp: new Date(this.clock.nowMs()),
        ...(txHash && { txHash: txHash.toLowerCase() as Hex }),
      }),
    };
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

function stoppedProblem(row: ChannelRow): { ok: false; error: MppError } | undefined {
  if (row.state === 'closed') return fail('session/channel-finalized', `channel ${row.channelId} is finalized`);
  if (row.closeRequestedAt !== null) return fail('session/channel-finalized', `the payer requested to close channel ${row.channelId}`);
  if (row.state === 'closing') return fail('session/channel-finalized', `channel ${row.channelId} is being closed`);
  return undefined;
}

function verdictDetail(verdict: Exclude<SignatureVerdict, 'valid'>): string {
  return verdict === 'signer-mismatch'
    ? "the voucher is not signed by the channel's signer"
    : 'the voucher signature is invalid (not a recoverable 65-byte low-s EIP-712 signature)';
}

function outcomeProblem(outcome: Exclude<OperationOutcome, { ok: true }>): { ok: false; error: MppError } {
  if ('pending' in outcome) return fail('internal-payment-error', outcome.detail);
  return fail(outcome.code, outcome.detail);
}

/** A mined transaction's effect on the channel, from the escrow's event (never from an error string). */
function judgeEvent(
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
