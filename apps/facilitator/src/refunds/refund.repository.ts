import { Injectable } from '@nestjs/common';
import { fromDbDecimal, Prisma, PrismaService, toDbDecimal, withTransaction, type Tx } from '@mp/db';
import { currentTraceContext } from '@mp/platform';
import type { RefundReason } from './refunds.dto';

export type RefundStatus = 'pending' | 'executed' | 'denied' | 'failed';
export type RefundRail = 'evm' | 'stripe';

/**
 * Why a refund was not accepted: the extension's `amount_exceeds_settled` and `already_refunded`, and ours (a
 * payment not confirmed, no refund wallet, a refund wallet without the tokens, a rail this facilitator does not run).
 */
export const DENIAL_REASONS = [
  'amount_exceeds_settled',
  'already_refunded',
  'payment_not_settled',
  'refund_wallet_not_configured',
  'refund_wallet_underfunded',
  'rail_not_configured',
] as const;
export type DenialReason = (typeof DENIAL_REASONS)[number];

export const REFUND_SELECT = {
  id: true,
  merchantId: true,
  paymentId: true,
  idempotencyKey: true,
  requestHash: true,
  status: true,
  rail: true,
  network: true,
  asset: true,
  amount: true,
  reason: true,
  reasonDetail: true,
  refundTo: true,
  denialReason: true,
  failureReason: true,
  failureMessage: true,
  reference: true,
  signer: true,
  txHash: true,
  txNonce: true,
  rawTx: true,
  createdAt: true,
  updatedAt: true,
  finishedAt: true,
} satisfies Prisma.RefundSelect;

type RefundRow = Prisma.RefundGetPayload<{ select: typeof REFUND_SELECT }>;
export type RefundRecord = Omit<RefundRow, 'amount' | 'status' | 'rail'> & { amount: bigint; status: RefundStatus; rail: RefundRail };

/** The refunded payment, as a refund needs it. */
export interface RefundablePayment {
  id: string;
  state: string;
  rail: RefundRail;
  network: string;
  asset: string;
  payer: string;
  amount: bigint;
  /** Stripe: the PaymentIntent */
  reference: string | null;
  txHash: string | null;
}

export interface NewRefund {
  merchantId: string;
  idempotencyKey: string;
  requestHash: string;
  amount: bigint;
  reason: RefundReason;
  reasonDetail?: string;
  refundTo: string | null;
  payerSignature?: string;
}

export interface AcceptOptions {
  /**
   * A denial is also told through the outbox (payment.refund_failed, failureReason `denied:<reason>`), for a requester
   * that waits for the outcome there (the ledger's refund command); a REST caller has it in the answer.
   */
  announceDenial?: boolean;
}

/** What accepting a request came to: a refund row (pending or denied), or the row another request made with the key. */
export type AcceptOutcome = { kind: 'created'; refund: RefundRecord } | { kind: 'key_taken' };

export interface SignedRefundTransaction {
  signer: string;
  txHash: string;
  txNonce: number;
  rawTx: string;
}

const toRecord = (row: RefundRow): RefundRecord => ({
  ...row,
  amount: fromDbDecimal(row.amount),
  status: row.status as RefundStatus,
  rail: row.rail as RefundRail,
});

/** The JSON a payment.refund_* event carries (libs/clients payment-events.ts). */
function refundFields(refund: RefundRecord) {
  return { refundId: refund.id, amount: refund.amount.toString(), reason: refund.reason, idempotencyKey: refund.idempotencyKey, refundTo: refund.refundTo };
}

/**
 * Refunds and their outbox events. Accepting one is a check and a write in one transaction with the payment row
 * locked (FOR UPDATE), so two concurrent refunds of one payment can never together exceed what it captured. Every
 * change of a refund's status is a compare-and-set from `pending`, written with its event in the same transaction.
 */
@Injectable()
export class RefundRepository {
  constructor(private readonly db: PrismaService) {}

  async byKey(merchantId: string, idempotencyKey: string): Promise<RefundRecord | undefined> {
    const row = await this.db.refund.findUnique({ where: { merchantId_idempotencyKey: { merchantId, idempotencyKey } }, select: REFUND_SELECT });
    return row ? toRecord(row) : undefined;
  }

  async byId(id: string, merchantId?: string): Promise<RefundRecord | undefined> {
    const row = await this.db.refund.findFirst({ where: { id, ...(merchantId && { merchantId }) }, select: REFUND_SELECT });
    return row ? toRecord(row) : undefined;
  }

