import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Queue } from 'bullmq';
import {
  inBatches,
  PAYMENT_EVENT_BATCH_JOB,
  PAYMENT_EVENT_JOB_OPTIONS,
  PAYMENT_EVENTS_ACKS_QUEUE,
  PAYMENT_EVENTS_QUEUE,
  parsePaymentEventMessage,
  paymentEventBatchJobId,
  paymentEventJobId,
  type PaymentEventJobData,
  type PaymentEventMessage,
} from '@mp/clients';
import { PrismaService, withTransaction, type Tx } from '@mp/db';
import { FacilitatorMetrics, jobTraceOptions, type TraceContext, withTraceContext } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { PAYMENT_COLUMNS, paymentSnapshot, type PaymentRow } from '../merchants/payment-view';
import { OutboxMetrics } from './outbox.metrics';

const BATCH = 500;
/**
 * Most events in one `batch` job: the ledger books a job's events in a few shared transactions (its holds, its posts,
 * its subscription outcomes), and this keeps each of them a size that commits quickly.
 */
export const EVENTS_PER_JOB = 200;
/**
 * A poll that finds fewer events publishes each as a job of its own, in the trace it was written in (while tracing is
 * on): batches pay under load, and a quiet system keeps every payment's booking in the payment's trace.
 */
export const MIN_EVENTS_PER_BATCH_JOB = 10;
/** Most unacknowledged events published again per poll and worker: a ledger away for hours comes back to a trickle, not a flood. */
export const REPUBLISH_BATCH = 100;
/**
 * The queues to the ledger and back (on the app's QueueModule): for the relay and its acknowledgements, and bull-board.
 * Published jobs are retried by the ledger's worker with backoff, kept a day once consumed (a re-publish of the same
 * job id is a no-op), and kept once failed for an operator (PAYMENT_EVENT_JOB_OPTIONS).
 */
export const PaymentEventsQueuesModule = BullModule.registerQueue(
  { name: PAYMENT_EVENTS_QUEUE, defaultJobOptions: PAYMENT_EVENT_JOB_OPTIONS },
  { name: PAYMENT_EVENTS_ACKS_QUEUE },
);

/** An outbox event with its payment's row (`id`, `state`, … are the payment's). */
interface Row extends PaymentRow {
  eventId: string;
  type: string;
  paymentId: string;
  occurredAt: Date;
  data: unknown;
  traceContext: TraceContext | null;
}

interface Job {
  name: string;
  data: PaymentEventMessage;
  opts: { jobId: string };
}

interface BatchJob {
  name: string;
  data: PaymentEventJobData;
  opts: { jobId: string; telemetry?: { metadata: string } };
}

/** What a re-publish did with an unacknowledged event's job, by the job's state in Redis; `invalid`: not published (a bug). */
type Republish = 'added' | 'retried' | 'in_flight' | 'failed' | 'invalid';

const EVENT_ROWS = `SELECT e.id::text AS "eventId", e.type, e.payment_id::text AS "paymentId", e.created_at AS "occurredAt", e.data, e.trace_context AS "traceContext", ${PAYMENT_COLUMNS}
           FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id`;

/**
 * Publishes the transactional outbox (payment_events) to BullMQ for the ledger (worker role, OUTBOX_PUBLISH). Every
 * OUTBOX_POLL_MS it locks the oldest unpublished events (SKIP LOCKED, so replicas share the work), adds them as `batch`
 * jobs of up to EVENTS_PER_JOB events (fewer than MIN_EVENTS_PER_BATCH_JOB: a job of its own each; either id names its
 * events, so a re-publish after a crash is deduplicated) and marks them published in the same transaction. An event is done only once the ledger acknowledges it (OutboxAcks): one published but unacknowledged
 * for OUTBOX_REPUBLISH_AFTER_MS is published again, because Redis may have lost its job (a flush, a failover without
 * persistence) or the acknowledgement. The consumer books an event once, by its id, however often it arrives.
 */
