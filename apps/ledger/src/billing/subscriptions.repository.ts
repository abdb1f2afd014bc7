import { Injectable } from '@nestjs/common';
import type { PeriodUnit, SubscriptionState } from '@mp/billing';
import { fromDbDecimal, Prisma, PrismaService, toDbDecimal, type Tx } from '@mp/db';
import type { Change } from './subscription-engine';
import type { CancelAt, CancelBy, ChargeRecord, ChargeState, PlanNote, RefundState, SubscriptionRecord } from './subscription';
import type { CancelRefund, DunningOutcome } from './plan';
import { UsageChargesRepository } from './usage-charges.repository';

type SubscriptionRow = Prisma.LedgerSubscriptionGetPayload<object>;
type ChargeRow = Prisma.LedgerSubscriptionChargeGetPayload<object>;

export interface SubscriptionFilter {
  payer?: string;
  state?: SubscriptionState;
  planId?: string;
}

/**
 * `ledger.subscriptions` and their charges and transitions. Every write of a Change is a few batched statements in
 * the caller's transaction (the scheduler writes hundreds of subscriptions at once); reads are scoped by merchant.
 */
@Injectable()
export class SubscriptionsRepository {
  constructor(
    private readonly db: PrismaService,
    private readonly usageCharges: UsageChargesRepository,
  ) {}

  /** Inserts the subscription unless its id exists; false when it did (a redelivered activation). */
  async insert(tx: Tx, s: SubscriptionRecord): Promise<boolean> {
    const { count } = await tx.ledgerSubscription.createMany({
      data: {
        merchantId: s.merchantId,
        id: s.id,
        planId: s.planId,
        planNote: s.planNote,
        product: s.product,
        method: s.method,
        payer: s.payer,
        payTo: s.payTo,
        network: s.network,
        asset: s.asset,
        amount: toDbDecimal(s.amount),
        periodUnit: s.periodUnit,
        periodCount: s.periodCount,
        trialDays: s.trialDays,
        anchor: s.anchor,
        expiresAt: s.expiresAt,
        authorizedPeriods: s.authorizedPeriods,
        onDunningExhausted: s.onDunningExhausted,
        cancelRefund: s.cancelRefund,
        challengeId: s.challengeId,
        externalId: s.externalId,
        stripeCustomer: s.stripeCustomer,
        stripeSubscription: s.stripeSubscription,
        state: s.state,
        version: s.version,
      },
      skipDuplicates: true,
    });
    return count === 1;
  }

  /** The subscription, locked for the rest of the transaction. */
  async lock(tx: Tx, id: string): Promise<SubscriptionRecord | undefined> {
    // raw: Prisma has no FOR UPDATE; the row comes back with its lock, one round trip on every event applied
    const [row] = await tx.$queryRaw<Record<string, unknown>[]>`SELECT * FROM ledger.subscriptions WHERE id = ${id} FOR UPDATE`;
    return row && toRecord(fieldsOf<SubscriptionRow>(row));
  }

  /** The subscriptions, locked in id order (so that two such locks never deadlock), by id. */
  async lockMany(tx: Tx, ids: string[]): Promise<Map<string, SubscriptionRecord>> {
    // raw: Prisma has no FOR UPDATE
    const rows = await tx.$queryRawUnsafe<Record<string, unknown>[]>('SELECT * FROM ledger.subscriptions WHERE id = ANY($1::text[]) ORDER BY id FOR UPDATE', [
      ...new Set(ids),
    ]);
    return new Map(rows.map((row) => toRecord(fieldsOf<SubscriptionRow>(row))).map((s) => [s.id, s]));
  }

  /**
   * Up to `limit` subscriptions due at `now`, locked; rows another transaction holds are skipped (another replica's
   * scan has them), so concurrent scans share the work instead of waiting.
   */
  async lockDue(tx: Tx, now: Date, limit: number): Promise<SubscriptionRecord[]> {
    // raw: Prisma has no FOR UPDATE SKIP LOCKED
    const keys = await tx.$queryRaw<{ id: string }[]>`
      SELECT id FROM ledger.subscriptions
      WHERE next_action_at IS NOT NULL AND next_action_at <= ${now}
      ORDER BY next_action_at
      LIMIT ${limit}
      FOR UPDATE SKIP LOCKED`;
    if (!keys.length) return [];
    const rows = await tx.ledgerSubscription.findMany({ where: { id: { in: keys.map((k) => k.id) } } });
    return rows.map(toRecord);
  }