  async ofPayment(merchantId: string, paymentId: string): Promise<RefundRecord[]> {
    const rows = await this.db.refund.findMany({ where: { merchantId, paymentId }, select: REFUND_SELECT, orderBy: [{ createdAt: 'asc' }, { id: 'asc' }] });
    return rows.map(toRecord);
  }

  async paymentExists(merchantId: string, paymentId: string): Promise<boolean> {
    return (await this.db.payment.count({ where: { id: paymentId, merchantId } })) > 0;
  }

  /** The Stripe refund we made for it (by its `re_…` id). */
  async byReference(reference: string): Promise<RefundRecord | undefined> {
    const row = await this.db.refund.findFirst({ where: { reference }, select: REFUND_SELECT });
    return row ? toRecord(row) : undefined;
  }

  /**
   * The merchant's payments a reference can mean, at most 2 (two: ambiguous). `paymentId` is the payment's id, its
   * x402 payment-identifier (per merchant) or its PaymentIntent; `txHash` its settlement transaction.
   */
  async findPayments(merchantId: string, ref: { network: string; txHash?: string; paymentId?: string }): Promise<RefundablePayment[]> {
    const pid = ref.paymentId;
    const isUuid = pid !== undefined && /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(pid);
    const rows = await this.db.payment.findMany({
      where: {
        merchantId,
        network: ref.network,
        ...(ref.txHash && { txHash: ref.txHash.toLowerCase() }),
        ...(pid !== undefined && {
          OR: [...(isUuid ? [{ id: pid.toLowerCase() }] : []), { reference: pid }, { idempotencyKeys: { some: { scope: merchantId, key: pid } } }],
        }),
      },
      select: { id: true, state: true, rail: true, network: true, asset: true, payer: true, amount: true, reference: true, txHash: true },
      take: 2,
    });
    return rows.map((r) => ({ ...r, state: String(r.state), rail: r.rail as RefundRail, amount: fromDbDecimal(r.amount) }));
  }

  /**
   * Accepts or denies a refund of `paymentId` in one transaction, the payment row locked: denied with `denial` when
   * the caller already knows why, else when the payment is not confirmed or the amount is above what is left of it
   * (captured minus every refund pending or executed). An accepted refund is `pending` with its payment.refund_pending
   * event; a denied one has no event unless `options.announceDenial`. `key_taken`: a concurrent request inserted this idempotency key first (nothing written here).
   */
  accept(paymentId: string, refund: NewRefund, rail: RefundRail, denial?: DenialReason, options: AcceptOptions = {}): Promise<AcceptOutcome> {
    return withTransaction(this.db, async (tx) => {
      // SQL: Prisma Client cannot lock a row
      const [payment] = await tx.$queryRaw<{ state: string; amount: string; network: string; asset: string }[]>`
        SELECT state::text AS state, amount::text AS amount, network, asset FROM facilitator.payments
         WHERE id = ${paymentId}::uuid AND merchant_id = ${refund.merchantId}::uuid FOR UPDATE`;
      if (!payment) throw new Error(`payment ${paymentId} of merchant ${refund.merchantId} vanished`);
      const taken = await tx.refund.count({ where: { merchantId: refund.merchantId, idempotencyKey: refund.idempotencyKey } });
      if (taken) return { kind: 'key_taken' };
      const reason = denial ?? (await this.denialFor(tx, paymentId, payment, refund.amount));
      const row = await tx.refund.create({
        data: {
          merchantId: refund.merchantId,
          paymentId,
          idempotencyKey: refund.idempotencyKey,
          requestHash: refund.requestHash,
          status: reason ? 'denied' : 'pending',
          rail,
          network: payment.network,
          asset: payment.asset,
          amount: toDbDecimal(refund.amount),
          reason: refund.reason,
          reasonDetail: refund.reasonDetail ?? null,
          refundTo: refund.refundTo,
          payerSignature: refund.payerSignature ?? null,
          denialReason: reason ?? null,
          ...(reason && { finishedAt: new Date() }),
        },
        select: REFUND_SELECT,
      });
      const record = toRecord(row);
      if (!reason) await this.event(tx, record, 'payment.refund_pending', refundFields(record));
      else if (options.announceDenial)
        await this.event(tx, record, 'payment.refund_failed', {
          ...refundFields(record),
          reference: null,
          failureReason: `denied:${reason}`,
          message: `the refund was denied (${reason}): nothing moved`,
        });
      return { kind: 'created', refund: record };
    });
  }

