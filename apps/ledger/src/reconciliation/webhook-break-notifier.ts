import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Injectable, Logger } from '@nestjs/common';
import type { DefaultJobOptions, Queue } from 'bullmq';
import { MERCHANT_NOTICES_QUEUE, merchantNoticeJobId, type MerchantNoticeMessage } from '@mp/clients';
import type { BreakNotice, BreakNotifier } from './reconciliation.ports';

/** Breaks listed in one webhook; `newBreakCount` says how many there are. */
const MAX_BREAKS_IN_NOTICE = 100;

/** A notice the facilitator does not take at once is retried with backoff; delivered ones are kept a week (their ids dedupe). */
export const MERCHANT_NOTICE_JOB_OPTIONS = {
  attempts: 10,
  backoff: { type: 'exponential', delay: 1_000 },
  removeOnComplete: { age: 7 * 24 * 3600 },
  removeOnFail: 1_000,
} satisfies DefaultJobOptions;

/** The `merchant-notices` queue, for the module that binds WebhookBreakNotifier (on the app's QueueModule). */
export const MerchantNoticesQueueModule = BullModule.registerQueue({ name: MERCHANT_NOTICES_QUEUE, defaultJobOptions: MERCHANT_NOTICE_JOB_OPTIONS });

/**
 * Tells the merchant about new breaks with a signed webhook: the notice goes to the facilitator (which holds the
 * merchants' webhook URLs and secrets) on the `merchant-notices` queue, keyed by the run, so a notice published
 * twice is delivered once. Also a warning in the ledger's log.
 */
@Injectable()
export class WebhookBreakNotifier implements BreakNotifier {
  private readonly logger = new Logger('Reconciliation');

  constructor(@InjectQueue(MERCHANT_NOTICES_QUEUE) private readonly queue: Queue<MerchantNoticeMessage>) {}

  async notify(notice: BreakNotice): Promise<void> {
    const kinds = [...new Set(notice.newBreaks.map((b) => b.kind))].join(', ');
    this.logger.warn(`run ${notice.runId} of merchant ${notice.merchantId}: ${notice.newBreaks.length} new break(s) (${kinds}); report: ${notice.reportPath}`);
    const message: MerchantNoticeMessage = {
      noticeId: `reconciliation-${notice.runId}`,
      merchantId: notice.merchantId,
      type: notice.type,
      createdAt: new Date().toISOString(),
      data: {
        runId: notice.runId,
        merchantId: notice.merchantId,
        summary: notice.summary,
        newBreakCount: notice.newBreaks.length,
        // the report has them all; a webhook stays small
        newBreaks: notice.newBreaks.slice(0, MAX_BREAKS_IN_NOTICE),
        reportPath: notice.reportPath,
      },
    };
    await this.queue.add(notice.type, message, { jobId: merchantNoticeJobId(message.noticeId) });
  }
}