  /** The charges of these subscriptions' open attempts, which a scan may void. */
  async inFlightCharges(tx: Tx, subscriptions: SubscriptionRecord[]): Promise<ChargeRecord[]> {
    const open = subscriptions.filter((s) => s.inFlightIndex !== null);
    if (!open.length) return [];
    const rows = await tx.ledgerSubscriptionCharge.findMany({
      where: { OR: open.map((s) => ({ merchantId: s.merchantId, subscriptionId: s.id, periodIndex: s.inFlightIndex!, attempt: s.inFlightAttempt! })) },
    });
    return rows.map(toCharge);
  }

  /** The last period paid before `periodIndex`, or null. */
  async lastPaidBefore(tx: Tx, s: SubscriptionRecord, periodIndex: number): Promise<number | null> {
    const row = await tx.ledgerSubscriptionCharge.findFirst({
      where: { merchantId: s.merchantId, subscriptionId: s.id, state: 'paid', periodIndex: { lt: periodIndex } },
      orderBy: { periodIndex: 'desc' },
      select: { periodIndex: true },
    });
    return row?.periodIndex ?? null;
  }

  async isChargePayment(paymentId: string): Promise<boolean> {
    return (await this.db.ledgerSubscriptionCharge.count({ where: { paymentId } })) > 0;
  }

  async chargeByPayment(tx: Tx, paymentId: string): Promise<ChargeRecord | undefined> {
    const row = await tx.ledgerSubscriptionCharge.findFirst({ where: { paymentId } });
    return row ? toCharge(row) : undefined;
  }

