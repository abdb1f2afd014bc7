import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Queue } from 'bullmq';
import { CHANNEL_EVENT_JOB_OPTIONS, CHANNEL_EVENTS_QUEUE, channelEventJobId, parseChannelEventMessage, type ChannelEventMessage } from '@mp/clients';
import { PrismaService, withTransaction } from '@mp/db';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

const BATCH = 500;

/** The queue to the ledger (on the app's QueueModule): retried by the consumer with backoff, kept a day once consumed. */
export const ChannelEventsQueueModule = BullModule.registerQueue({ name: CHANNEL_EVENTS_QUEUE, defaultJobOptions: CHANNEL_EVENT_JOB_OPTIONS });

export interface ChannelEventRow {
  eventId: string;
  channelId: string;
  type: string;
  data: unknown;
  snapshot: unknown;
  occurredAt: Date;
}

/**
 * Publishes the channel outbox (facilitator.channel_events) to CHANNEL_EVENTS_QUEUE (worker role, OUTBOX_PUBLISH):
 * every OUTBOX_POLL_MS it locks the oldest unpublished rows (SKIP LOCKED, so replicas share the work), validates each
 * message against the contract (channelEventMessageSchema), adds them in id order under their job ids (a re-publish
 * after a crash is a no-op while the job exists) and marks them published in the same transaction. A row that breaks
 * the contract is logged and left unpublished (a bug to fix; later rows of its channel wait, so none is booked out of
 * order).
 */
@Injectable()
export class ChannelEventsRelay implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(ChannelEventsRelay.name);
  private timer?: NodeJS.Timeout;
  private tick?: Promise<void>;
  private stopped = false;
  private lastWarning = 0;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly db: PrismaService,
    @InjectQueue(CHANNEL_EVENTS_QUEUE) private readonly queue: Queue<ChannelEventMessage>,
  ) {}

  onModuleInit(): void {
    this.schedule(0);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
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
      // One prepared statement first, so a poll that finds nothing opens no transaction.
      const [{ due }] = await this.db.prepared<{ due: boolean }>(
        'channel_events_due',
        'SELECT EXISTS (SELECT 1 FROM facilitator.channel_events WHERE published_at IS NULL) AS due',
        [],
      );
      while (due && !this.stopped && (await this.publishBatch()) === BATCH);
    } catch (error) {
      const now = Date.now();
      if (now - this.lastWarning > 60_000) {
        this.lastWarning = now;
        this.logger.warn(`channel events not published yet (retrying): ${(error as Error).message}`);
      }
    }
  }

  /** One batch in one transaction: lock, validate, publish, mark. Returns how many rows it looked at. */
  publishBatch(): Promise<number> {
    return withTransaction(
      this.db,
      async (tx) => {
        const rows = await tx.$queryRawUnsafe<ChannelEventRow[]>(
          `SELECT id::text AS "eventId", channel_id AS "channelId", type, data, snapshot, created_at AS "occurredAt"
             FROM facilitator.channel_events WHERE published_at IS NULL ORDER BY id LIMIT ${BATCH} FOR UPDATE SKIP LOCKED`,
        );
        if (rows.length === 0) return 0;
        const blocked = new Set<string>();
        const jobs: { name: string; data: ChannelEventMessage; opts: { jobId: string } }[] = [];
        for (const row of rows) {
          if (blocked.has(row.channelId)) continue;
          const parsed = channelEventMessageOf(row);
          if (!parsed.ok) {
            blocked.add(row.channelId);
            this.logger.error(`channel event ${row.eventId} (${row.type}) breaks the channel-events contract, not published: ${parsed.reason}`);
            continue;
          }
          jobs.push({ name: parsed.message.type, data: parsed.message, opts: { jobId: channelEventJobId(row.eventId, row.channelId) } });
        }
        if (jobs.length) await this.queue.addBulk(jobs);
        await tx.$executeRawUnsafe(
          `UPDATE facilitator.channel_events SET published_at = now() WHERE id = ANY($1::bigint[])`,
          jobs.map((j) => j.data.eventId),
        );
        return rows.length;
      },
      { timeout: 30_000 },
    );
  }
}

/** An outbox row as the message the ledger consumes, checked against the contract. */
export function channelEventMessageOf(row: ChannelEventRow): ReturnType<typeof parseChannelEventMessage> {
  return parseChannelEventMessage({ eventId: row.eventId, type: row.type, occurredAt: row.occurredAt.toISOString(), data: row.data, channel: row.snapshot });
}
