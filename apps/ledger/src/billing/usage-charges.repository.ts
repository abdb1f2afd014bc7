import { Injectable } from '@nestjs/common';
import { fromDbDecimal, Prisma, PrismaService, type Tx } from '@mp/db';
import { numericValueSql } from '../usage/meter';
import { canonicalDecimal } from './plan';
import type { UsagePeriodClose } from './subscription';

/** due: to draw; paid; unpaid: the prepaid balance was short (retried every scan); nothing_due: 0; too_large: never drawn. */
export type UsageChargeState = 'due' | 'paid' | 'unpaid' | 'nothing_due' | 'too_large';

/** A row of `ledger.subscription_usage_charges`. */
export interface UsageChargeRecord {
  merchantId: string;
  subscriptionId: string;
  periodIndex: number;
  componentKey: string;
  meterKey: string;
  unitAmount: string;
  /** exact decimal; null when too_large */
  quantity: string | null;
  amount: bigint;
  periodStart: Date;
  periodEnd: Date;
  state: UsageChargeState;
  drawAttempt: number;
  transferId: string | null;
  topUpNeeded: bigint | null;
  recordedAt: Date;
  triedAt: Date | null;
  paidAt: Date | null;
}

/** A usage charge to draw, with what the draw needs of its subscription. */
export interface UsageChargeToDraw extends UsageChargeRecord {
  payer: string;
  asset: string;
}

/** What a component's usage of the open period comes to so far (nothing recorded). */
export interface UsageSoFar {
  componentKey: string;
  meterKey: string;
  unitAmount: string;
  quantity: string | null;
  amount: bigint | null;
}

/** 2^256 − 1: the most atomic units an amount may be (the ledger's amounts are uint256). */
const MAX_AMOUNT = (1n << 256n) - 1n;
/** quantity is NUMERIC(140, 60): 80 integer digits. */
const MAX_QUANTITY = `1e80`;

/**
 * The usage amounts of periods' components, one row per (period, component), from $1: the periods as a jsonb array
 * of {merchant_id, subscription_id, plan_id, period_index, period_start, period_end}. One statement, exact NUMERIC:
 * each meter's aggregate (the same values and rules as its summaries, meter.ts) over the subscription's events
 * (subject = its id) with period_start <= time < period_end, then amount = ceil(aggregate × unit_amount) by integer
 * division, so an average is never rounded before it is priced (ceil(sum × price / count)). A negative aggregate
 * costs 0. too_large: the quantity or the amount would not fit its column.
 */
const USAGE_AMOUNTS = `
SELECT p.merchant_id, p.subscription_id, p.period_index, p.period_start, p.period_end, c.key AS component_key, c.meter_key,
       c.unit_amount, c.position,
       (abs(q.quantity) >= ${MAX_QUANTITY} OR y.amount > ${MAX_AMOUNT}) AS too_large,
       q.quantity, y.amount
FROM jsonb_to_recordset($1::jsonb) AS p(merchant_id uuid, subscription_id text, plan_id uuid, period_index int,
  period_start timestamptz, period_end timestamptz)
JOIN ledger.plan_usage_components c ON c.merchant_id = p.merchant_id AND c.plan_id = p.plan_id
JOIN ledger.usage_meters m ON m.merchant_id = c.merchant_id AND m.key = c.meter_key
CROSS JOIN LATERAL (SELECT string_to_array(substr(m.value_property, 3), '.') AS path) mp
CROSS JOIN LATERAL (
  SELECT CASE m.aggregation
           WHEN 'count' THEN count(*)::numeric
           WHEN 'sum' THEN sum(v.value)
           WHEN 'avg' THEN sum(v.value)
           WHEN 'min' THEN min(v.value)
           WHEN 'max' THEN max(v.value)
           WHEN 'unique_count' THEN (count(DISTINCT e.data #> mp.path) FILTER (WHERE jsonb_typeof(e.data #> mp.path) <> 'null'))::numeric
           WHEN 'latest' THEN (array_agg(v.value ORDER BY e.time DESC, e.received_at DESC, e.event_id DESC) FILTER (WHERE v.value IS NOT NULL))[1]
         END AS numerator,
         CASE WHEN m.aggregation = 'avg' THEN count(v.value) ELSE 1 END AS denominator
  FROM ledger.usage_events e
  CROSS JOIN LATERAL (SELECT ${numericValueSql('e.data', 'mp.path')} AS value) v
  WHERE e.merchant_id = p.merchant_id AND e.type = m.event_type AND e.subject = p.subscription_id
    AND e.time >= p.period_start AND e.time < p.period_end
) a
CROSS JOIN LATERAL (
  SELECT CASE WHEN a.denominator = 0 OR a.numerator IS NULL THEN 0
              WHEN m.aggregation = 'avg' THEN round(a.numerator / a.denominator::numeric(78, 20), 18)
              ELSE a.numerator END AS quantity,
         greatest(coalesce(a.numerator, 0), 0) * c.unit_amount AS priced,
         greatest(a.denominator, 1) AS per
) q
CROSS JOIN LATERAL (SELECT div(q.priced, q.per) + CASE WHEN q.priced > div(q.priced, q.per) * q.per THEN 1 ELSE 0 END AS amount) y`;

