import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { z } from 'zod';
import { MERCHANT_NOTICE_TYPES, MERCHANT_NOTICES_QUEUE, type MerchantNoticeMessage } from '@mp/clients';
import { queueTelemetry } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../../config/facilitator.config';
import { WebhookRepository, type NoticeOutcome } from './webhook.repository';

const CONCURRENCY = 8;
/** A notice's `data` larger than this (as JSON) is refused: it is stored with the delivery and sent on every attempt. */
const MAX_DATA_BYTES = 1024 * 1024;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const noticeSchema = z.object({
  noticeId: z.string().min(1).max(200),
  merchantId: z.string().regex(UUID, 'must be a UUID'),
  type: z.enum(MERCHANT_NOTICE_TYPES),
  // stored as UTC with milliseconds, like the createdAt of payment events
  createdAt: z.iso.datetime({ offset: true }).transform((s) => new Date(s).toISOString()),
  data: z.record(z.string(), z.unknown()),
});

/**
 * Turns merchant notices that other services publish on the `merchant-notices` queue (MerchantNoticeMessage, e.g.
 * the ledger's `reconciliation.breaks_found`) into webhook deliveries (worker role); WebhookDispatcher sends them like
 * any other, signed and retried. A notice id is delivered at most once per merchant, however often it is published.
 * A notice for a merchant that is unknown, disabled or has no webhook URL is dropped; malformed data fails the job
 * for good (it stays in the queue's failed set); a database error fails the attempt, and BullMQ retries it as the
 * publisher's job options say.
 */
@Injectable()
export class MerchantNoticesConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('MerchantNotices');
  private connection?: Redis;
  private worker?: Worker<unknown, NoticeOutcome>;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly deliveries: WebhookRepository,
  ) {}

  onApplicationBootstrap(): void {
    this.connection = new Redis(this.config.redisUrl, { maxRetriesPerRequest: null });
    this.connection.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
    this.worker = new Worker(MERCHANT_NOTICES_QUEUE, (job) => this.process(job), { connection: this.connection, prefix: this.config.queuePrefix, concurrency: CONCURRENCY, telemetry: queueTelemetry() });
    this.worker.on('failed', (job, error) => this.logger.warn(`merchant notice job ${job?.id} failed (attempt ${job?.attemptsMade}): ${error.message}`));
    this.worker.on('error', (error) => this.logger.debug(`worker: ${error.message}`));
  }

  async onModuleDestroy(): Promise<void> {
    const closed = this.worker?.close().catch(() => undefined);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 3_000).unref())]);
    this.connection?.disconnect();
  }

  private async process(job: Job<unknown, NoticeOutcome>): Promise<NoticeOutcome> {
    const notice = parseNotice(job.data);
    const outcome = await this.deliveries.enqueueNotice(notice);
    if (outcome !== 'queued') {
      const why = outcome === 'duplicate' ? 'already queued for this merchant' : 'the merchant is unknown, disabled or has no webhook URL';
      this.logger.debug(`notice ${notice.noticeId} (${notice.type}) for merchant ${notice.merchantId} not queued: ${why}`);
    }
    return outcome;
  }
}

/** The job's data as a notice, or an UnrecoverableError naming what is wrong (retrying cannot fix it). */
export function parseNotice(data: unknown): MerchantNoticeMessage {
  const parsed = noticeSchema.safeParse(data);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'data'}: ${i.message}`).join('; ');
    throw new UnrecoverableError(`malformed merchant notice: ${problems}`);
  }
  const size = Buffer.byteLength(JSON.stringify(parsed.data.data));
  if (size > MAX_DATA_BYTES) throw new UnrecoverableError(`malformed merchant notice: data is ${size} bytes of JSON, at most ${MAX_DATA_BYTES}`);
  return parsed.data;
}
