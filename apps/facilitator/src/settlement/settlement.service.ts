import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import type { ContractCall } from '@mp/chain';
import type { TransferAuthorization } from '@mp/money';
import { isUnavailableError, ProblemError } from '@mp/platform';
import { X402Reason, type SettleResponse } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { ChainUnavailableError, TRANSFER_AUTHORIZATION_RAIL, type TransferAuthorizationRail } from '../eip3009/transfer-authorization.rail';
import {
  ChainPayments,
  IdempotencyConflictError,
  type NewPayment,
  type PaymentOrigin,
  type PaymentRecord,
  type SettlementRecord,
} from './chain-payments.repository';
import { LocalSettlement } from './local-settlement';
import { recordedReason } from './recorded-reason';
import { settleAnswer, settleFailure } from './settle-answer';
import { SettlementEvents } from './settlement.events';
import { SettlementQueue } from './settlement.queue';

/** How a payment was presented, beside its authorization: what makes a presentation the same one, and what answers echo. */
export interface Presentation {
  /** sha256 of the payload as presented (the claim's payload hash): equal presentations, equal fingerprint. */
  fingerprint: string;
  /** The client's idempotency key for the payment (x402's payment-identifier extension), if it sent one. */
  paymentIdentifier?: string;
  /** The network as the request named it (an x402 v1 name, or CAIP-2), echoed in answers. */
  network: string;
}

/** The uniqueness key of a settlement: one authorization nonce of one payer on one token. */
export type SettlementKey = { network: string; asset: string; payer: string; nonce: string };

type Prepared = { ok: true; call: ContractCall } | { ok: false; failure: SettleResponse };
/** A settlement call, or why the payment cannot be settled (a recorded reason and a readable message). */
export type PreparedCall = { ok: true; call: ContractCall } | { ok: false; reason: string; message: string };

/**
 * A payment as the engine settles it, whatever carries it on chain (an EIP-3009 authorization, a Permit2 permit): its
 * key, what its record holds, and how to verify it again and build its call. `prepare` runs before the claim and
 * again whenever an earlier attempt failed before reaching the chain.
 */
export interface ChainSettlement {
  key: SettlementKey;
  /** The payer as answers name it. */
  payer: string;
  payTo: string;
  /** What moves on chain. */
  amount: bigint;
  validAfter: bigint;
  validBefore: bigint;
  /** The scheme column: the protocol's own name for how it is settled (x402 `exact`/`upto`, MPP `evm`). */
  scheme: string;
  prepare(): Promise<PreparedCall>;
  /** Why settling at `gas` would be uneconomic, or undefined (the token's gas cap). */
  gasCapExceeded?(gas: bigint): Promise<string | undefined>;
}

/** One settle request as the engine follows it. */
interface Settling {
  settlement: ChainSettlement;
  presented: Presentation;
  key: SettlementKey;
}

/** How often a waiting request re-reads a payment whose worker runs in another process. */
const POLL_MS = 200;

/**
 * Exactly-once settlement, the API side. A payment is verified, then claimed in PostgreSQL (unique per network,
 * asset, payer and authorization nonce) and handed to the settlement queue; the request waits for the outcome up
 * to SETTLE_BUDGET_MS and otherwise answers settlement_pending. Duplicates, concurrent or later, follow the same
 * record and report the same outcome.
 */
