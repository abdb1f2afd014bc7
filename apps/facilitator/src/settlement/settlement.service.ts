import { Inject, Injectable, Logger } from '@nestjs/common';
import { settlementGasLimit, type ContractCall } from '@mp/chain';
import { isUnavailableError, ProblemError } from '@mp/platform';
import { X402Reason, type PaymentRequest, type SettleResponse } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { ExactEvmScheme, VerificationUnavailableError, type ExactEvmPayment } from '../x402/exact-evm/exact-evm.scheme';
import { ChainPayments, IdempotencyConflictError, type PaymentOrigin, type PaymentRecord } from './chain-payments.repository';
import { settleAnswer, settleFailure } from './settle-answer';
import { SettlementEvents } from './settlement.events';
import { SettlementQueue } from './settlement.queue';

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

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly scheme: ExactEvmScheme,
    private readonly payments: ChainPayments,
    private readonly queue: SettlementQueue,
    private readonly events: SettlementEvents,
  ) {}

  /**
   * `merchantId`: the merchant whose API key asks (null in open mode without a key); it owns the claim.
   * `origin`: an MPP credential settles through here too, recorded as such.
   */
  async settle(request: PaymentRequest, merchantId: string | null = null, origin?: PaymentOrigin): Promise<SettleResponse> {
    const deadline = Date.now() + this.config.settleBudgetMs;
    const resolution = this.scheme.resolve(request);
    if (!resolution.ok) {
      const { invalidReason, invalidMessage, payer } = resolution.response;
      return { success: false, errorReason: invalidReason, errorMessage: invalidMessage, payer, transaction: '', network: request.network };
    }
    const payment = resolution.payment;
    await this.assertIdentifierFree(request, merchantId);
    const flightKey = `${payment.key.network}|${payment.key.asset}|${payment.key.payer}|${payment.key.nonce}|${request.fingerprint}|${merchantId}`;
    const running = this.inFlight.get(flightKey);
    if (running) return running;
    const run = this.settleOnce(payment, deadline, merchantId, origin ?? { protocol: 'x402', x402Version: request.x402Version }).catch((error: unknown) => this.unexpected(payment, error));
    this.inFlight.set(flightKey, run);
    try {
      return await run;
    } finally {
      this.inFlight.delete(flightKey);
    }
  }

  /** /verify refuses a payment identifier the merchant already bound to another payload, as /settle does. */
  async assertIdentifierFree(request: PaymentRequest, merchantId: string | null): Promise<void> {
    if (!request.paymentIdentifier) return;
    const bound = await this.payments.identifierFingerprint(request.paymentIdentifier, merchantId);
    if (bound !== undefined && bound !== request.fingerprint) throw conflict(request.paymentIdentifier);
  }

  private async settleOnce(payment: ExactEvmPayment, deadline: number, merchantId: string | null, origin: PaymentOrigin): Promise<SettleResponse> {
    const existing = await this.payments.findByKey(payment.key);
    if (existing) return this.follow(payment, existing, deadline, merchantId);

    // Verify and simulate the exact transaction before anything is written: bad payments leave no trace.
    const prepared = await this.prepare(payment);
    if (!prepared.ok) {
      // A concurrent request (perhaps on another replica) may have claimed and settled it meanwhile: report that.
      const settledMeanwhile = await this.payments.findByKey(payment.key);
      if (settledMeanwhile) return this.follow(payment, settledMeanwhile, deadline, merchantId);
      return prepared.failure;
    }

    const uneconomic = await this.gasOverCap(payment, prepared.call.gas);
    if (uneconomic) return this.failure(payment, X402Reason.settlementGasExceedsCap, uneconomic);

    let id: string | undefined;
    try {
      id = await this.payments.claim({
        ...payment.key,
        payTo: payment.authorization.to.toLowerCase(),
        amount: payment.authorization.value,
        validAfter: payment.authorization.validAfter,
        validBefore: payment.authorization.validBefore,
        scheme: origin.protocol === 'mpp' ? 'evm' : this.scheme.scheme,
        origin,
        payloadHash: payment.request.fingerprint,
        paymentIdentifier: payment.request.paymentIdentifier,
        settleTo: prepared.call.to,
        settleData: prepared.call.data,
        settleGas: prepared.call.gas,
        merchantId,
      });
    } catch (error) {
      if (error instanceof IdempotencyConflictError) throw conflict(error.key);
      throw error;
    }
    if (!id) {
      const winner = await this.payments.findByKey(payment.key);
      if (!winner) throw new Error('a claimed payment is missing');
      return this.follow(payment, winner, deadline, merchantId);
    }
    await this.queue.submit(id);
    const claimed: PaymentRecord = {
      id, state: 'verified', payloadHash: payment.request.fingerprint, txHash: null, signer: null, errorReason: null, errorMessage: null, updatedAt: new Date(), merchantId,
    };
    return this.follow(payment, claimed, deadline, merchantId);
  }

  /**
   * Waits for the payment's outcome, following the database (woken at once by a worker in this process), and
   * reports it; every caller of one payment reports the same outcome. A payment whose earlier attempt failed
   * before anything reached the chain is retried.
   */
  private async follow(payment: ExactEvmPayment, record: PaymentRecord, deadline: number, merchantId: string | null): Promise<SettleResponse> {
    const asker = { payer: payment.payer, network: payment.request.network, fingerprint: payment.request.fingerprint, merchantId };
    const startedAt = Date.now();
    for (;;) {
      const answer = settleAnswer(record, asker, { startedAt, now: Date.now(), deadline });
      if (answer.kind === 'answer') return answer.response;
      if (answer.kind === 'retry') {
        const prepared = await this.prepare(payment);
        if (!prepared.ok) return prepared.failure;
        if (await this.payments.reclaim(record.id, record.updatedAt, payment.request.fingerprint, prepared.call)) await this.queue.submit(record.id);
      } else {
        await this.events.next(record.id, Math.min(POLL_MS, deadline - Date.now()));
      }
      const next = await this.payments.findById(record.id);
      if (!next) throw new Error(`payment ${record.id} disappeared`);
      record = next;
    }
  }

  /** Verifies the payment and builds its settlement call, estimating its gas (which simulates it). */
  private async prepare(payment: ExactEvmPayment): Promise<{ ok: true; call: ContractCall } | { ok: false; failure: SettleResponse }> {
    const verified = await this.scheme.verify(payment, { simulate: false });
    if (!verified.isValid) return { ok: false, failure: this.failure(payment, verified.invalidReason ?? X402Reason.invalidPayload, verified.invalidMessage) };
    const estimator = payment.network.signers.signers[0]?.address;
    if (!estimator) return { ok: false, failure: this.failure(payment, X402Reason.unexpectedSettleError, `no signer is configured for ${payment.key.network}`) };
    const prepared = await this.scheme.settlementCall(payment, estimator);
    if (!prepared.ok) return { ok: false, failure: this.failure(payment, prepared.response.invalidReason ?? X402Reason.exactEvmSimulationFailed, prepared.response.invalidMessage) };
    return prepared;
  }

  /**
   * The asset's gas cap: the settlement's gas limit (the estimate with its margin: the most it can burn) at today's
   * fee, priced in the asset, must stay within its share of the payment.
   */
  private async gasOverCap(payment: ExactEvmPayment, estimate: bigint): Promise<string | undefined> {
    const cap = payment.asset.gasCap;
    const signer = payment.network.signers.signers[0];
    if (!cap || !signer) return undefined;
    const { maxFeePerGas } = await signer.currentFees();
    const costInAsset = (settlementGasLimit(estimate) * maxFeePerGas * cap.nativePrice) / 10n ** 18n;
    const allowed = (payment.authorization.value * BigInt(cap.maxShareBps)) / 10_000n;
    if (costInAsset <= allowed) return undefined;
    return `settling would cost about ${costInAsset} atomic units of ${payment.asset.symbol} in gas, more than ${cap.maxShareBps / 100}% of the payment (${allowed})`;
  }

  private unexpected(payment: ExactEvmPayment, error: unknown): SettleResponse {
    if (error instanceof ProblemError) throw error;
    // The chain is unreachable: a protocol answer (nothing was claimed). The database or queue: a 503 to retry.
    if (error instanceof VerificationUnavailableError) return this.failure(payment, X402Reason.unexpectedSettleError, error.message);
    if (isUnavailableError(error)) throw error;
    this.logger.error(`settlement of ${payment.key.payer}/${payment.key.nonce} failed`, error instanceof Error ? error.stack : String(error));
    return this.failure(payment, X402Reason.unexpectedSettleError, 'an unexpected error stopped the settlement; it has been logged, and settling again is safe');
  }

  private failure(payment: ExactEvmPayment, reason: string, message?: string): SettleResponse {
    return settleFailure({ payer: payment.payer, network: payment.request.network }, reason, message);
  }
}

function conflict(key: string): ProblemError {
  return new ProblemError('payment_identifier_conflict', `payment identifier "${key}" was already used with a different payment payload`, { paymentIdentifier: key });
}
