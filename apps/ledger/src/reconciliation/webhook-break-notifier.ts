import { Inject, Injectable, Logger, type OnModuleDestroy } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { MERCHANT_NOTICES_QUEUE, type MerchantNoticeMessage } from '@mp/clients';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';
import type { BreakNotice, BreakNotifier } from './reconciliation.ports';

/** Breaks listed in one webhook; `newBreakCount` says how many there are. */
const MAX_BREAKS_IN_NOTICE = 100;

/**
 * Tells the merchant about new breaks with a signed webhook: the notice goes to the facilitator (which holds the
 * merchants' webhook URLs and secrets) on the `merchant-notices` queue, keyed by the run, so a notice published
 * twice is delivered once. Also a warning in the ledger's log.
 */
@Injectable()
export class WebhookBreakNotifier implements BreakNotifier, OnModuleDestroy {
  private readonly logger = new Logger('Reconciliation');
  private readonly connection: Redis;
  private readonly queue: Queue<MerchantNoticeMessage>;

  constructor(@Inject(RECON_CONFIG) config: ReconciliationConfig) {
    this.connection = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000 });
    this.connection.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
    this.queue = new Queue(MERCHANT_NOTICES_QUEUE, {
      connection: this.connection,
      prefix: config.queuePrefix,
      defaultJobOptions: { attempts: 10, backoff: { type: 'exponential', delay: 1_000 }, removeOnComplete: { age: 7 * 24 * 3600 }, removeOnFail: 1_000 },
    });
    this.queue.on('error', (error: Error) => this.logger.debug(`queue: ${error.message}`));
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.race([this.queue.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    this.connection.disconnect();
  }

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
    await this.queue.add(notice.type, message, { jobId: `notice-${message.noticeId}` });
  }
}
