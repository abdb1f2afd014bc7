import { Inject, Injectable } from '@nestjs/common';
import { renderReportHtml, rowFromJson, summaryFromJson, toCsv, totalsFromJson, volumeHistory, type ReconReport } from '@mp/reconciliation';
import { LEDGER_SOURCE, type LedgerSource } from '../reconciliation/reconciliation.ports';
import { RunRepository, type RunRecord } from '../reconciliation/run.repository';

/** Rows read per query while a report is assembled. */
const PAGE = 5_000;

/** A completed run's stored report, rebuilt and rendered for people: CSV and an HTML page. */
@Injectable()
export class ReportBuilder {
  constructor(
    private readonly runs: RunRepository,
    @Inject(LEDGER_SOURCE) private readonly ledger: LedgerSource,
  ) {}

  async csv(run: RunRecord & { summary: object }): Promise<string> {
    return toCsv(await this.report(run));
  }

  async html(run: RunRecord & { summary: object }, links: { csv: string; json: string }): Promise<string> {
    const report = await this.report(run);
    const assets = await this.ledger.assets(run.merchantId);
    return renderReportHtml(report, volumeHistory(report), { title: 'Reconciliation report', merchantId: run.merchantId, assets, links });
  }

  private async report(run: RunRecord): Promise<ReconReport> {
    const rows: ReconReport['rows'] = [];
    for (let after = -1; ; ) {
      const page = await this.runs.rows(run.id, 'all', after, PAGE);
      rows.push(...page.map((r) => rowFromJson(r.row)));
      if (page.length < PAGE) break;
      after = page.at(-1)!.seq;
    }
    return { rows, totals: (run.totals ?? []).map(totalsFromJson), summary: summaryFromJson(run.summary!) };
  }
}