  /**
   * Writes what the changes did: the subscriptions' new fields (one UPDATE over all of them), the charges inserted or
   * updated (one INSERT … ON CONFLICT), the transitions (one INSERT) and the usage charges of the periods that closed
   * (one INSERT … SELECT over the usage events). The unique indexes are the last word: a second
   * paid charge of a period fails the transaction.
   */
  async save(tx: Tx, changes: Change[]): Promise<void> {
    const updated = changes.filter((c) => c.changed).map((c) => c.record);
    if (updated.length) {
      const rows = updated.map((s) => ({
        merchant_id: s.merchantId,
        id: s.id,
        state: s.state,
        last_paid_index: s.lastPaidIndex,
        in_flight_index: s.inFlightIndex,
        in_flight_attempt: s.inFlightAttempt,
        in_flight_since: s.inFlightSince,
        failed_index: s.failedIndex,
        failed_at: s.failedAt,
        next_attempt: s.nextAttempt,
        cancel_at: s.cancelAt,
        cancel_requested_at: s.cancelRequestedAt,
        cancel_by: s.cancelBy,
        cancel_reason: s.cancelReason,
        cancel_confirmed_at: s.cancelConfirmedAt,
        refund_amount: s.refundAmount?.toString() ?? null,
        refund_state: s.refundState,
        ended_at: s.endedAt,
        ended_reason: s.endedReason,
        next_action_at: s.nextActionAt,
        usage_next_index: s.usageNextIndex,
        version: s.version,
      }));
      // raw: one statement for the whole batch; Prisma updates one row per statement
      await tx.$executeRaw`
        UPDATE ledger.subscriptions AS s SET
          state = u.state, last_paid_index = u.last_paid_index, in_flight_index = u.in_flight_index,
          in_flight_attempt = u.in_flight_attempt, in_flight_since = u.in_flight_since, failed_index = u.failed_index,
          failed_at = u.failed_at, next_attempt = u.next_attempt, cancel_at = u.cancel_at,
          cancel_requested_at = u.cancel_requested_at, cancel_by = u.cancel_by, cancel_reason = u.cancel_reason,
          cancel_confirmed_at = u.cancel_confirmed_at, refund_amount = u.refund_amount, refund_state = u.refund_state,
          ended_at = u.ended_at, ended_reason = u.ended_reason, next_action_at = u.next_action_at,
          usage_next_index = u.usage_next_index, version = u.version, updated_at = now()
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS u(
          merchant_id uuid, id text, state text, last_paid_index int, in_flight_index int, in_flight_attempt int,
          in_flight_since timestamptz, failed_index int, failed_at timestamptz, next_attempt int, cancel_at text,
          cancel_requested_at timestamptz, cancel_by text, cancel_reason text, cancel_confirmed_at timestamptz,
          refund_amount numeric, refund_state text, ended_at timestamptz, ended_reason text, next_action_at timestamptz,
          usage_next_index int, version int)
        WHERE s.merchant_id = u.merchant_id AND s.id = u.id`;
    }
    const charges = changes.flatMap((c) => [...c.charges.values()]);
    if (charges.length) {
      const rows = charges.map((c) => ({
        merchant_id: c.merchantId,
        subscription_id: c.subscriptionId,
        period_index: c.periodIndex,
        attempt: c.attempt,
        command_id: c.commandId,
        payment_id: c.paymentId,
        state: c.state,
        amount: c.amount.toString(),
        period_start: c.periodStart,
        period_end: c.periodEnd,
        requested_at: c.requestedAt,
        published_at: c.publishedAt,
        publish_count: c.publishCount,
        settled_at: c.settledAt,
        outcome_reason: c.outcomeReason,
        late_paid_at: c.latePaidAt,
      }));
      // raw: an upsert of many rows in one statement
      await tx.$executeRaw`
        INSERT INTO ledger.subscription_charges AS c (merchant_id, subscription_id, period_index, attempt, command_id, payment_id,
          state, amount, period_start, period_end, requested_at, published_at, publish_count, settled_at, outcome_reason, late_paid_at)
        SELECT merchant_id, subscription_id, period_index, attempt, command_id, payment_id, state, amount, period_start,
          period_end, requested_at, published_at, publish_count, settled_at, outcome_reason, late_paid_at
        FROM jsonb_to_recordset(${JSON.stringify(rows)}::jsonb) AS r(merchant_id uuid, subscription_id text, period_index int,
          attempt int, command_id text, payment_id uuid, state text, amount numeric, period_start timestamptz,
          period_end timestamptz, requested_at timestamptz, published_at timestamptz, publish_count int,
          settled_at timestamptz, outcome_reason text, late_paid_at timestamptz)
        ON CONFLICT (merchant_id, subscription_id, period_index, attempt) DO UPDATE SET
          state = EXCLUDED.state, payment_id = coalesce(EXCLUDED.payment_id, c.payment_id), settled_at = EXCLUDED.settled_at,
          outcome_reason = EXCLUDED.outcome_reason, late_paid_at = EXCLUDED.late_paid_at`;
    }
    const transitions = changes.flatMap((c) =>
      c.transitions.map((t) => ({
        merchantId: c.record.merchantId,
        subscriptionId: c.record.id,
        version: t.version,
        event: t.event,
        fromState: t.fromState,
        toState: t.toState,
        at: t.at,
        cause: t.cause as Prisma.InputJsonObject,
        noticeType: t.noticeType,
      })),
    );
    if (transitions.length) await tx.ledgerSubscriptionTransition.createMany({ data: transitions });
    await this.usageCharges.recordClosed(
      tx,
      changes.flatMap((c) => c.usageCloses),
    );
  }

  /** Records that an event was applied; false when it already was (the redelivery applies nothing). */
  async markEventApplied(tx: Tx, receipt: { paymentId: string; eventId: string; type: string; subscriptionId: string }): Promise<boolean> {
    const { count } = await tx.ledgerSubscriptionEventReceipt.createMany({ data: receipt, skipDuplicates: true });
    return count === 1;
  }

