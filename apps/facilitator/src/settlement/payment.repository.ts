import { Injectable } from '@nestjs/common';
import { isUniqueViolation, PrismaService, withTransaction } from '@mp/db';
import type { SignedTransaction } from '@mp/chain';
import type { Hex } from 'viem';
import { gasShare } from './gas-share';
import { applyTransition, eventTraceContext, type PaymentState, type TransitionArgs, type TransitionName } from './payment-transitions';

export type { PaymentState } from './payment-transitions';

export interface PaymentRecord {
  id: string;
  state: PaymentState;
  payloadHash: string;
  txHash: string | null;
  signer: string | null;
  errorReason: string | null;
  errorMessage: string | null;
  updatedAt: Date;
  /** the merchant whose API key claimed it; null in open mode without a key */
  merchantId: string | null;
}

/** What a worker needs to send and judge a settlement, from the record alone. */
export interface SettlementRecord extends PaymentRecord {
  network: string;
  asset: string;
  payer: string;
  authorizationNonce: Hex;
  payTo: string;
  amount: bigint;
  validBefore: bigint;
  settleTo: Hex;
  settleData: Hex;
  /**
   * The claim's raw gas estimate (no margin: see settlementGasLimit); set only until the first send, so only a first
   * send can skip estimating again.
   */
  settleGas: bigint | null;
  /** How many transactions were signed for it: above zero, the chain may already hold its outcome. */
  attempts: number;
}

export interface StoredTransaction extends SignedTransaction {
  createdAt: Date;
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
  payloadHash: string;
  paymentIdentifier?: string;
  settleTo: string;
  settleData: string;
  settleGas: bigint;
  merchantId?: string | null;
  origin: PaymentOrigin;
}

/** Which protocol's API accepted a payment: an x402 payload, or an MPP credential answering a challenge. */
export type PaymentOrigin = { protocol: 'x402'; x402Version: 1 | 2 } | { protocol: 'mpp'; challengeId: string };

/** A payment settled off chain (a Stripe PaymentIntent): recorded like a chain payment, with the same events. */
export interface NewExternalPayment {
  rail: 'stripe';
  network: string;
  asset: string;
  payer: string;
  challengeId: string;
  payTo: string;
  amount: bigint;
  validBefore: bigint;
  method: string;
  payloadHash: string;
  merchantId: string | null;
}

class BatchClaimLostError extends Error {}

export class IdempotencyConflictError extends Error {
  constructor(readonly key: string) {
    super(`payment identifier ${key} was already used for a different payment`);
  }
}

const RECORD_COLUMNS = `id, state::text AS state, payload_hash AS "payloadHash", tx_hash AS "txHash", signer,
  error_reason AS "errorReason", error_message AS "errorMessage", updated_at AS "updatedAt", merchant_id AS "merchantId"`;

const SETTLEMENT_COLUMNS = `${RECORD_COLUMNS}, network, asset, payer, authorization_nonce AS "authorizationNonce", pay_to AS "payTo", amount::text AS amount,
  valid_before::text AS "validBefore", settle_to AS "settleTo", settle_data AS "settleData", settle_gas::text AS "settleGas", attempts`;