@Injectable()
export class OutboxRelay implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(OutboxRelay.name);
  private metrics?: OutboxMetrics;
  private timer?: NodeJS.Timeout;
  private tick?: Promise<void>;
  private stopped = false;
  private lastWarning = 0;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly db: PrismaService,
    private readonly facilitatorMetrics: FacilitatorMetrics,
    @InjectQueue(PAYMENT_EVENTS_QUEUE) private readonly queue: Queue<PaymentEventJobData>,
  ) {}

  onModuleInit(): void {
    this.metrics = new OutboxMetrics(this.facilitatorMetrics.metrics, this.db);
    this.schedule(0);
  }

  /** The poll stops and the batch in flight ends here; the queue closes after, on the platform's shutdown path. */
  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.metrics?.unregister();
    await this.tick?.catch(() => undefined);
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.tick = this.publishAll().finally(() => this.schedule(this.config.outbox.pollMs));
    }, ms);
    this.timer.unref();
  }

  private async publishAll(): Promise<void> {
    try {
      const due = await this.due();
      while (due.fresh && !this.stopped && (await this.publishBatch()) === BATCH);
      if (due.stale && !this.stopped) await this.republishBatch();
    } catch (error) {
      const now = Date.now();
      if (now - this.lastWarning > 60_000) {
        this.lastWarning = now;
        this.logger.warn(`payment events not published yet (retrying): ${(error as Error).message}`);
      }
    }
  }

  /**
   * Whether any event waits to be published, or to be published again: one prepared statement (PrismaService.prepared),
   * so a poll that finds nothing opens no transaction (an idle facilitator made 15 of them a second).
   */
  private async due(): Promise<{ fresh: boolean; stale: boolean }> {
    const [due] = await this.db.prepared<{ fresh: boolean; stale: boolean }>(
      'outbox_due',
      `SELECT EXISTS (SELECT 1 FROM facilitator.payment_events WHERE published_at IS NULL) AS fresh,
              $1::bigint > 0 AND EXISTS (SELECT 1 FROM facilitator.payment_events
                WHERE acknowledged_at IS NULL AND published_at IS NOT NULL AND published_at < now() - make_interval(secs => $1::double precision / 1000)) AS stale`,
      [this.config.outbox.republishAfterMs],
    );
    return due;
  }

  /** One batch in one transaction: lock, publish, mark. Returns how many were published. */
  private publishBatch(): Promise<number> {
    return withTransaction(
      this.db,
      async (tx) => {
        const rows = await tx.$queryRawUnsafe<Row[]>(`${EVENT_ROWS} WHERE e.published_at IS NULL ORDER BY e.id LIMIT ${BATCH} FOR UPDATE OF e SKIP LOCKED`);
        if (rows.length === 0) return 0;
        // one that breaks the contract is marked too, so it does not hold up the rest; being unacknowledged, it is checked
        // (and reported) again every OUTBOX_REPUBLISH_AFTER_MS, and published once a fixed facilitator builds it
        const built = rows.flatMap((row) => {
          const job = this.job(row);
          return job ? [{ job, row }] : [];
        });
        const jobs: BatchJob[] = [];
        for (const chunk of inBatches(built, built.length < MIN_EVENTS_PER_BATCH_JOB ? 1 : EVENTS_PER_JOB)) {
          // a lone event as before batches, in the trace it was written in (while tracing is on), so the ledger's
          // booking joins the payment's; a batch belongs to many payments' traces, so to none
          if (chunk.length === 1) jobs.push({ ...chunk[0].job, opts: jobTraceOptions(chunk[0].job.opts, chunk[0].row.traceContext) });
          else {
            const events = chunk.map(({ job }) => job.data);
            jobs.push({ name: PAYMENT_EVENT_BATCH_JOB, data: { events }, opts: { jobId: paymentEventBatchJobId(events) } });
          }
        }
        if (jobs.length) await this.queue.addBulk(jobs);
        await tx.$executeRawUnsafe(
          `UPDATE facilitator.payment_events SET published_at = now() WHERE id = ANY($1::bigint[])`,
          rows.map((r) => r.eventId),
        );
        return rows.length;
      },
      { timeout: 30_000 },
    );
  }

  /**
   * Publishes again (at most REPUBLISH_BATCH) events published more than OUTBOX_REPUBLISH_AFTER_MS ago and not
   * acknowledged, each alone (its single-event job, whether it was first published alone or in a batch), by what
   * became of that job: gone from Redis → added anew under the same job id (BullMQ only
   * dedups while the job exists); completed (the acknowledgement was lost) → moved back to waiting, so the ledger
   * acknowledges it again; waiting, active or delayed → left alone, still on its way; failed (the ledger refused it, or
   * it ran out of attempts) → left for an operator (`npm run ledger:replay`). Each is looked at again only after
   * another OUTBOX_REPUBLISH_AFTER_MS.
   */
  private republishBatch(): Promise<number> {
    return withTransaction(
      this.db,
      async (tx) => {
        const rows = await tx.$queryRawUnsafe<Row[]>(
          `${EVENT_ROWS}
          WHERE e.acknowledged_at IS NULL AND e.published_at IS NOT NULL AND e.published_at < now() - make_interval(secs => $1::double precision / 1000)
          ORDER BY e.published_at, e.id
          LIMIT ${REPUBLISH_BATCH}
          FOR UPDATE OF e SKIP LOCKED`,
          this.config.outbox.republishAfterMs,
        );
        if (rows.length === 0) return 0;
        const outcomes = await Promise.all(rows.map((row) => this.republish(row)));
        const republished = rows.filter((_, i) => outcomes[i] === 'added' || outcomes[i] === 'retried').map((r) => r.eventId);
        await this.markRepublished(
          tx,
          rows.map((r) => r.eventId),
          republished,
        );
        const failed = rows.filter((_, i) => outcomes[i] === 'failed').map((r) => r.eventId);
        if (republished.length)
          this.logger.warn(
            `payment events ${summary(republished)} not acknowledged by the ledger in ${this.config.outbox.republishAfterMs} ms: published again`,
          );
        if (failed.length)
          this.logger.warn(`payment events ${summary(failed)} not acknowledged: their jobs failed in the ledger's queue (npm run ledger:replay)`);
        this.metrics?.republished.inc(republished.length);
        return rows.length;
      },
      { timeout: 30_000 },
    );
  }

  private async republish(row: Row): Promise<Republish> {
    const job = this.job(row);
    if (!job) return 'invalid';
    const state = await this.queue.getJobState(job.opts.jobId);
    if (state === 'failed') return 'failed';
    if (state !== 'unknown' && state !== 'completed') return 'in_flight';
    // a completed job removed by age between the two reads is added anew too
    const completed = state === 'completed' ? await this.queue.getJob(job.opts.jobId) : undefined;
    if (!completed) {
      await withTraceContext(row.traceContext, () => this.queue.add(job.name, job.data, job.opts));
      return 'added';
    }
    // a fresh set of attempts, as a new job would have
    await completed.retry('completed', { resetAttemptsMade: true, resetAttemptsStarted: true });
    return 'retried';
  }

  private async markRepublished(tx: Tx, looked: string[], republished: string[]): Promise<void> {
    await tx.$executeRawUnsafe(
      `UPDATE facilitator.payment_events SET published_at = now(), republish_count = republish_count + CASE WHEN id = ANY($2::bigint[]) THEN 1 ELSE 0 END
        WHERE id = ANY($1::bigint[])`,
      looked,
      republished,
    );
  }

  /**
   * The event's job, built through the payment-events contract the ledger parses with; undefined when it does not
   * parse: a bug in what the facilitator wrote, reported loudly and not published (the ledger would refuse it).
   */
  private job(row: Row): Job | undefined {
    const built = parsePaymentEventMessage({
      eventId: row.eventId,
      type: row.type,
      paymentId: row.paymentId,
      merchantId: row.merchantId,
      occurredAt: row.occurredAt.toISOString(),
      data: row.data,
      payment: paymentSnapshot(row),
    });
    if (!built.ok) {
      this.logger.error(`payment event ${row.eventId} (${row.type} of ${row.paymentId}) breaks the payment-events contract, not published: ${built.reason}`);
      return undefined;
    }
    return { name: built.message.type, data: built.message, opts: { jobId: paymentEventJobId(row.eventId, row.paymentId) } };
  }
}

function summary(ids: string[]): string {
  return ids.length <= 5 ? ids.join(', ') : `${ids.slice(0, 5).join(', ')} and ${ids.length - 5} more`;
}