  /**
   * markEventApplied, and the charges of `periodIndex` (none without one), in one statement. Called with the
   * subscription locked: the statement's snapshot is taken after the lock, so it reads every charge committed before.
   */
  async markEventAppliedReadingCharges(
    tx: Tx,
    receipt: { paymentId: string; eventId: string; type: string; subscriptionId: string },
    s: SubscriptionRecord,
    periodIndex: number | undefined,
  ): Promise<{ applied: boolean; charges: ChargeRecord[] }> {
    // raw: the receipt's insert and the read in one round trip
    const rows = await tx.$queryRaw<({ applied: number } & Record<string, unknown>)[]>`
      WITH receipt AS (
        INSERT INTO ledger.subscription_event_receipts (payment_id, event_id, type, subscription_id)
        VALUES (${receipt.paymentId}::uuid, ${receipt.eventId}, ${receipt.type}, ${receipt.subscriptionId})
        ON CONFLICT DO NOTHING
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM receipt)::int AS applied, c.*
        FROM (SELECT 1) AS one
        LEFT JOIN ledger.subscription_charges c
          ON c.merchant_id = ${s.merchantId}::uuid AND c.subscription_id = ${s.id} AND c.period_index = ${periodIndex ?? null}::int`;
    const charges = rows.filter((r) => r.merchant_id !== null).map(({ applied: _, ...row }) => toCharge(fieldsOf<ChargeRow>(row)));
    return { applied: rows[0].applied === 1, charges };
  }

  /** Records that the events were applied; answers `paymentId/eventId` (lowercase id) of those that were not already. */
  async markEventsApplied(tx: Tx, receipts: { paymentId: string; eventId: string; type: string; subscriptionId: string }[]): Promise<Set<string>> {
    // raw: one insert for all of them that tells which rows are new (createMany only counts them)
    const rows = await tx.$queryRawUnsafe<{ key: string }[]>(
      `INSERT INTO ledger.subscription_event_receipts (payment_id, event_id, type, subscription_id)
       SELECT * FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[])
       ON CONFLICT DO NOTHING
       RETURNING payment_id::text || '/' || event_id AS key`,
      receipts.map((r) => r.paymentId),
      receipts.map((r) => r.eventId),
      receipts.map((r) => r.type),
      receipts.map((r) => r.subscriptionId),
    );
    return new Set(rows.map((r) => r.key));
  }

  /** The charges of each subscription's period. */
  async chargesOfPeriods(tx: Tx, periods: { subscription: SubscriptionRecord; periodIndex: number }[]): Promise<ChargeRecord[]> {
    if (!periods.length) return [];
    const rows = await tx.ledgerSubscriptionCharge.findMany({
      where: { OR: periods.map(({ subscription: s, periodIndex }) => ({ merchantId: s.merchantId, subscriptionId: s.id, periodIndex })) },
    });
    return rows.map(toCharge);
  }

  async markNotified(keys: { merchantId: string; subscriptionId: string; version: number }[], at: Date): Promise<void> {
    if (!keys.length) return;
    await this.db.ledgerSubscriptionTransition.updateMany({ where: { OR: keys, notifiedAt: null }, data: { notifiedAt: at } });
  }

  /** Transitions whose notice was never handed over (the process stopped between commit and publish). */
  async unnotified(limit: number) {
    return this.db.ledgerSubscriptionTransition.findMany({
      where: { noticeType: { not: null }, notifiedAt: null },
      orderBy: { seq: 'asc' },
      take: limit,
    });
  }

  /** Charges asked for whose outcome has not arrived and whose command was last published before `before`. */
  async chargesToRepublish(before: Date, limit: number): Promise<ChargeRecord[]> {
    const rows = await this.db.ledgerSubscriptionCharge.findMany({
      where: { state: 'requested', commandId: { not: null }, OR: [{ publishedAt: null }, { publishedAt: { lt: before } }] },
      orderBy: { publishedAt: 'asc' },
      take: limit,
    });
    return rows.map(toCharge);
  }

  async markRepublished(charges: ChargeRecord[], at: Date): Promise<void> {
    if (!charges.length) return;
    await this.db.ledgerSubscriptionCharge.updateMany({
      where: { OR: charges.map((c) => ({ merchantId: c.merchantId, subscriptionId: c.subscriptionId, periodIndex: c.periodIndex, attempt: c.attempt })) },
      data: { publishedAt: at, publishCount: { increment: 1 } },
    });
  }