/**
 * The facilitator's durable payment records. Every state change is a compare-and-set on the current state,
 * written together with its event row in one statement, so concurrent workers can never both advance a payment.
 * The changes themselves are declared in payment-transitions.ts.
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

  async findForSettlement(id: string): Promise<SettlementRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<(Omit<SettlementRecord, 'amount' | 'validBefore' | 'settleGas'> & { amount: string; validBefore: string; settleGas: string | null })[]>(
      `SELECT ${SETTLEMENT_COLUMNS} FROM facilitator.payments WHERE id = $1::uuid`,
      id,
    );
    const row = rows[0];
    return row && { ...row, amount: BigInt(row.amount), validBefore: BigInt(row.validBefore), settleGas: row.settleGas === null ? null : BigInt(row.settleGas) };
  }

  /** Every transaction signed for a payment, oldest first. */
  async transactions(paymentId: string): Promise<StoredTransaction[]> {
    const rows = await this.db.$queryRawUnsafe<Record<string, string | number | Date>[]>(
      `SELECT t.hash, t.nonce, t.signer, t.raw_tx AS raw, t.max_fee_per_gas::text AS "maxFeePerGas",
              t.max_priority_fee_per_gas::text AS "maxPriorityFeePerGas", t.gas_limit::text AS gas, t.created_at AS "createdAt",
              p.settle_to AS "to", p.settle_data AS data
         FROM facilitator.payment_transactions t JOIN facilitator.payments p ON p.id = t.payment_id
        WHERE t.payment_id = $1::uuid ORDER BY t.created_at, t.hash`,
      paymentId,
    );
    return rows.map((r) => ({
      hash: r.hash as Hex,
      nonce: Number(r.nonce),
      signer: r.signer as Hex,
      raw: r.raw as Hex,
      to: r.to as Hex,
      data: r.data as Hex,
      gas: BigInt(r.gas as string),
      maxFeePerGas: BigInt(r.maxFeePerGas as string),
      maxPriorityFeePerGas: BigInt(r.maxPriorityFeePerGas as string),
      createdAt: r.createdAt as Date,
    }));
  }

  /** Chain payments in a state for longer than `olderThanMs`: the work a crashed or busy worker left behind. */
  async stale(states: PaymentState[], olderThanMs: number, limit = 500): Promise<{ id: string; state: PaymentState }[]> {
    return this.db.$queryRawUnsafe(
      `SELECT id, state::text AS state FROM facilitator.payments
        WHERE rail = 'evm' AND state::text = ANY($1::text[]) AND updated_at < now() - ($2::int * interval '1 millisecond')
        ORDER BY updated_at LIMIT $3`,
      states,
      olderThanMs,
      limit,
    );
  }

  /** How many payments are accepted but not yet settled or failed. */
  async countInFlight(): Promise<number> {
    const rows = await this.db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM facilitator.payments WHERE state IN ('verified', 'submitted')`);
    return rows[0]?.n ?? 0;
  }

  /** The payment identifier's payload, if the identifier was used before. */
  async identifierFingerprint(key: string, merchantId: string | null): Promise<string | undefined> {
    const rows = await this.db.$queryRawUnsafe<{ payloadHash: string }[]>(
      `SELECT payload_hash AS "payloadHash" FROM facilitator.payment_idempotency_keys WHERE scope = $1 AND key = $2`,
      merchantId ?? '',
      key,
    );
    return rows[0]?.payloadHash;
  }

  /**
   * Claims a verified payment for settlement: inserts it unless its authorization is already known, and binds
   * its payment identifier, all in one transaction. Returns the new id, or undefined when another request holds it.
   */
  async claim(p: NewPayment): Promise<string | undefined> {
    // Without an identifier the claim is one statement; with one, the binding joins it in a transaction.
    if (!p.paymentIdentifier) return this.insertPayment(this.db, p);
    const key = p.paymentIdentifier;
    try {
      return await withTransaction(this.db, async (tx) => {
        const id = await this.insertPayment(tx, p);
        if (id) {
          await tx.$executeRawUnsafe(
            `INSERT INTO facilitator.payment_idempotency_keys (scope, key, payload_hash, payment_id) VALUES ($4, $1, $2, $3::uuid)`,
            key,
            p.payloadHash,
            id,
            p.merchantId ?? '',
          );
        }
        return id;
      });
    } catch (error) {
      if (isUniqueViolation(error)) throw new IdempotencyConflictError(key);
      throw error;
    }
  }

  private async insertPayment(db: Pick<PrismaService, '$queryRawUnsafe'>, p: NewPayment): Promise<string | undefined> {
    const rows = await db.$queryRawUnsafe<{ id: string }[]>(
      `WITH inserted AS (
         INSERT INTO facilitator.payments (network, asset, payer, authorization_nonce, pay_to, amount, valid_after, valid_before,
                                           scheme, x402_version, payload_hash, settle_to, settle_data, merchant_id, settle_gas,
                                           protocol, challenge_id, state, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6::numeric, $7::numeric, $8::numeric, $9, $10, $11, $12, $13, $15::uuid, $16::numeric,
                 $17, $18, 'verified', now())
         ON CONFLICT (network, asset, payer, authorization_nonce) DO NOTHING
         RETURNING id)
       INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
       SELECT id, 'payment.verified', $14::jsonb, $19::jsonb FROM inserted
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
      p.origin.protocol === 'x402' ? p.origin.x402Version : null,
      p.payloadHash,
      p.settleTo.toLowerCase(),
      p.settleData,
      JSON.stringify({
        network: p.network, asset: p.asset, payer: p.payer, payTo: p.payTo, amount: p.amount.toString(), nonce: p.nonce,
        protocol: p.origin.protocol, rail: 'evm', ...(p.origin.protocol === 'mpp' && { method: p.scheme, challengeId: p.origin.challengeId }),
      }),
      p.merchantId ?? null,
      p.settleGas.toString(),
      p.origin.protocol,
      p.origin.protocol === 'mpp' ? p.origin.challengeId : null,
      eventTraceContext(),
    );
    return rows[0]?.id;
  }

  /** Records an off-chain payment as verified (with its payment.verified event) before its rail is asked to settle it. */
  async insertExternal(p: NewExternalPayment): Promise<string | undefined> {
    const rows = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `WITH inserted AS (
         INSERT INTO facilitator.payments (network, asset, payer, authorization_nonce, pay_to, amount, valid_after, valid_before,
                                           scheme, payload_hash, merchant_id, protocol, rail, challenge_id, state, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6::numeric, 0, $7::numeric, $8, $9, $10::uuid, 'mpp', $11, $4, 'verified', now())
         ON CONFLICT (network, asset, payer, authorization_nonce) DO NOTHING
         RETURNING id)
       INSERT INTO facilitator.payment_events (payment_id, type, data, trace_context)
       SELECT id, 'payment.verified', $12::jsonb, $13::jsonb FROM inserted
       RETURNING payment_id AS id`,
      p.network,
      p.asset,
      p.payer,
      p.challengeId,
      p.payTo,
      p.amount.toString(),
      p.validBefore.toString(),
      p.method,
      p.payloadHash,
      p.merchantId,
      p.rail,
      JSON.stringify({
        network: p.network, asset: p.asset, payer: p.payer, payTo: p.payTo, amount: p.amount.toString(), nonce: p.challengeId,
        protocol: 'mpp', rail: p.rail, method: p.method, challengeId: p.challengeId,
      }),
      eventTraceContext(),
    );
    return rows[0]?.id;
  }

  /** The off-chain rail refused it: final (a new credential is a new payment). */
  markFailedExternally(id: string, reason: string, message: string, reference?: string): Promise<boolean> {
    return this.transition('failExternally', id, { reason, message, reference });
  }

  /** The off-chain payment an MPP challenge created, if any; `merchantId` undefined: whoever's it is (webhooks). */
  async findByChallenge(rail: 'stripe', challengeId: string, merchantId?: string | null): Promise<PaymentRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<PaymentRecord[]>(
      `SELECT ${RECORD_COLUMNS} FROM facilitator.payments
        WHERE rail = $1 AND challenge_id = $2 AND ($4 OR merchant_id IS NOT DISTINCT FROM $3::uuid)`,
      rail,
      challengeId,
      merchantId ?? null,
      merchantId === undefined,
    );
    return rows[0];
  }

  /** Takes over a payment whose earlier attempt failed before anything reached the chain. */
  reclaim(id: string, updatedAt: Date, payloadHash: string, call: { to: string; data: string }): Promise<boolean> {
    return this.transition('retry', id, { updatedAt, payloadHash, call });
  }

  /** Records a signed settlement transaction before it is broadcast, and moves the payment to submitted. */
  recordSubmitted(id: string, tx: SignedTransaction, network: string): Promise<boolean> {
    return this.transition('submit', id, { tx, network });
  }

  /**
   * Records a signed batch transaction for every payment in it before it is broadcast: all of them move to
   * submitted, or (if any was taken meanwhile) none does.
   */
  async recordSubmittedBatch(ids: string[], tx: SignedTransaction, network: string): Promise<boolean> {
    try {
      return await withTransaction(this.db, async (db) => {
        for (const id of ids) {
          if (!(await this.transition('submit', id, { tx, network }, db))) throw new BatchClaimLostError();
        }
        return true;
      }, { retries: 0 });
    } catch (error) {
      if (error instanceof BatchClaimLostError) return false;
      throw error;
    }
  }

  /**
   * Records a fee-bumped replacement (same signer and nonce) before it is broadcast, for every payment the stuck
   * transaction settles (a batch settles several), so whichever of the two is mined, each payment knows it.
   */
  async recordReplacement(stuckHash: string, tx: SignedTransaction, network: string): Promise<boolean> {
    const ids = await this.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id FROM facilitator.payments WHERE tx_hash = $1 AND state = 'submitted'`,
      stuckHash,
    );
    if (ids.length === 0) return false;
    return withTransaction(this.db, async (db) => {
      for (const { id } of ids) await this.transition('replace', id, { tx, network, stuckHash }, db);
      return true;
    });
  }

  /** The payment's exact share of a transaction's fee (see gasShare): a batch's fee is split between its payments. */
  async gasShare(hash: string, paymentId: string, fee: bigint): Promise<bigint> {
    const rows = await this.db.$queryRawUnsafe<{ paymentId: string }[]>(
      `SELECT DISTINCT payment_id::text AS "paymentId" FROM facilitator.payment_transactions WHERE hash = $1 ORDER BY 1`,
      hash,
    );
    return gasShare(fee, rows.map((r) => r.paymentId), paymentId);
  }

  /** The transaction never took (its nonce went elsewhere, or the node refused it as stale): back to verified, to be sent again. */
  releaseUnsent(id: string, reason: string): Promise<boolean> {
    return this.transition('resend', id, { reason });
  }

  /**
   * Its transfer failed inside a batch that was mined: the batch transaction did not settle this payment, so it is
   * detached from it, and the payment goes back to verified to be sent alone.
   */
  releaseFromBatch(id: string, batchHash: string): Promise<boolean> {
    return this.transition('leaveBatch', id, { batchHash });
  }

  /** `gasFee`: the payment's share of the transaction's fee in wei (see gasShare), which the ledger books as gas. */
  markConfirmed(id: string, hash: string, receipt: { blockNumber: bigint; blockHash: string; gasUsed: bigint; effectiveGasPrice?: bigint }, gasFee: bigint): Promise<boolean> {
    // From verified too: a payment released to be sent again (its nonce looked taken) that an earlier transaction carried.
    return this.transition('confirm', id, { hash, receipt, gasFee });
  }

  /** Chain payments confirmed in a block above `afterBlock` on the network: the ones a reorg could still take back. */
  async confirmedAfter(network: string, afterBlock: bigint): Promise<{ id: string; blockNumber: bigint; blockHash: string }[]> {
    const rows = await this.db.$queryRawUnsafe<{ id: string; blockNumber: string; blockHash: string }[]>(
      `SELECT id, block_number::text AS "blockNumber", block_hash AS "blockHash" FROM facilitator.payments
        WHERE state = 'confirmed' AND rail = 'evm' AND network = $1 AND block_number > $2::numeric`,
      network,
      afterBlock.toString(),
    );
    return rows.map((r) => ({ ...r, blockNumber: BigInt(r.blockNumber) }));
  }

  /**
   * The block that confirmed it is no longer in the chain: back to submitted, to be judged again (its transaction may
   * be mined anew, or not at all), with a payment.reorged event that corrects the merchant's view.
   */
  markReorged(id: string, blockHash: string, blockNumber: bigint): Promise<boolean> {
    return this.transition('reorg', id, { blockHash, blockNumber });
  }

  /** A failure on chain (the transaction was mined, and its gas paid): final. The hash stays as evidence. */
  markFailedOnChain(id: string, hash: string, reason: string, message: string, gasFee: bigint): Promise<boolean> {
    return this.transition('failOnChain', id, { hash, reason, message, gasFee });
  }

  /** A failure before anything reached the chain: a later request may retry the payment. */
  markFailedUnsent(id: string, reason: string, message: string): Promise<boolean> {
    return this.transition('failUnsent', id, { reason, message });
  }

  /** The authorization's validBefore passed with nothing mined: it can never settle now. */
  markExpired(id: string, from: PaymentState[], message: string): Promise<boolean> {
    return this.transition('expire', id, { message }, this.db, from);
  }

  private async transition<N extends TransitionName>(
    name: N,
    id: string,
    args: TransitionArgs<N>,
    db: Pick<PrismaService, '$queryRawUnsafe'> = this.db,
    from?: PaymentState[],
  ): Promise<boolean> {
    return (await applyTransition(db, name, id, args, from)).moved;
  }
}
