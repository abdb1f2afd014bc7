import { BullModule, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type OnModuleDestroy } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { z } from 'zod';
import { MERCHANT_NOTICE_TYPES, MERCHANT_NOTICES_QUEUE, type MerchantNoticeMessage } from '@mp/clients';
import { closeWorker } from '@mp/platform';
import { WebhookRepository, type NoticeOutcome } from './webhook.repository';

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

/** The `merchant-notices` queue (on the app's QueueModule; its publishers set the job options): for its consumer, and bull-board. */
export const MerchantNoticesQueueModule = BullModule.registerQueue({ name: MERCHANT_NOTICES_QUEUE });

/**
 * Turns merchant notices that other services publish on the `merchant-notices` queue (MerchantNoticeMessage, e.g.
 * the ledger's `reconciliation.breaks_found`) into webhook deliveries (worker role); WebhookDispatcher sends them like
 * any other, signed and retried. A notice id is delivered at most once per merchant, however often it is published.
 * A notice for a merchant that is unknown, disabled or has no webhook URL is dropped; malformed data fails the job
 * for good (it stays in the queue's failed set); a database error fails the attempt, and BullMQ retries it as the
 * publisher's job options say.
 */
@Processor(MERCHANT_NOTICES_QUEUE, { concurrency: 8 })
export class MerchantNoticesConsumer extends WorkerHost implements OnModuleDestroy {
  private readonly logger = new Logger('MerchantNotices');

  constructor(private readonly deliveries: WebhookRepository) {
    super();
  }

  /** Before the database closes: no notice is taken that could not be recorded. */
  async onModuleDestroy(): Promise<void> {
    await closeWorker(this.worker);
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job<unknown, NoticeOutcome> | undefined, error: Error): void {
    this.logger.warn(`merchant notice job ${job?.id} failed (attempt ${job?.attemptsMade}): ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  async process(job: Job<unknown, NoticeOutcome>): Promise<NoticeOutcome> {
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