  /** Cancels the merchant or payer asked for that the facilitator has not confirmed, requested before `before`. */
  async unconfirmedCancels(before: Date, limit: number): Promise<SubscriptionRecord[]> {
    const rows = await this.db.ledgerSubscription.findMany({
      where: { cancelAt: { not: null }, cancelBy: { in: ['merchant', 'payer'] }, cancelConfirmedAt: null, cancelRequestedAt: { lt: before } },
      take: limit,
    });
    return rows.map(toRecord);
  }

  /** Refunds asked of the facilitator without an outcome yet, for cancels recorded before `before`. */
  async requestedRefunds(before: Date, limit: number): Promise<SubscriptionRecord[]> {
    const rows = await this.db.ledgerSubscription.findMany({
      where: { refundState: 'refund_requested', cancelRequestedAt: { lt: before } },
      orderBy: { cancelRequestedAt: 'asc' },
      take: limit,
    });
    return rows.map(toRecord);
  }

  async find(merchantId: string, id: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db.ledgerSubscription.findUnique({ where: { merchantId_id: { merchantId, id } } });
    return row ? toRecord(row) : undefined;
  }

  /** By id alone, for the subscriber's routes (ids are unique across merchants). */
  async findById(id: string): Promise<SubscriptionRecord | undefined> {
    const row = await this.db.ledgerSubscription.findUnique({ where: { id } });
    return row ? toRecord(row) : undefined;
  }

  async detail(merchantId: string, id: string) {
    const [charges, transitions] = await Promise.all([
      this.db.ledgerSubscriptionCharge.findMany({ where: { merchantId, subscriptionId: id }, orderBy: [{ periodIndex: 'asc' }, { attempt: 'asc' }] }),
      this.db.ledgerSubscriptionTransition.findMany({ where: { merchantId, subscriptionId: id }, orderBy: { version: 'asc' } }),
    ]);
    return { charges: charges.map(toCharge), transitions };
  }

  /** A page of the merchant's subscriptions, newest first, after `afterSeq` (exclusive). */
  async list(merchantId: string, filter: SubscriptionFilter, limit: number, afterSeq?: string) {
    const rows = await this.db.ledgerSubscription.findMany({
      where: {
        merchantId,
        ...(filter.payer !== undefined && { payer: filter.payer }),
        ...(filter.state !== undefined && { state: filter.state }),
        ...(filter.planId !== undefined && { planId: filter.planId }),
        ...(afterSeq !== undefined && { seq: { lt: BigInt(afterSeq) } }),
      },
      orderBy: { seq: 'desc' },
      take: limit + 1,
    });
    const page = rows.slice(0, limit);
    return { subscriptions: page.map(toRecord), ...(rows.length > limit && { next: page.at(-1)!.seq.toString() }) };
  }

  /** The merchant's subscriptions of a payer to a product, newest first (what entitlements are decided from). */
  async ofPayerAndProduct(merchantId: string, payer: string, product: string): Promise<SubscriptionRecord[]> {
    const rows = await this.db.ledgerSubscription.findMany({ where: { merchantId, payer, product }, orderBy: { seq: 'desc' }, take: 50 });
    return rows.map(toRecord);
  }
}

export function toRecord(row: SubscriptionRow): SubscriptionRecord {
  return {
    ...row,
    planNote: row.planNote as PlanNote | null,
    method: row.method as 'evm' | 'stripe',
    amount: fromDbDecimal(row.amount),
    periodUnit: row.periodUnit as PeriodUnit,
    onDunningExhausted: row.onDunningExhausted as DunningOutcome,
    cancelRefund: row.cancelRefund as CancelRefund,
    state: row.state as SubscriptionState,
    cancelAt: row.cancelAt as CancelAt | null,
    cancelBy: row.cancelBy as CancelBy | null,
    refundAmount: row.refundAmount === null ? null : fromDbDecimal(row.refundAmount),
    refundState: row.refundState as RefundState | null,
  };
}

/** A raw row under its model's field names: every column here is its field's name in snake_case. */
function fieldsOf<T>(row: Record<string, unknown>): T {
  return Object.fromEntries(Object.entries(row).map(([column, value]) => [column.replace(/_([a-z])/g, (_, c: string) => c.toUpperCase()), value])) as T;
}

function toCharge(row: ChargeRow): ChargeRecord {
  return { ...row, state: row.state as ChargeState, amount: fromDbDecimal(row.amount) };
}
