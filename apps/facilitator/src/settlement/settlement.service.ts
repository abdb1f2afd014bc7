import { Inject, Injectable, Logger } from '@nestjs/common';
import type { Hex, TransactionReceipt } from 'viem';
import { isDeliveryUncertain, ReceiptTimeoutError, revertReason, waitForReceipt, type ContractCall, type TransactionSigner } from '@mp/chain';
import { ProblemError } from '@mp/platform';
import { X402Reason, type PaymentRequest, type SettleResponse } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { ExactEvmScheme, VerificationUnavailableError, type ExactEvmPayment } from '../x402/exact-evm/exact-evm.scheme';
import { IdempotencyConflictError, PaymentRepository, type PaymentRecord } from './payment.repository';

const OWNER_POLL_MS = 20;
/** A claimed payment with no transaction after this long lost its owner (crash); another request may take it over. */
const ABANDONED_CLAIM_MS = 120_000;
const NONCE_COLLISION = /nonce too low|nonce too high|replacement transaction underpriced|already known|nonce has already been used/i;

/**
 * Exactly-once settlement. Every payment is claimed in PostgreSQL (unique per network, asset, payer and
 * authorization nonce) before anything is sent; the transaction hash is recorded before broadcast; duplicates,
 * concurrent or later, get the outcome of the one settlement.
 */
