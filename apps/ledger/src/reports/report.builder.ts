import { Inject, Injectable } from '@nestjs/common';
import {
  renderReportHtml,
  rowFromJson,
  subscriptionEventFromJson,
  summaryFromJson,
  toCsv,
  totalsFromJson,
  volumeHistory,
  type ReconReport,
  type ReferenceLinkOptions,
} from '@mp/reconciliation';
import { AssetDirectory } from '../reconciliation/asset-directory';
import { RECON_CONFIG, type ReconciliationConfig } from '../reconciliation/reconciliation.config';
import { LEDGER_SOURCE, type LedgerSource } from '../reconciliation/reconciliation.ports';
import { RunRepository, type RunRecord } from '../reconciliation/run.repository';

/** Rows read per query while a report is assembled. */
const PAGE = 5_000;

/** A completed run's stored report, rebuilt and rendered for people: CSV and an HTML page. */
@Injectable()
export class ReportBuilder {
  /** Where the HTML report links references: the explorers configured per network, the dashboard of the Stripe key's mode. */
  private readonly references: ReferenceLinkOptions;

  constructor(
    private readonly runs: RunRepository,
    @Inject(LEDGER_SOURCE) private readonly ledger: LedgerSource,
    private readonly assetDirectory: AssetDirectory,
    @Inject(RECON_CONFIG) config: ReconciliationConfig,
  ) {
    this.references = {
      explorers: Object.fromEntries(config.networks.filter((n) => n.explorerUrl).map((n) => [n.network, n.explorerUrl!])),
      ...(config.stripe && { stripeMode: /^(sk|rk)_test_/.test(config.stripe.secretKey) ? 'test' : 'live' }),
    };
  }

  /** Atomic amounts, and beside them decimals and symbols of the assets that are known (empty cells otherwise). */
  async csv(run: RunRecord & { summary: object }): Promise<string> {
    const report = await this.report(run);
    return toCsv(report, await this.assetDirectory.describeAll(report.rows.map((r) => r.asset)));
  }

  async html(run: RunRecord & { summary: object }, links: { csv: string; json: string }): Promise<string> {
    const report = await this.report(run);
    const assets = await this.ledger.assets(run.merchantId);
    return renderReportHtml(report, volumeHistory(report), {
      title: 'Reconciliation report',
      merchantId: run.merchantId,
      assets,
      links,
      references: this.references,
    });
  }

  private async report(run: RunRecord): Promise<ReconReport> {
    const rows: ReconReport['rows'] = [];
    for (let after = -1; ;) {
      const page = await this.runs.rows(run.id, 'all', after, PAGE);
      rows.push(...page.map((r) => rowFromJson(r.row)));
      if (page.length < PAGE) break;
      after = page.at(-1)!.seq;
    }
    return {
      rows,
      subscriptionEvents: (run.summary!.subscriptionEvents ?? []).map(subscriptionEventFromJson),
      totals: (run.totals ?? []).map(totalsFromJson),
      summary: summaryFromJson(run.summary!),
    };
  }
}