@Injectable()
export class SettlementService {
  private readonly logger = new Logger(SettlementService.name);
  /** Concurrent identical requests in this process share one run. */
  private readonly inFlight = new Map<string, Promise<SettleResponse>>();
  /** /settle requests of this process between their start and their claim's hand-over: the ones a batch could still take. */
  private claiming = 0;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    @Inject(TRANSFER_AUTHORIZATION_RAIL) private readonly rail: TransferAuthorizationRail,
    private readonly payments: ChainPayments,
    private readonly queue: SettlementQueue,
    private readonly events: SettlementEvents,
    private readonly local: LocalSettlement,
  ) {}

  /**
   * `merchantId`: the merchant whose API key asks (null in open mode without a key); it owns the claim.
   * `origin`: the protocol that carried the authorization (x402, or an MPP credential), recorded with the payment.
   */
  async settle(
    authorization: TransferAuthorization,
    presented: Presentation,
    merchantId: string | null,
    origin: PaymentOrigin,
    /** what prepareCall(authorization) started earlier for this very settle, used instead of preparing it again */
    begun?: Promise<PreparedCall>,
  ): Promise<SettleResponse> {
    // The scheme column names the protocol's own name for this rail: x402's `exact`, MPP's `evm` method.
    const settlement = this.eip3009Settlement(authorization, origin.protocol === 'mpp' ? 'evm' : 'exact', begun);
    return this.settleOnChain(settlement, presented, merchantId, origin);
  }

  /**
   * The settlement call a settle of this authorization begins with (read-only: the transfer is simulated), for a
   * caller that has just verified the authorization (the rail's verify, without simulation) and has a write of its own
   * to make first (MPP's claim of its challenge): started before that write, it runs alongside it, and is handed to
   * settle, which then does not verify again. Never left unhandled: its failure is settle's to report.
   */
  prepareCall(authorization: TransferAuthorization): Promise<PreparedCall> {
    const preparing = this.settlementCall(authorization);
    preparing.catch(() => undefined);
    return preparing;
  }

  /**
   * settle for any payment the engine can carry on chain (ChainSettlement): claimed once per key, sent by the worker,
   * followed to its outcome; duplicates get the original outcome.
   */
  async settleOnChain(settlement: ChainSettlement, presented: Presentation, merchantId: string | null, origin: PaymentOrigin): Promise<SettleResponse> {
    const deadline = Date.now() + this.config.settleBudgetMs;
    const { key } = settlement;
    const payment: Settling = { settlement, presented, key };
    await this.assertIdentifierFree(presented, merchantId);
    const flightKey = `${key.network}|${key.asset}|${key.payer}|${key.nonce}|${presented.fingerprint}|${merchantId}`;
    const running = this.inFlight.get(flightKey);
    if (running) return running;
    const run = this.settleOnce(payment, deadline, merchantId, origin).catch((error: unknown) => this.unexpected(payment, error));
    this.inFlight.set(flightKey, run);
    try {
      return await run;
    } finally {
      this.inFlight.delete(flightKey);
    }
  }

  /**
   * For a flow that claims the payment itself, together with rows of its own (a subscription and its period 0
   * charge): the checks and the settlement call /settle would make before its claim. A failure is the answer /settle
   * would give; nothing is written.
   */
  async prepareClaim(
    authorization: TransferAuthorization,
    presented: Presentation,
  ): Promise<{ ok: true; call: ContractCall } | { ok: false; failure: SettleResponse }> {
    const payment: Settling = { settlement: this.eip3009Settlement(authorization, 'evm'), presented, key: keyOf(authorization) };
    try {
      const prepared = await this.prepare(payment);
      if (!prepared.ok) return prepared;
      const uneconomic = await this.rail.gasCapExceeded(authorization, prepared.call.gas);
      if (uneconomic) return { ok: false, failure: this.failure(payment, X402Reason.settlementGasExceedsCap, uneconomic) };
      return prepared;
    } catch (error) {
      return { ok: false, failure: this.unexpected(payment, error) };
    }
  }

  /**
   * A payment such a flow claimed (or found claimed): handed to the settlement queue and followed to its outcome, as
   * /settle follows its own, within SETTLE_BUDGET_MS.
   */
  async settleClaimed(authorization: TransferAuthorization, presented: Presentation, paymentId: string, merchantId: string | null): Promise<SettleResponse> {
    const payment: Settling = { settlement: this.eip3009Settlement(authorization, 'evm'), presented, key: keyOf(authorization) };
    const record = await this.payments.findById(paymentId);
    if (!record) throw new Error(`payment ${paymentId} is missing`);
    if (record.state === 'verified') await this.queue.submit(paymentId);
    return this.follow(payment, record, Date.now() + this.config.settleBudgetMs, merchantId).catch((error: unknown) => this.unexpected(payment, error));
  }

  /** /verify refuses a payment identifier the merchant already bound to another payload, as /settle does. */
  async assertIdentifierFree(presented: Pick<Presentation, 'fingerprint' | 'paymentIdentifier'>, merchantId: string | null): Promise<void> {
    if (!presented.paymentIdentifier) return;
    const bound = await this.payments.identifierFingerprint(presented.paymentIdentifier, merchantId);
    if (bound !== undefined && bound !== presented.fingerprint) throw conflict(presented.paymentIdentifier);
  }

  private async settleOnce(payment: Settling, deadline: number, merchantId: string | null, origin: PaymentOrigin): Promise<SettleResponse> {
    this.claiming += 1;
    let claiming = true;
    const handedOver = () => {
      if (claiming) this.claiming -= 1;
      claiming = false;
    };
    try {
      return await this.claimAndFollow(payment, deadline, merchantId, origin, handedOver);
    } finally {
      handedOver();
    }
  }

  private async claimAndFollow(
    payment: Settling,
    deadline: number,
    merchantId: string | null,
    origin: PaymentOrigin,
    handedOver: () => void,
  ): Promise<SettleResponse> {
    // Verify and simulate the exact transaction before anything is written: bad payments leave no trace. A payment
    // already known is found by the claim (unique per authorization), or, when its simulation fails because it was
    // settled, by the read below: the first presentation pays no read before its claim.
    const prepared = await this.prepare(payment);
    if (!prepared.ok) {
      // Claimed before (its transfer may be what makes the simulation fail), perhaps by a concurrent request or replica.
      const known = await this.payments.findByKey(payment.key);
      handedOver();
      if (known) return this.follow(payment, known, deadline, merchantId);
      return prepared.failure;
    }

    const uneconomic = await payment.settlement.gasCapExceeded?.(prepared.call.gas);
    if (uneconomic) return this.failure(payment, X402Reason.settlementGasExceedsCap, uneconomic);

    const claim: NewPayment & { id: string } = {
      id: randomUUID(),
      ...payment.key,
      payTo: payment.settlement.payTo.toLowerCase(),
      amount: payment.settlement.amount,
      validAfter: payment.settlement.validAfter,
      validBefore: payment.settlement.validBefore,
      scheme: payment.settlement.scheme,
      origin,
      payloadHash: payment.presented.fingerprint,
      paymentIdentifier: payment.presented.paymentIdentifier,
      settleTo: prepared.call.to,
      settleData: prepared.call.data,
      settleGas: prepared.call.gas,
      merchantId,
    };
    // Alone: no other request of this process is on its way to a claim, so no batch window is worth waiting for.
    const alone = this.claiming === 1;
    // A worker in this process claims it with its signed transaction (alone, or with its batch window) if it can; else here.
    let record = claimedRecord(claim);
    let outcome = await this.local.claimAndSend(claim, record, alone, handedOver);
    if (outcome === 'unsent') {
      let id: string | undefined;
      try {
        id = await this.payments.claim(claim);
      } catch (error) {
        if (error instanceof IdempotencyConflictError) throw conflict(error.key);
        throw error;
      }
      outcome = id ? 'claimed' : 'lost';
      record = { ...record, id: id ?? record.id };
      handedOver();
      // The record the claim wrote: a worker in this process sends from it at once; otherwise the queue carries it.
      if (id && !this.local.run(record, alone)) await this.queue.submit(id);
    }
    handedOver();
    if (outcome === 'lost') {
      const winner = await this.payments.findByKey(payment.key);
      if (!winner) throw new Error('a claimed payment is missing');
      return this.follow(payment, winner, deadline, merchantId);
    }
    return this.follow(payment, record, deadline, merchantId);
  }

  /**
   * Waits for the payment's outcome, following the database (woken at once by a worker in this process), and
   * reports it; every caller of one payment reports the same outcome. A payment whose earlier attempt failed
   * before anything reached the chain is retried.
   */
  private async follow(payment: Settling, record: PaymentRecord, deadline: number, merchantId: string | null): Promise<SettleResponse> {
    const asker = { payer: payment.settlement.payer, network: payment.presented.network, fingerprint: payment.presented.fingerprint, merchantId };
    const startedAt = Date.now();
    for (;;) {
      const answer = settleAnswer(record, asker, { startedAt, now: Date.now(), deadline });
      if (answer.kind === 'answer') return answer.response;
      if (answer.kind === 'retry') {
        const prepared = await this.prepare(payment);
        if (!prepared.ok) return prepared.failure;
        if (await this.payments.reclaim(record.id, record.updatedAt, payment.presented.fingerprint, prepared.call)) await this.queue.submit(record.id);
      } else {
        // A change by the worker in this process carries the record it wrote: no read back, unless it is not the claim
        // this request follows (its payload or merchant differ: read the database's).
        const changed = await this.events.next(record.id, Math.min(POLL_MS, deadline - Date.now()));
        if (changed && changed.payloadHash === record.payloadHash && changed.merchantId === record.merchantId) {
          record = changed;
          continue;
        }
      }
      const next = await this.payments.findById(record.id);
      if (!next) throw new Error(`payment ${record.id} disappeared`);
      record = next;
    }
  }

  /** Verifies the payment and builds its settlement call, estimating its gas (which simulates it). */
  private async prepare(payment: Settling): Promise<Prepared> {
    const prepared = await payment.settlement.prepare();
    return prepared.ok ? prepared : { ok: false, failure: this.failure(payment, prepared.reason, prepared.message) };
  }

  /** An EIP-3009 authorization as the engine settles it; its first prepare is `begun`, when given (prepareCall). */
  private eip3009Settlement(authorization: TransferAuthorization, scheme: string, begun?: Promise<PreparedCall>): ChainSettlement {
    let head = begun;
    return {
      key: keyOf(authorization),
      payer: authorization.from,
      payTo: authorization.to,
      amount: authorization.value,
      validAfter: authorization.validAfter,
      validBefore: authorization.validBefore,
      scheme,
      gasCapExceeded: (gas) => this.rail.gasCapExceeded(authorization, gas),
      prepare: async () => {
        if (head) {
          const started = head;
          head = undefined;
          return started;
        }
        const prepared = await this.rail.verifiedSettlementCall(authorization);
        return prepared.ok ? prepared : { ok: false, reason: recordedReason(prepared.fault), message: prepared.message };
      },
    };
  }

  private async settlementCall(authorization: TransferAuthorization): Promise<PreparedCall> {
    const prepared = await this.rail.settlementCall(authorization);
    return prepared.ok ? prepared : { ok: false, reason: recordedReason(prepared.fault), message: prepared.message };
  }

  private unexpected(payment: Settling, error: unknown): SettleResponse {
    if (error instanceof ProblemError) throw error;
    // The chain is unreachable: a protocol answer (nothing was claimed). The database or queue: a 503 to retry.
    if (error instanceof ChainUnavailableError) return this.failure(payment, X402Reason.unexpectedSettleError, error.message);
    if (isUnavailableError(error)) throw error;
    this.logger.error(`settlement of ${payment.key.payer}/${payment.key.nonce} failed`, error instanceof Error ? error.stack : String(error));
    return this.failure(
      payment,
      X402Reason.unexpectedSettleError,
      'an unexpected error stopped the settlement; it has been logged, and settling again is safe',
    );
  }

  private failure(payment: Settling, reason: string, message?: string): SettleResponse {
    return settleFailure({ payer: payment.settlement.payer, network: payment.presented.network }, reason, message);
  }
}

