import { Injectable } from '@nestjs/common';
import { isUniqueViolation, PrismaService, withTransaction } from '@mp/db';
import type { Hex } from 'viem';

export type PaymentState = 'received' | 'verified' | 'submitted' | 'confirmed' | 'failed' | 'expired';

export interface PaymentRecord {
  id: string;
  state: PaymentState;
  payloadHash: string;
  txHash: string | null;
  signer: string | null;
  errorReason: string | null;
  errorMessage: string | null;
  updatedAt: Date;
}

export interface NewPayment {
  network: string;
  asset: string;
  payer: string;
  nonce: string;
  payTo: string;
  amount: bigint;
  validAfter: bigint;
  validBefore: bigint;
  scheme: string;
  x402Version: number;
  payloadHash: string;
  paymentIdentifier?: string;
}

export class IdempotencyConflictError extends Error {
  constructor(readonly key: string) {
    super(`payment identifier ${key} was already used for a different payment`);
  }
}

const RECORD_COLUMNS = `id, state::text AS state, payload_hash AS "payloadHash", tx_hash AS "txHash", signer,
  error_reason AS "errorReason", error_message AS "errorMessage", updated_at AS "updatedAt"`;

/**
 * The facilitator's durable payment records. Every state change is a compare-and-set on the current state,
 * written together with its event row in one statement, so concurrent workers can never both advance a payment.
 */
@Injectable()
export class PaymentRepository {
  constructor(private readonly db: PrismaService) {}