  private async denialFor(tx: Tx, paymentId: string, payment: { state: string; amount: string }, amount: bigint): Promise<DenialReason | undefined> {
    if (payment.state !== 'confirmed') return 'payment_not_settled';
    const { _sum } = await tx.refund.aggregate({ where: { paymentId, status: { in: ['pending', 'executed'] } }, _sum: { amount: true } });
    const refunded = _sum.amount ? fromDbDecimal(_sum.amount) : 0n;
    const left = BigInt(payment.amount) - refunded;
    if (left <= 0n) return 'already_refunded';
    return amount > left ? 'amount_exceeds_settled' : undefined;
  }

  /**
   * Records the signed refund transfer before it is broadcast (a committed write of its own, so it is on record
   * whatever happens to the broadcast). `replaces`: the hash of an earlier transaction of this refund that can never be
   * mined (its nonce went to another transaction); undefined: the refund must have none yet. False if the refund moved
   * on meanwhile (another process recorded one, or it is final).
   */
  async recordTransaction(id: string, signed: SignedRefundTransaction, replaces?: string): Promise<boolean> {
    const { count } = await this.db.refund.updateMany({
      where: { id, status: 'pending', rail: 'evm', txHash: replaces ?? null },
      data: { signer: signed.signer.toLowerCase(), txHash: signed.txHash.toLowerCase(), txNonce: signed.txNonce, rawTx: signed.rawTx },
    });
    return count === 1;
  }

  /** Stripe: the refund object's id, once Stripe answered (still pending). */
  async recordReference(id: string, reference: string): Promise<void> {
    await this.db.refund.updateMany({ where: { id, status: 'pending', OR: [{ reference: null }, { reference }] }, data: { reference } });
  }

  /** pending → executed with its payment.refunded event; false if it was not pending. */
  executed(id: string, reference: string, blockNumber?: bigint): Promise<boolean> {
    return this.finish(id, { status: 'executed', reference, ...(blockNumber !== undefined && { blockNumber: toDbDecimal(blockNumber) }) }, (r) => ({
      type: 'payment.refunded',
      data: { ...refundFields(r), reference },
    }));
  }

  /** pending → failed with its payment.refund_failed event (nothing moved); false if it was not pending. */
  failed(id: string, failureReason: string, message: string, reference: string | null): Promise<boolean> {
    return this.finish(id, { status: 'failed', failureReason, failureMessage: message, ...(reference && { reference }) }, (r) => ({
      type: 'payment.refund_failed',
      data: { ...refundFields(r), reference, failureReason, message },
    }));
  }

  /** Pending refunds unchanged for `idleMs` (by the database's clock), oldest first. */
  async pending(idleMs: number, limit: number): Promise<RefundRecord[]> {
    // SQL: the age is read on the database's clock, which updated_at is written with
    const ids = await this.db.$queryRaw<{ id: string }[]>`
      SELECT id::text FROM facilitator.refunds
       WHERE status = 'pending' AND updated_at < now() - (${idleMs}::int * interval '1 millisecond')
       ORDER BY updated_at LIMIT ${limit}`;
    if (!ids.length) return [];
    const rows = await this.db.refund.findMany({ where: { id: { in: ids.map((r) => r.id) } }, select: REFUND_SELECT, orderBy: { updatedAt: 'asc' } });
    return rows.map(toRecord);
  }

  private finish(
    id: string,
    data: Prisma.RefundUpdateManyMutationInput,
    event: (refund: RefundRecord) => { type: 'payment.refunded' | 'payment.refund_failed'; data: Prisma.InputJsonObject },
  ): Promise<boolean> {
    return withTransaction(this.db, async (tx) => {
      const { count } = await tx.refund.updateMany({ where: { id, status: 'pending' }, data: { ...data, finishedAt: new Date() } });
      if (count !== 1) return false;
      const row = toRecord(await tx.refund.findUniqueOrThrow({ where: { id }, select: REFUND_SELECT }));
      const e = event(row);
      await this.event(tx, row, e.type, e.data);
      return true;
    });
  }

  private async event(tx: Tx, refund: RefundRecord, type: string, data: Prisma.InputJsonObject): Promise<void> {
    const context = currentTraceContext();
    await tx.paymentEvent.create({
      data: {
        paymentId: refund.paymentId,
        type,
        data,
        traceContext: context ? { traceparent: context.traceparent, ...(context.tracestate && { tracestate: context.tracestate }) } : Prisma.DbNull,
      },
    });
  }
}