/** A payment's record as its claim writes it (paymentColumns), before anything is sent. */
function claimedRecord(claim: NewPayment & { id: string }): SettlementRecord {
  return {
    id: claim.id,
    state: 'verified',
    payloadHash: claim.payloadHash,
    txHash: null,
    signer: null,
    errorReason: null,
    errorMessage: null,
    updatedAt: new Date(),
    merchantId: claim.merchantId ?? null,
    network: claim.network,
    asset: claim.asset,
    payer: claim.payer,
    authorizationNonce: claim.nonce as SettlementRecord['authorizationNonce'],
    payTo: claim.payTo,
    amount: claim.amount,
    validBefore: claim.validBefore,
    settleTo: claim.settleTo.toLowerCase() as SettlementRecord['settleTo'],
    settleData: claim.settleData as SettlementRecord['settleData'],
    settleGas: claim.settleGas,
    attempts: 0,
    scheme: claim.scheme,
  };
}

function keyOf(authorization: TransferAuthorization): SettlementKey {
  return {
    network: authorization.network,
    asset: authorization.asset.toLowerCase(),
    payer: authorization.from.toLowerCase(),
    nonce: authorization.nonce.toLowerCase(),
  };
}

function conflict(key: string): ProblemError {
  return new ProblemError('payment_identifier_conflict', `payment identifier "${key}" was already used with a different payment payload`, {
    paymentIdentifier: key,
  });
}
