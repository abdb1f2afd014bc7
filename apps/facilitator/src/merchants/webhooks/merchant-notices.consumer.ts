import { BullModule, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type OnModuleDestroy } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { isMerchantNoticeBatch, MERCHANT_NOTICES_QUEUE, parseMerchantNoticeJob, type MerchantNoticeMessage } from '@mp/clients';
import { closeWorker } from '@mp/platform';
import { WebhookRepository, type NoticeOutcome } from './webhook.repository';

/** A notice's `data` larger than this (as JSON) is refused: it is stored with the delivery and sent on every attempt. */
const MAX_DATA_BYTES = 1024 * 1024;

/** What a job came to: its notice's outcome, or for a batch how many notices came to each. */
export type NoticeJobOutcome = NoticeOutcome | Partial<Record<NoticeOutcome, number>>;

/** The `merchant-notices` queue (on the app's QueueModule; its publishers set the job options): for its consumer, and bull-board. */
export const MerchantNoticesQueueModule = BullModule.registerQueue({ name: MERCHANT_NOTICES_QUEUE });

/**
 * Turns merchant notices that other services publish on the `merchant-notices` queue (MerchantNoticeMessage, e.g.
 * the ledger's `reconciliation.breaks_found`) into webhook deliveries (worker role); WebhookDispatcher sends them like
 * any other, signed and retried. A job carries one notice or a batch of them (the ledger's renewal scans), all
 * recorded in one statement. A notice id is delivered at most once per merchant, however often it is published. A
 * notice for a merchant that is unknown, disabled or has no webhook URL is dropped; malformed data fails the job for
 * good, the whole batch (it stays in the queue's failed set); a database error fails the attempt, and BullMQ retries
 * it as the publisher's job options say (a batch retried records only what is not recorded yet).
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
  onFailed(job: Job<unknown, NoticeJobOutcome> | undefined, error: Error): void {
    this.logger.warn(`merchant notice job ${job?.id} failed (attempt ${job?.attemptsMade}): ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  async process(job: Job<unknown, NoticeJobOutcome>): Promise<NoticeJobOutcome> {
    const notices = parseNotices(job.data);
    const outcomes = await this.deliveries.enqueueNotices(notices);
    const counts: Partial<Record<NoticeOutcome, number>> = {};
    for (const [n, outcome] of outcomes.entries()) {
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      if (outcome === 'queued') continue;
      const notice = notices[n]!;
      const why = outcome === 'duplicate' ? 'already queued for this merchant' : 'the merchant is unknown, disabled or has no webhook URL';
      this.logger.debug(`notice ${notice.noticeId} (${notice.type}) for merchant ${notice.merchantId} not queued: ${why}`);
    }
    return isMerchantNoticeBatch(job.data) ? counts : outcomes[0]!;
  }
}

/** The job's notices (one, or a batch's), or an UnrecoverableError naming what is wrong (retrying cannot fix it). */
export function parseNotices(data: unknown): MerchantNoticeMessage[] {
  const parsed = parseMerchantNoticeJob(data);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'data'}: ${i.message}`).join('; ');
    throw new UnrecoverableError(`malformed merchant notice: ${problems}`);
  }
  for (const notice of parsed.data) {
    const size = Buffer.byteLength(JSON.stringify(notice.data));
    if (size > MAX_DATA_BYTES)
      throw new UnrecoverableError(`malformed merchant notice: ${notice.noticeId}'s data is ${size} bytes of JSON, at most ${MAX_DATA_BYTES}`);
  }
  return parsed.data;
}
