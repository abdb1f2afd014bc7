import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { PrismaService, withTransaction, type Tx } from '@mp/db';
import type { MerchantNoticeMessage, MerchantNoticeType } from '@mp/clients';
import { PAYMENT_VIEW_COLUMNS, toPaymentView, type PaymentView, type PaymentViewRow } from '../payment-view';

/**
 * The payment events merchants are told about: final outcomes only. Outcomes, `payment.reorged` (the correction of a
 * confirmation whose block a reorg took back), and a refund's outcome (`payment.refunded`, `payment.refund_failed`;
 * not `payment.refund_pending`, which POST /refunds already answered).
 */
export const PAYMENT_WEBHOOK_TYPES = [
  'payment.confirmed',
  'payment.failed',
  'payment.expired',
  'payment.reorged',
  'payment.refunded',
  'payment.refund_failed',
] as const;
export type PaymentWebhookType = (typeof PAYMENT_WEBHOOK_TYPES)[number];

/**
 * What a merchant receives (the exact JSON is stored with the delivery and re-sent byte for byte): a final payment
 * event (PaymentWebhookEvent), or a notice another service published for the merchant (NoticeWebhookEvent).
 */
interface WebhookEventBase {
  /** the delivery id, also the Webhook-Id header; the same on every retry */
  id: string;
  /** when the event happened (ISO 8601) */
  createdAt: string;
}

export interface PaymentWebhookEvent extends WebhookEventBase {
  type: PaymentWebhookType;
  /** `refund`: on refund events, the event's data (refundId, amount, reason, idempotencyKey, refundTo, reference, …) */
  data: { payment: PaymentView; refund?: Record<string, unknown> };
}

/**
 * A merchant notice. `data` is the publisher's, passed through as is; for `reconciliation.breaks_found` the ledger
 * sends `{ runId, merchantId, summary, newBreaks, reportPath }`.
 */
export interface NoticeWebhookEvent extends WebhookEventBase {
  type: MerchantNoticeType;
  data: Record<string, unknown>;
}

/** What became of a published notice. */
export type NoticeOutcome =
  /** a delivery was created */
  | 'queued'
  /** this merchant already has a delivery for this notice id */
  | 'duplicate'
  /** the merchant is unknown, disabled or has no webhook URL: nothing to deliver, ever */
  | 'skipped';

export interface DueDelivery {
  id: string;
  url: string;
  body: string;
  attempt: number;
  secret: string;
  merchantDisabled: boolean;
}

export type AttemptOutcome =
  | { kind: 'delivered'; responseStatus: number; durationMs: number }
  | { kind: 'retry'; responseStatus: number | null; error: string; durationMs: number; delayMs: number }
  | { kind: 'failed'; responseStatus: number | null; error: string; durationMs: number };

const CURSOR = 'webhooks';

/** A place in the outbox: events are read in (xact_id, id) order. */
interface OutboxPosition {
  xactId: string;
  eventId: string;
}

interface ScannedEvent extends PaymentViewRow {
  eventId: string;
  xactId: string;
  type: string;
  eventAt: Date;
  eventData: Record<string, unknown> | string | null;
  /** its transaction ended before every transaction still open: nothing can still commit before it in cursor order */
  settled: boolean;
  url: string | null;
  merchantDisabled: boolean | null;
  queued: boolean;
}

/**
 * The webhook side of the payment_events outbox. Enqueueing reads events above a cursor (one reader at a time:
 * the cursor row is locked with SKIP LOCKED) and creates one delivery per (merchant, final event). Events are read
 * in (xact_id, id) order, xact_id being the inserting transaction: an event becomes visible when its transaction
 * commits, which may be after an event with a higher id, so an id cursor alone would skip it. Every transaction
 * still open (or yet to insert) has an xact_id at least the snapshot's xmin, so the cursor moves only past events
 * whose xact_id is below it; newer events are delivered at once and read again (without a second delivery) until
 * then. Merchant notices (from the merchant-notices queue) become deliveries one at a time, once per (merchant,
 * notice id). Deliveries are claimed with FOR UPDATE SKIP LOCKED and leased by pushing next_attempt_at ahead, so any
 * number of workers can send without sending one attempt twice.
 */