const periodsJson = (closes: UsagePeriodClose[]) =>
  JSON.stringify(
    closes.map((c) => ({
      merchant_id: c.merchantId,
      subscription_id: c.subscriptionId,
      plan_id: c.planId,
      period_index: c.periodIndex,
      period_start: c.start.toISOString(),
      period_end: c.end.toISOString(),
    })),
  );

type UsageChargeRow = Prisma.SubscriptionUsageChargeGetPayload<object>;

/**
 * The usage charges of subscriptions (`ledger.subscription_usage_charges`): recorded once per subscription, period
 * and component by the transaction that closes the period (the key and ON CONFLICT DO NOTHING), then drawn from the
 * payer's prepaid balance by the renewal scan (UsageCollector).
 */
@Injectable()
export class UsageChargesRepository {
  constructor(private readonly db: PrismaService) {}

  /** Records the closed periods' usage charges, in the caller's transaction; a period recorded before is left as it is. */
  async recordClosed(tx: Tx, closes: UsagePeriodClose[]): Promise<void> {
    if (!closes.length) return;
    // raw: one INSERT … SELECT computes every aggregate and amount in PostgreSQL
    await tx.$executeRawUnsafe(
      `INSERT INTO ledger.subscription_usage_charges (merchant_id, subscription_id, period_index, component_key, meter_key,
         unit_amount, quantity, amount, period_start, period_end, state)
       SELECT merchant_id, subscription_id, period_index, component_key, meter_key, unit_amount,
         CASE WHEN too_large THEN NULL ELSE quantity END, CASE WHEN too_large THEN 0 ELSE amount END, period_start, period_end,
         CASE WHEN too_large THEN 'too_large' WHEN amount = 0 THEN 'nothing_due' ELSE 'due' END
       FROM (${USAGE_AMOUNTS}) AS usage
       ON CONFLICT (merchant_id, subscription_id, period_index, component_key) DO NOTHING`,
      periodsJson(closes),
    );
  }

  /** What each component's usage of [start, end) comes to, computed as the close would record it; nothing is written. */
  async soFar(open: UsagePeriodClose): Promise<UsageSoFar[]> {
    // raw: the same statement as recordClosed's, read
    const rows = await this.db.$queryRawUnsafe<
      { component_key: string; meter_key: string; unit_amount: Prisma.Decimal; quantity: Prisma.Decimal; amount: Prisma.Decimal; too_large: boolean }[]
    >(`SELECT component_key, meter_key, unit_amount, quantity, amount, too_large FROM (${USAGE_AMOUNTS}) AS usage ORDER BY position`, periodsJson([open]));
    return rows.map((r) => ({
      componentKey: r.component_key,
      meterKey: r.meter_key,
      unitAmount: decimalText(r.unit_amount),
      quantity: r.too_large ? null : decimalText(r.quantity),
      amount: r.too_large ? null : fromDbDecimal(r.amount),
    }));
  }