@Injectable()
export class SettlementService {
  private readonly logger = new Logger(SettlementService.name);
  /** Concurrent identical requests in this process share one run. */
  private readonly inFlight = new Map<string, Promise<SettleResponse>>();

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly scheme: ExactEvmScheme,
    private readonly payments: PaymentRepository,
  ) {}

  async settle(request: PaymentRequest): Promise<SettleResponse> {
    const deadline = Date.now() + this.config.settleBudgetMs;
    const resolution = this.scheme.resolve(request);
    if (!resolution.ok) {
      const { invalidReason, invalidMessage, payer } = resolution.response;
      return { success: false, errorReason: invalidReason, errorMessage: invalidMessage, payer, transaction: '', network: request.network };
    }
    const payment = resolution.payment;
    await this.assertIdentifierFree(request);
    const flightKey = `${payment.key.network}|${payment.key.asset}|${payment.key.payer}|${payment.key.nonce}|${request.fingerprint}`;
    const running = this.inFlight.get(flightKey);
    if (running) return running;
    const run = this.settleOnce(payment, deadline).catch((error: unknown) => this.unexpected(payment, error));
    this.inFlight.set(flightKey, run);
    try {
      return await run;
    } finally {
      this.inFlight.delete(flightKey);
    }
  }

  /** /verify refuses a payment identifier already bound to another payload, as /settle does. */
  async assertIdentifierFree(request: PaymentRequest): Promise<void> {
    if (!request.paymentIdentifier) return;
    const bound = await this.payments.identifierFingerprint(request.paymentIdentifier);
    if (bound !== undefined && bound !== request.fingerprint) throw conflict(request.paymentIdentifier);
  }

  private async settleOnce(payment: ExactEvmPayment, deadline: number): Promise<SettleResponse> {
    const existing = await this.payments.findByKey(payment.key);
    if (existing) return this.continueExisting(payment, existing, deadline);

    const verified = await this.scheme.verify(payment, { simulate: false });
    const signer = payment.network.signers.pick();
    const prepared = verified.isValid ? await this.scheme.settlementCall(payment, signer.address) : undefined;
    if (!prepared?.ok) {
      // A concurrent request (perhaps on another replica) may have claimed and settled it meanwhile: report that.
      const settledMeanwhile = await this.payments.findByKey(payment.key);
      if (settledMeanwhile) return this.continueExisting(payment, settledMeanwhile, deadline);
      const response = prepared?.response ?? verified;
      return this.failure(payment, response.invalidReason ?? X402Reason.invalidPayload, response.invalidMessage);
    }

    let id: string | undefined;
    try {
      id = await this.payments.claim({
        ...payment.key,
        payTo: payment.authorization.to.toLowerCase(),
        amount: payment.authorization.value,
        validAfter: payment.authorization.validAfter,
        validBefore: payment.authorization.validBefore,
        scheme: this.scheme.scheme,
        x402Version: payment.request.x402Version,
        payloadHash: payment.request.fingerprint,
        paymentIdentifier: payment.request.paymentIdentifier,
      });
    } catch (error) {
      if (error instanceof IdempotencyConflictError) throw conflict(error.key);
      throw error;
    }
    if (!id) {
      const winner = await this.payments.findByKey(payment.key);
      if (!winner) throw new Error('payment claim lost to a record that does not exist');
      return this.continueExisting(payment, winner, deadline);
    }
    return this.submit(payment, id, signer, prepared.call, deadline);
  }

  /**
   * A payment we already know: report its outcome, finish it, or wait for the request that owns it. While an owner
   * works on it we follow the database, so every concurrent caller reports the owner's outcome.
   */
  private async continueExisting(payment: ExactEvmPayment, record: PaymentRecord, deadline: number): Promise<SettleResponse> {
    const startedAt = Date.now();
    for (;;) {
      if (record.payloadHash !== payment.request.fingerprint && record.state !== 'failed') {
        return this.failure(payment, X402Reason.exactEvmNonceAlreadyUsed,
          `this authorization was already presented with a different payload${record.txHash ? ` and settled by ${record.txHash}` : ''}`);
      }
      switch (record.state) {
        case 'confirmed':
          return this.success(payment, record.txHash as Hex);
        case 'expired':
          return this.failure(payment, X402Reason.exactEvmValidBefore, 'the authorization expired before it could be settled', record.txHash ?? '');
        case 'failed':
          if (record.txHash || record.updatedAt.getTime() >= startedAt) {
            // Mined and failed (final), or failed while we waited on its owner: the owner's outcome is ours.
            return this.failure(payment, record.errorReason ?? X402Reason.exactEvmTransactionFailed, record.errorMessage ?? undefined, record.txHash ?? '');
          }
          // An earlier attempt failed before anything reached the chain: this request may try again.
          if (await this.payments.reclaim(record.id, 'failed', record.updatedAt, payment.request.fingerprint)) return this.retry(payment, record.id, deadline);
          break;
        case 'submitted': {
          const outcome = await this.finishIfMined(payment, record.id, record.txHash as Hex);
          if (outcome) return outcome;
          if (Date.now() >= deadline) {
            return this.failure(payment, X402Reason.settlementPending, 'the transaction is not mined yet; settle again to get its outcome', record.txHash as Hex);
          }
          await sleep(payment.network.config.pollingIntervalMs);
          break;
        }
        case 'received':
        case 'verified':
          if (Date.now() - record.updatedAt.getTime() > ABANDONED_CLAIM_MS && (await this.payments.reclaim(record.id, record.state, record.updatedAt, payment.request.fingerprint))) {
            return this.retry(payment, record.id, deadline);
          }
          if (Date.now() >= deadline) {
            return this.failure(payment, X402Reason.settlementPending, 'another request is settling this payment; retry shortly');
          }
          await sleep(OWNER_POLL_MS);
      }
      record = await this.mustFind(record.id);
    }
  }

  /** Looks for the receipt once; if the transaction is mined, records and returns its outcome. */
  private async finishIfMined(payment: ExactEvmPayment, id: string, hash: Hex): Promise<SettleResponse | undefined> {
    const receipt = await payment.network.client.getTransactionReceipt({ hash }).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'TransactionReceiptNotFoundError') return undefined;
      throw error;
    });
    return receipt ? this.recordReceipt(payment, id, hash, receipt) : undefined;
  }

  private async retry(payment: ExactEvmPayment, id: string, deadline: number): Promise<SettleResponse> {
    const verified = await this.scheme.verify(payment, { simulate: false });
    const signer = payment.network.signers.pick();
    const prepared = verified.isValid ? await this.scheme.settlementCall(payment, signer.address) : undefined;
    if (!verified.isValid || !prepared?.ok) {
      const response = prepared && !prepared.ok ? prepared.response : verified;
      const reason = response.invalidReason ?? X402Reason.invalidPayload;
      await this.payments.markFailedUnsent(id, reason, response.invalidMessage ?? reason);
      return this.failure(payment, reason, response.invalidMessage);
    }
    return this.submit(payment, id, signer, prepared.call, deadline);
  }

  private async submit(payment: ExactEvmPayment, id: string, signer: TransactionSigner, call: ContractCall, deadline: number): Promise<SettleResponse> {
    for (let attempt = 1; ; attempt++) {
      let hash: Hex | undefined;
      try {
        await signer.send(call, async (tx) => {
          if (!(await this.payments.markSubmitted(id, tx))) throw new ClaimLostError();
          hash = tx.hash;
        });
        return await this.awaitReceipt(payment, id, hash!, deadline);
      } catch (error) {
        if (error instanceof ClaimLostError) return this.continueExisting(payment, await this.mustFind(id), deadline);
        // The node may have taken a transaction whose broadcast died on the way: look for its receipt.
        if (hash && isDeliveryUncertain(error)) return this.awaitReceipt(payment, id, hash, deadline);
        const message = revertReason(error) ?? String(error);
        // Our nonce was stale (the signer's next nonce is re-read): send again; the payment never left our hands.
        if (hash && attempt < 3 && NONCE_COLLISION.test(message) && (await this.payments.releaseUnsent(id, hash, message))) continue;
        const reason = hash ? this.scheme.sendFailureReason(error) : X402Reason.unexpectedSettleError;
        await this.payments.markFailedUnsent(id, reason, message);
        if (!hash) this.logger.warn(`settlement of ${payment.key.payer}/${payment.key.nonce} was not sent: ${message}`);
        return this.failure(payment, reason, message);
      }
    }
  }

  private async mustFind(id: string): Promise<PaymentRecord> {
    const record = await this.payments.findById(id);
    if (!record) throw new Error(`payment ${id} disappeared`);
    return record;
  }

  private async awaitReceipt(payment: ExactEvmPayment, id: string, hash: Hex, deadline: number): Promise<SettleResponse> {
    let receipt;
    try {
      receipt = await waitForReceipt(payment.network.client, hash, Math.max(0, deadline - Date.now()), payment.network.config.pollingIntervalMs);
    } catch (error) {
      const message = error instanceof ReceiptTimeoutError ? 'the transaction is not mined yet; settle again to get its outcome' : `receipt lookup failed: ${revertReason(error)}`;
      return this.failure(payment, X402Reason.settlementPending, message, hash);
    }
    return this.recordReceipt(payment, id, hash, receipt);
  }

  /** Judges a mined settlement and records the verdict; whoever records first wins, and everyone reports it. */
  private async recordReceipt(payment: ExactEvmPayment, id: string, hash: Hex, receipt: TransactionReceipt): Promise<SettleResponse> {
    const verdict = this.scheme.judgeReceipt(payment, receipt);
    if (verdict.success) {
      if (!(await this.payments.markConfirmed(id, receipt))) await this.assertState(id, 'confirmed');
      return this.success(payment, hash);
    }
    if (!(await this.payments.markFailedOnChain(id, verdict.reason, verdict.message))) await this.assertState(id, 'failed');
    return this.failure(payment, verdict.reason, verdict.message, hash);
  }

  private async assertState(id: string, expected: string): Promise<void> {
    const record = await this.payments.findById(id);
    if (record?.state !== expected) throw new Error(`payment ${id} is ${record?.state}, expected ${expected}`);
  }

  private unexpected(payment: ExactEvmPayment, error: unknown): SettleResponse {
    if (error instanceof ProblemError) throw error;
    if (error instanceof VerificationUnavailableError) return this.failure(payment, X402Reason.unexpectedSettleError, error.message);
    this.logger.error(`settlement of ${payment.key.payer}/${payment.key.nonce} failed`, error instanceof Error ? error.stack : String(error));
    return this.failure(payment, X402Reason.unexpectedSettleError, 'an unexpected error stopped the settlement; it has been logged, and settling again is safe');
  }

  private success(payment: ExactEvmPayment, transaction: Hex): SettleResponse {
    return { success: true, payer: payment.payer, transaction, network: payment.request.network };
  }

  private failure(payment: ExactEvmPayment, reason: string, message?: string, transaction = ''): SettleResponse {
    return { success: false, errorReason: reason, ...(message ? { errorMessage: message } : {}), payer: payment.payer, transaction, network: payment.request.network };
  }
}

class ClaimLostError extends Error {
  constructor() {
    super('another request took over this payment');
  }
}

function conflict(key: string): ProblemError {
  return new ProblemError('payment_identifier_conflict', `payment identifier "${key}" was already used with a different payment payload`, { paymentIdentifier: key });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