@Injectable()
export class WebhookRepository {
  constructor(private readonly db: PrismaService) {}

  async ensureCursor(): Promise<void> {
    await this.db.outboxCursor.createMany({ data: { name: CURSOR, lastEventId: 0n }, skipDuplicates: true });
  }

  /**
   * Creates the deliveries of new events, reading up to `maxPages` pages of `batch` events above the cursor.
   * Returns true when it stopped with settled events still unread (call again at once).
   */
  enqueue(batch: number, maxPages = 10): Promise<boolean> {
    return withTransaction(this.db, async (tx) => {
      const cursor = await tx.$queryRawUnsafe<OutboxPosition[]>(
        `SELECT last_xact_id::text AS "xactId", last_event_id::text AS "eventId" FROM facilitator.outbox_cursors WHERE name = $1 FOR UPDATE SKIP LOCKED`,
        CURSOR,
      );
      if (!cursor.length) return false; // another worker is enqueueing right now
      let from = cursor[0];
      let last: OutboxPosition | undefined;
      let leading = true;
      let full = false;
      for (let page = 0; page < maxPages; page++) {
        const events = await this.scan(tx, from, batch);
        await this.insertDeliveries(tx, events);
        // The cursor moves past the leading run of settled events: nothing can still appear before them.
        for (const event of events) {
          if (leading && event.settled) last = { xactId: event.xactId, eventId: event.eventId };
          else leading = false;
        }
        full = events.length === batch;
        if (!full) break;
        const end = events[events.length - 1];
        from = { xactId: end.xactId, eventId: end.eventId };
      }
      if (last) {
        await tx.$executeRawUnsafe(
          `UPDATE facilitator.outbox_cursors SET last_xact_id = $2::xid8, last_event_id = $3::bigint, updated_at = now() WHERE name = $1`,
          CURSOR,
          last.xactId,
          last.eventId,
        );
      }
      return full && leading;
    });
  }

  /** The merchant's webhook URL (null: none). */
  async webhookUrl(merchantId: string): Promise<string | null> {
    const merchant = await this.db.merchant.findUnique({ where: { id: merchantId }, select: { webhookUrl: true } });
    return merchant?.webhookUrl ?? null;
  }

  /** Where the merchant's next deliveries go (already queued ones keep their URL); null stops new ones. */
  async setWebhookUrl(merchantId: string, url: string | null): Promise<void> {
    await this.db.merchant.updateMany({ where: { id: merchantId }, data: { webhookUrl: url } });
  }

  /** The cursor's position, for tests and diagnostics (SQL: Prisma Client cannot read an xid8 column). */
  async cursor(): Promise<OutboxPosition | undefined> {
    const rows = await this.db.$queryRawUnsafe<OutboxPosition[]>(
      `SELECT last_xact_id::text AS "xactId", last_event_id::text AS "eventId" FROM facilitator.outbox_cursors WHERE name = $1`,
      CURSOR,
    );
    return rows[0];
  }

  private scan(tx: Tx, after: OutboxPosition, batch: number): Promise<ScannedEvent[]> {
    // One statement, one snapshot: the events it sees and the xmin it compares them with belong together.
    return tx.$queryRawUnsafe<ScannedEvent[]>(
      `SELECT e.id::text AS "eventId", e.xact_id::text AS "xactId", e.type, e.created_at AS "eventAt", e.data AS "eventData",
              e.xact_id < pg_snapshot_xmin(pg_current_snapshot()) AS settled,
              m.webhook_url AS url, m.disabled_at IS NOT NULL AS "merchantDisabled",
              EXISTS (SELECT 1 FROM facilitator.webhook_deliveries d WHERE d.merchant_id = p.merchant_id AND d.event_id = e.id) AS queued,
              ${PAYMENT_VIEW_COLUMNS}
         FROM facilitator.payment_events e
         JOIN facilitator.payments p ON p.id = e.payment_id
         LEFT JOIN facilitator.merchants m ON m.id = p.merchant_id
        WHERE (e.xact_id, e.id) > ($1::xid8, $2::bigint)
        ORDER BY e.xact_id, e.id
        LIMIT $3`,
      after.xactId,
      after.eventId,
      batch,
    );
  }

