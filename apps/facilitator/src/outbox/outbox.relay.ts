import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { PAYMENT_EVENTS_QUEUE, type PaymentEventMessage } from '@mp/clients';
import { PrismaService, withTransaction } from '@mp/db';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

const BATCH = 500;
/** Published jobs stay in Redis this long after they are consumed, so a re-publish of the same event id is a no-op. */
const KEEP_DONE_SECONDS = 24 * 3600;

interface Row extends Omit<PaymentEventMessage, 'occurredAt'> {
  occurredAt: Date;
}

/**
 * Publishes the transactional outbox (payment_events) to BullMQ for the ledger (worker role). Every
 * OUTBOX_POLL_MS it locks the oldest unpublished events (SKIP LOCKED, so replicas share the work), adds one job per
 * event (job id = event id, so a re-publish after a crash is deduplicated) and marks them published in the same
 * transaction. An event is published at least once; the consumer books it once, by its id.
 */
@Injectable()
export class OutboxRelay implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(OutboxRelay.name);
  private connection?: Redis;
  private queue?: Queue<PaymentEventMessage>;
  private timer?: NodeJS.Timeout;
  private tick?: Promise<void>;
  private stopped = false;
  private lastWarning = 0;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly db: PrismaService,
  ) {}

  onModuleInit(): void {
    if (this.config.role === 'api' || !this.config.outbox.publish) return;
    this.connection = new Redis(this.config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000 });
    this.connection.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
    this.queue = new Queue(PAYMENT_EVENTS_QUEUE, {
      connection: this.connection,
      prefix: this.config.queuePrefix,
      defaultJobOptions: { removeOnComplete: { age: KEEP_DONE_SECONDS }, removeOnFail: false, attempts: 20, backoff: { type: 'exponential', delay: 500 } },
    });
    this.queue.on('error', (error: Error) => this.logger.debug(`queue: ${error.message}`));
    this.schedule(0);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.tick?.catch(() => undefined);
    await this.queue?.close().catch(() => undefined);
    this.connection?.disconnect();
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
      while (!this.stopped && (await this.publishBatch()) === BATCH);
    } catch (error) {
      const now = Date.now();
      if (now - this.lastWarning > 60_000) {
        this.lastWarning = now;
        this.logger.warn(`payment events not published yet (retrying): ${(error as Error).message}`);
      }
    }
  }

  /** One batch in one transaction: lock, publish, mark. Returns how many were published. */
  private publishBatch(): Promise<number> {
    const queue = this.queue!;
    return withTransaction(this.db, async (tx) => {
      const rows = await tx.$queryRawUnsafe<Row[]>(
        `SELECT e.id::text AS "eventId", e.type, e.payment_id::text AS "paymentId", p.merchant_id::text AS "merchantId",
                e.created_at AS "occurredAt", e.data,
                json_build_object('id', p.id, 'state', p.state, 'protocol', p.protocol, 'rail', p.rail, 'network', p.network,
                  'asset', p.asset, 'payer', p.payer, 'payTo', p.pay_to, 'amount', p.amount::text, 'nonce', p.authorization_nonce,
                  'scheme', p.scheme, 'challengeId', p.challenge_id, 'reference', p.reference, 'txHash', p.tx_hash,
                  'merchantId', p.merchant_id) AS payment
           FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id
          WHERE e.published_at IS NULL
          ORDER BY e.id
          LIMIT ${BATCH}
          FOR UPDATE OF e SKIP LOCKED`,
      );
      if (rows.length === 0) return 0;
      await queue.addBulk(
        rows.map((row) => ({ name: row.type, data: { ...row, occurredAt: row.occurredAt.toISOString() }, opts: { jobId: `event-${row.eventId}` } })),
      );
      await tx.$executeRawUnsafe(`UPDATE facilitator.payment_events SET published_at = now() WHERE id = ANY($1::bigint[])`, rows.map((r) => r.eventId));
      return rows.length;
    }, { timeout: 30_000 });
  }
}
