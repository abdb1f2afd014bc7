import { Injectable, Logger } from '@nestjs/common';
import type { BreakNotice, BreakNotifier } from './reconciliation.ports';

/** The default until merchant webhooks are bound: a warning in the log per run with new breaks. */
@Injectable()
export class LoggingBreakNotifier implements BreakNotifier {
  private readonly logger = new Logger('Reconciliation');

  async notify(notice: BreakNotice): Promise<void> {
    const kinds = [...new Set(notice.newBreaks.map((b) => b.kind))].join(', ');
    this.logger.warn(`run ${notice.runId} of merchant ${notice.merchantId}: ${notice.newBreaks.length} new break(s) (${kinds}); report: ${notice.reportPath}`);
  }
}