  private async insertDeliveries(tx: Tx, events: ScannedEvent[]): Promise<void> {
    const wanted = events.filter(
      (e) => (PAYMENT_WEBHOOK_TYPES as readonly string[]).includes(e.type) && e.merchantId && e.url && !e.merchantDisabled && !e.queued,
    );
    if (!wanted.length) return;
    const deliveries = wanted.map((e) => {
      const id = randomUUID();
      const refund = e.type.startsWith('payment.refund') ? { refund: eventDataOf(e) } : {};
      const event: PaymentWebhookEvent = {
        id,
        type: e.type as PaymentWebhookType,
        createdAt: e.eventAt.toISOString(),
        data: { payment: paymentAsOf(e), ...refund },
      };
      return { id, merchantId: e.merchantId as string, eventId: e.eventId, type: e.type, url: e.url as string, body: JSON.stringify(event) };
    });
    await tx.webhookDelivery.createMany({
      data: deliveries.map((d) => ({ id: d.id, merchantId: d.merchantId, eventId: BigInt(d.eventId), eventType: d.type, url: d.url, body: d.body })),
      skipDuplicates: true,
    });
  }

  /**
   * Creates the deliveries of merchant notices (validated by the caller), in one statement: each to its merchant's
   * current webhook URL, once per (merchant, notice id) however often the notice is published; nothing for a merchant
   * that is unknown, disabled or has no webhook URL. One outcome per notice, in order.
   */
  async enqueueNotices(notices: readonly MerchantNoticeMessage[]): Promise<NoticeOutcome[]> {
    if (!notices.length) return [];
    const ids = notices.map(() => randomUUID());
    const bodies = notices.map((notice, i) => {
      const event: NoticeWebhookEvent = { id: ids[i]!, type: notice.type, createdAt: notice.createdAt, data: notice.data };
      return JSON.stringify(event);
    });
    // one statement (SQL: Prisma Client cannot insert from a select): every subscription renewal sends the merchant a
    // notice, and a lookup then an insert in a transaction was four round trips each; a renewal scan's notices come
    // in batches, one statement for all of them
    const rows = await this.db.$queryRaw<{ merchant: boolean; inserted: boolean }[]>`
      WITH n AS (
        SELECT * FROM unnest(${ids}::uuid[], ${notices.map((n) => n.merchantId)}::uuid[], ${notices.map((n) => n.noticeId)}::text[],
                             ${notices.map((n) => n.type)}::text[], ${bodies}::text[])
                 WITH ORDINALITY AS n(id, merchant_id, notice_id, event_type, body, ord)),
      m AS (
        SELECT n.*, merchant.webhook_url FROM n JOIN facilitator.merchants merchant
            ON merchant.id = n.merchant_id AND merchant.disabled_at IS NULL AND coalesce(merchant.webhook_url, '') <> ''),
      ins AS (
        INSERT INTO facilitator.webhook_deliveries (id, merchant_id, notice_id, event_type, url, body)
        SELECT id, merchant_id, notice_id, event_type, webhook_url, body FROM m ORDER BY ord
        ON CONFLICT DO NOTHING
        RETURNING id)
      SELECT m.id IS NOT NULL AS merchant, ins.id IS NOT NULL AS inserted
        FROM n LEFT JOIN m ON m.ord = n.ord LEFT JOIN ins ON ins.id = n.id
       ORDER BY n.ord`;
    return rows.map((row) => (!row.merchant ? 'skipped' : row.inserted ? 'queued' : 'duplicate'));
  }