  /** The subscription's usage charges, by period then component. */
  async ofSubscription(merchantId: string, subscriptionId: string): Promise<UsageChargeRecord[]> {
    const rows = await this.db.subscriptionUsageCharge.findMany({
      where: { merchantId, subscriptionId },
      orderBy: [{ periodIndex: 'asc' }, { componentKey: 'asc' }],
    });
    return rows.map(toRecord);
  }

  /**
   * Up to `limit` charges still to draw, with their subscription's payer and asset: those never tried first, then the
   * least recently tried, so that many long-unpaid charges never keep a new one waiting.
   */
  async toDraw(limit: number): Promise<UsageChargeToDraw[]> {
    const rows = await this.db.subscriptionUsageCharge.findMany({
      where: { state: { in: ['due', 'unpaid'] } },
      orderBy: [{ triedAt: { sort: 'asc', nulls: 'first' } }, { recordedAt: 'asc' }],
      take: limit,
      include: { subscription: { select: { payer: true, asset: true } } },
    });
    return rows.map(({ subscription, ...row }) => ({ ...toRecord(row), payer: subscription.payer, asset: subscription.asset }));
  }

  /**
   * Outcomes are written for the attempt they are about (the condition on draw_attempt and state), so two scans
   * drawing at once record one outcome. A charge is `due` while the transfer of its draw_attempt may have been made
   * (it is resolved by making it again: the core answers a made one `exists`), `unpaid` while it has not.
   */
  async markPaid(c: UsageChargeRecord, transferId: string, at: Date): Promise<boolean> {
    return this.update(c, 'due', { state: 'paid', transferId, topUpNeeded: null, triedAt: at, paidAt: at });
  }

  /** The draw of its attempt was refused for want of funds (that transfer id stays refused): unpaid, the next try a new id. */
  async markRefused(c: UsageChargeRecord, topUpNeeded: bigint, at: Date): Promise<boolean> {
    return this.update(c, 'due', { state: 'unpaid', topUpNeeded: topUpNeeded.toString(), triedAt: at, drawAttempt: c.drawAttempt + 1 });
  }

  /** Still short, seen without drawing: what the balance lacks now. */
  async markShort(c: UsageChargeRecord, topUpNeeded: bigint, at: Date): Promise<boolean> {
    return this.update(c, 'unpaid', { topUpNeeded: topUpNeeded.toString(), triedAt: at });
  }

  /** About to draw an unpaid charge's attempt: due again, so that a crash after the draw is resolved by the next scan. */
  async markDrawing(c: UsageChargeRecord): Promise<boolean> {
    return this.update(c, 'unpaid', { state: 'due' });
  }

  private async update(c: UsageChargeRecord, from: 'due' | 'unpaid', data: Prisma.SubscriptionUsageChargeUpdateManyMutationInput): Promise<boolean> {
    const { count } = await this.db.subscriptionUsageCharge.updateMany({ where: { ...keyOf(c), drawAttempt: c.drawAttempt, state: from }, data });
    return count === 1;
  }
}

const keyOf = (c: UsageChargeRecord) => ({
  merchantId: c.merchantId,
  subscriptionId: c.subscriptionId,
  periodIndex: c.periodIndex,
  componentKey: c.componentKey,
});

/** A NUMERIC as an exact decimal string: never an exponent, no trailing zeros. */
const decimalText = (value: Prisma.Decimal) => canonicalDecimal(value.toFixed());

function toRecord(row: UsageChargeRow): UsageChargeRecord {
  return {
    ...row,
    unitAmount: decimalText(row.unitAmount),
    quantity: row.quantity === null ? null : decimalText(row.quantity),
    amount: fromDbDecimal(row.amount),
    state: row.state as UsageChargeState,
    topUpNeeded: row.topUpNeeded === null ? null : fromDbDecimal(row.topUpNeeded),
  };
}