  async findByKey(key: { network: string; asset: string; payer: string; nonce: string }): Promise<PaymentRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<PaymentRecord[]>(
      `SELECT ${RECORD_COLUMNS} FROM facilitator.payments
        WHERE network = $1 AND asset = $2 AND payer = $3 AND authorization_nonce = $4`,
      key.network,
      key.asset,
      key.payer,
      key.nonce,
    );
    return rows[0];
  }

  async findById(id: string): Promise<PaymentRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<PaymentRecord[]>(`SELECT ${RECORD_COLUMNS} FROM facilitator.payments WHERE id = $1::uuid`, id);
    return rows[0];
  }

  /** The payload a payment identifier was first used with, if any. */
  async identifierFingerprint(key: string): Promise<string | undefined> {
    const rows = await this.db.$queryRawUnsafe<{ payloadHash: string }[]>(
      `SELECT payload_hash AS "payloadHash" FROM facilitator.payment_idempotency_keys WHERE key = $1`,
      key,
    );
    return rows[0]?.payloadHash;
  }

  /**
   * Claims a verified payment for settlement: inserts it unless its authorization is already known, and binds
   * its payment identifier, all in one transaction. Returns the new id, or undefined when another request holds it.
   */
  async claim(p: NewPayment): Promise<string | undefined> {
    try {
      return await withTransaction(this.db, async (tx) => {
        const rows = await tx.$queryRawUnsafe<{ id: string }[]>(
          `WITH inserted AS (
             INSERT INTO facilitator.payments (network, asset, payer, authorization_nonce, pay_to, amount, valid_after, valid_before,
                                               scheme, x402_version, payload_hash, state, updated_at)
             VALUES ($1, $2, $3, $4, $5, $6::numeric, $7::numeric, $8::numeric, $9, $10, $11, 'verified', now())
             ON CONFLICT (network, asset, payer, authorization_nonce) DO NOTHING
             RETURNING id)
           INSERT INTO facilitator.payment_events (payment_id, type, data)
           SELECT id, 'payment.verified', $12::jsonb FROM inserted
           RETURNING payment_id AS id`,
          p.network,
          p.asset,
          p.payer,
          p.nonce,
          p.payTo,
          p.amount.toString(),
          p.validAfter.toString(),
          p.validBefore.toString(),
          p.scheme,
          p.x402Version,
          p.payloadHash,
          JSON.stringify({ network: p.network, asset: p.asset, payer: p.payer, payTo: p.payTo, amount: p.amount.toString(), nonce: p.nonce }),
        );
        const id = rows[0]?.id;
        if (id && p.paymentIdentifier) {
          await tx.$executeRawUnsafe(
            `INSERT INTO facilitator.payment_idempotency_keys (key, payload_hash, payment_id) VALUES ($1, $2, $3::uuid)`,
            p.paymentIdentifier,
            p.payloadHash,
            id,
          );
        }
        return id;
      });
    } catch (error) {
      if (p.paymentIdentifier && isUniqueViolation(error)) throw new IdempotencyConflictError(p.paymentIdentifier);
      throw error;
    }
  }

  /** Takes over a payment whose earlier attempt failed before anything reached the chain, or whose owner vanished. */
  async reclaim(id: string, from: PaymentState, updatedAt: Date, payloadHash: string): Promise<boolean> {
    return this.transition(id, [from], 'verified', 'payment.retried', { payloadHash }, `payload_hash = $4, error_reason = NULL, error_message = NULL, tx_hash = NULL`, [payloadHash], updatedAt);
  }

  /** Records the signed transaction before it is broadcast. */
  markSubmitted(id: string, tx: { hash: Hex; nonce: number; signer: string }): Promise<boolean> {
    return this.transition(id, ['verified'], 'submitted', 'payment.submitted', { txHash: tx.hash, signer: tx.signer, txNonce: tx.nonce },
      `tx_hash = $4, signer = $5, tx_nonce = $6, submitted_at = now(), attempts = attempts + 1`, [tx.hash, tx.signer.toLowerCase(), tx.nonce]);
  }

  /** The owner's transaction was rejected at broadcast (a stale nonce): back to verified, to be sent again. */
  releaseUnsent(id: string, hash: Hex, reason: string): Promise<boolean> {
    return this.transition(id, ['submitted'], 'verified', 'payment.resend', { unsentTxHash: hash, reason },
      `tx_hash = NULL, signer = NULL, tx_nonce = NULL`, [hash.toLowerCase()], undefined, 'AND tx_hash = $4');
  }

  markConfirmed(id: string, receipt: { blockNumber: bigint; gasUsed: bigint }): Promise<boolean> {
    return this.transition(id, ['submitted'], 'confirmed', 'payment.confirmed', { blockNumber: receipt.blockNumber.toString(), gasUsed: receipt.gasUsed.toString() },
      `settled_at = now()`, []);
  }

  /** A failure on chain (the transaction was mined): final. The hash stays as evidence. */
  markFailedOnChain(id: string, reason: string, message: string): Promise<boolean> {
    return this.transition(id, ['submitted'], 'failed', 'payment.failed', { reason, message }, `error_reason = $4, error_message = $5`, [reason, message]);
  }

  /** A failure before anything reached the chain: the payment may be retried, so the hash of the unsent transaction is dropped. */
  markFailedUnsent(id: string, reason: string, message: string): Promise<boolean> {
    return this.transition(id, ['verified', 'submitted'], 'failed', 'payment.failed', { reason, message, broadcast: false },
      `error_reason = $4, error_message = $5, tx_hash = NULL, signer = NULL, tx_nonce = NULL`, [reason, message]);
  }

  private async transition(
    id: string,
    from: PaymentState[],
    to: PaymentState,
    eventType: string,
    eventData: Record<string, unknown>,
    setClause: string,
    params: unknown[],
    expectedUpdatedAt?: Date,
    extraGuard = '',
  ): Promise<boolean> {
    const fromList = from.map((s) => `'${s}'`).join(', ');
    const staleGuard = expectedUpdatedAt ? `AND updated_at = $${4 + params.length}` : '';
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `WITH updated AS (
         UPDATE facilitator.payments SET state = '${to}', updated_at = now(), ${setClause}
          WHERE id = $1::uuid AND state IN (${fromList}) ${staleGuard} ${extraGuard}
          RETURNING id)
       INSERT INTO facilitator.payment_events (payment_id, type, data)
       SELECT id, $2, $3::jsonb FROM updated
       RETURNING payment_id AS id`,
      id,
      eventType,
      JSON.stringify(eventData),
      ...params,
      ...(expectedUpdatedAt ? [expectedUpdatedAt] : []),
    );
    return rows.length === 1;
  }
}