  /**
   * Takes up to `limit` deliveries that are due, counting the attempt and leasing them for `leaseMs`. SQL: row locks
   * with SKIP LOCKED, and the lease is on the database's clock, which every replica shares.
   */
  claimDue(limit: number, leaseMs: number): Promise<DueDelivery[]> {
    return this.db.$queryRawUnsafe<DueDelivery[]>(
      `WITH due AS (
         SELECT id FROM facilitator.webhook_deliveries
          WHERE status = 'pending' AND next_attempt_at <= now()
          ORDER BY next_attempt_at
          LIMIT $1
          FOR UPDATE SKIP LOCKED)
       UPDATE facilitator.webhook_deliveries d
          SET attempt = d.attempt + 1, next_attempt_at = now() + ($2::int * interval '1 millisecond')
         FROM due, facilitator.merchants m
        WHERE d.id = due.id AND m.id = d.merchant_id
       RETURNING d.id, d.url, d.body, d.attempt, m.webhook_secret AS secret, m.disabled_at IS NOT NULL AS "merchantDisabled"`,
      limit,
      leaseMs,
    );
  }

  /** Records one attempt in the log and its effect on the delivery, in one statement (SQL: a retry's lease is on the database's clock). */
  async record(id: string, attempt: number, outcome: AttemptOutcome): Promise<void> {
    const error = outcome.kind === 'delivered' ? null : outcome.error.slice(0, 500);
    const update =
      outcome.kind === 'delivered'
        ? `UPDATE facilitator.webhook_deliveries SET status = 'delivered', delivered_at = now(), response_status = $3, error = NULL
            WHERE id = $1::uuid AND status = 'pending' RETURNING id`
        : outcome.kind === 'retry'
          ? `UPDATE facilitator.webhook_deliveries SET response_status = $3, error = $4, next_attempt_at = now() + ($6::int * interval '1 millisecond')
              WHERE id = $1::uuid AND status = 'pending' AND attempt = $2 RETURNING id`
          : `UPDATE facilitator.webhook_deliveries SET status = 'failed', response_status = $3, error = $4
              WHERE id = $1::uuid AND status = 'pending' AND attempt = $2 RETURNING id`;
    await this.db.$executeRawUnsafe(
      `WITH updated AS (${update})
       INSERT INTO facilitator.webhook_delivery_attempts (delivery_id, attempt, response_status, error, duration_ms)
       VALUES ($1::uuid, $2, $3, $4, $5)`,
      id,
      attempt,
      outcome.responseStatus,
      error,
      outcome.durationMs,
      ...(outcome.kind === 'retry' ? [outcome.delayMs] : []),
    );
  }
}

/** The payment as of the event: the row, with the outcome the event recorded (the row may have moved on since). */
function paymentAsOf(e: ScannedEvent): PaymentView {
  const view = toPaymentView(e);
  const data = eventDataOf(e);
  const text = (value: unknown) => (typeof value === 'string' ? value : null);
  switch (e.type) {
    case 'payment.confirmed':
      return { ...view, state: 'confirmed', txHash: text(data.txHash) ?? view.txHash, errorReason: null, errorMessage: null };
    case 'payment.failed':
      return {
        ...view,
        state: 'failed',
        txHash: text(data.txHash),
        errorReason: text(data.reason) ?? view.errorReason,
        errorMessage: text(data.message) ?? view.errorMessage,
      };
    case 'payment.reorged':
      return { ...view, state: 'submitted', errorReason: null, errorMessage: null };
    case 'payment.refunded':
    case 'payment.refund_failed':
      // a refund changes nothing about the payment itself: it stays confirmed
      return view;
    default:
      return { ...view, state: 'expired', errorMessage: text(data.message) ?? view.errorMessage };
  }
}

function eventDataOf(e: ScannedEvent): Record<string, unknown> {
  return (typeof e.eventData === 'string' ? JSON.parse(e.eventData) : (e.eventData ?? {})) as Record<string, unknown>;
}
