import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { channelBreaks, prepaidBreaks, reconcile, type BalanceChecks, type LedgerEntry, type Period, type ReconRow } from '@mp/reconciliation';
import { LedgerMetrics } from '../ledger.metrics';
import { ChainScanner } from './chain/chain-scanner';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';
import { LEDGER_SOURCE, RECON_BREAK_NOTIFIER, RECON_CLOCK, type BreakNotifier, type LedgerSource, type ReconClock } from './reconciliation.ports';
import { percentOf, type Phase } from './progress';
import { ReportLinks } from './report-links';
import { RunRepository, type RunProgress, type RunRecord, type RunSummary } from './run.repository';
import { StripeScanner } from '../stripe/stripe-scanner';

export type ProgressListener = (progress: RunProgress & { percent: number }) => void;

/**
 * One run: the ledger's entries, the chain's Transfer logs and Stripe's objects of the period (each side read a
 * pending window wider, so that what lags across a boundary still pairs), matched; the report stored with the run;
 * the merchant told about breaks no earlier run reported. Running it again after it completed does nothing.
 */
@Injectable()
export class ReconciliationRunner {
  private readonly logger = new Logger('Reconciliation');

  constructor(
    @Inject(RECON_CONFIG) private readonly config: ReconciliationConfig,
    @Inject(LEDGER_SOURCE) private readonly ledger: LedgerSource,
    @Inject(RECON_BREAK_NOTIFIER) private readonly notifier: BreakNotifier,
    @Inject(RECON_CLOCK) private readonly clock: ReconClock,
    private readonly runs: RunRepository,
    private readonly chain: ChainScanner,
    private readonly stripe: StripeScanner,
    private readonly links: ReportLinks,
    // absent where the module is mounted alone (its tests)
    @Optional() private readonly metrics?: LedgerMetrics,
  ) {}

  async run(runId: string, onProgress: ProgressListener = () => {}): Promise<void> {
    const run = await this.runs.findForWork(runId);
    if (!run || run.status === 'completed') return this.notifyOnce(run);
    // failed for good (e.g. its queue was down when it was asked for): a stray job must not bring it back
    if (run.status === 'failed') return;
    // retried like any failure: during a rolling change of configuration another replica may have Stripe
    if (run.sources.includes('stripe') && !this.stripe.enabled)
      throw new Error('this run reconciles Stripe, which is not configured on this ledger process (STRIPE_SECRET_KEY)');
    await this.runs.start(run.id);
    const progress = (phase: Phase, done: number, total: number) => onProgress({ phase, done, total, percent: percentOf({ phase, done, total }) });
    const margin = this.config.pendingWindowMs;
    const wide = { from: new Date(run.period.from.getTime() - margin), to: new Date(run.period.to.getTime() + margin) };

    progress('ledger', 0, 1);
    const [entries, addresses, assets] = await Promise.all([
      this.ledger.entries(run.merchantId, wide),
      this.ledger.addresses(run.merchantId),
      this.ledger.assets(run.merchantId),
    ]);
    const now = this.clock.now();
    const chainPeriod = { from: wide.from, to: new Date(Math.min(wide.to.getTime(), now.getTime())) };
    const chainEntries = run.sources.includes('chain')
      ? [
          ...(await this.chain.scan({
            period: chainPeriod,
            addresses,
            assets: assets.map((a) => a.asset),
            onProgress: (done, total) => progress('chain', done, total),
          })),
          ...(await this.chain.scanRefunds({
            period: chainPeriod,
            // a refund booked by one of its logs (`<txHash>:<logIndex>`) names its transaction too
            booked: entries
              .filter((e) => e.source === 'chain' && e.kind === 'refund' && e.corrects === undefined)
              .map((e) => ({ asset: e.asset, txHash: e.reference.split(':')[0].toLowerCase() })),
            addresses,
            assets: assets.map((a) => a.asset),
          })),
        ]
      : [];
    progress('stripe', 0, 1);
    const stripeEntries = run.sources.includes('stripe')
      ? await this.stripe.scan({ merchantId: run.merchantId, period: wide, onProgress: (read) => progress('stripe', read, 0) })
      : [];
    progress('matching', 0, 1);
    const balanceChecks = await this.balanceChecks(run, chainPeriod, addresses, now);
    const covered = this.coverage(run);
    const reconciled = entries.filter((e) => covered.has(`${e.source}/${e.kind}`));
    const report = reconcile({
      ledger: reconciled,
      external: [...chainEntries, ...stripeEntries],
      period: run.period,
      pendingWindowMs: this.config.pendingWindowMs,
      now,
      balanceChecks,
    });
    report.subscriptionEvents = await this.ledger.subscriptionEvents(run.merchantId, run.period);
    const leftOut = kindsLeftOut(entries, covered);
    if (leftOut.size) this.logger.log(`run ${run.id}: ledger entries of kinds no scan covers left out (${[...leftOut].join(', ')})`);
    await this.runs.complete(run, report, { reconciled: [...covered], leftOut: entries.length - reconciled.length });
    this.metrics?.recordRun(report.summary.breaks ? 'breaks' : 'clean', report.summary.counts);
    progress('matching', 1, 1);
    await this.notifyOnce(await this.runs.findForWork(run.id));
  }

  /**
   * The balance checks, as of now whatever the period: each channel of the books against its escrow at the latest block
   * (with the chain source), and the channels the escrows opened to the merchant's payees in the period; each prepaid
   * balance against its own transfers, and its top-ups against the payments the book confirmed.
   */
  private async balanceChecks(
    run: RunRecord,
    chainPeriod: Period,
    addresses: { network: string; address: string }[],
    now: Date,
  ): Promise<{ rows: ReconRow[]; checked: BalanceChecks }> {
    const [channels, prepaid] = await Promise.all([this.ledger.channels(run.merchantId), this.ledger.prepaidBalances(run.merchantId)]);
    // with the chain source, a top-up's on-chain payment must come from the payer it credits
    if (run.sources.includes('chain'))
      for (const balance of prepaid)
        for (const topUp of balance.topUps)
          if (topUp.funding.length && /^0x[0-9a-f]{40}$/.test(balance.payer))
            topUp.senders = await this.chain.tokenSenders(balance.asset, topUp.paymentReference);
    const rows = prepaidBreaks(prepaid, now);
    const checked: BalanceChecks = { channels: 0, prepaidBalances: prepaid.length, topUps: prepaid.reduce((n, p) => n + p.topUps.length, 0) };
    if (run.sources.includes('chain')) {
      const states = await this.chain.channelStates({
        channels,
        escrows: this.config.sessionEscrows,
        batchContracts: this.config.batchSettlementContracts,
        // where the merchant is paid: its channels' payees and its receiving addresses
        payees: [...channels.map((c) => ({ network: c.network, address: c.payee })), ...addresses],
        period: chainPeriod,
      });
      rows.push(...channelBreaks({ books: channels, chain: states.chain, opened: states.opened, at: now }));
      checked.channels = channels.length;
      checked.blocks = states.blocks;
    }
    return { rows, checked };
  }

  /** What the run's scans cover: chain payments and refunds; Stripe's payments (invoices too), refunds and (optionally) fees. */
  private coverage(run: RunRecord): Set<string> {
    return new Set([
      ...(run.sources.includes('chain') ? ['chain/payment', 'chain/refund'] : []),
      ...(run.sources.includes('stripe') ? ['stripe/payment', 'stripe/refund', ...(this.config.stripeFees ? ['stripe/fee'] : [])] : []),
    ]);
  }

  /** At least once per completed run with new breaks: the notice is sent before it is recorded as sent. */
  private async notifyOnce(run: RunRecord | undefined): Promise<void> {
    if (!run || run.status !== 'completed' || run.notifiedAt || !run.summary || run.summary.breaks === 0) return;
    const breaks = (await this.runs.rows(run.id, 'breaks', -1, 10_000)).map((r) => r.row);
    const earlier = await this.runs.reportedBefore(
      run,
      breaks.map((b) => b.key),
    );
    const newBreaks = breaks.filter((b) => !earlier.has(b.key));
    if (newBreaks.length > 0) {
      await this.notifier.notify({
        type: 'reconciliation.breaks_found',
        runId: run.id,
        merchantId: run.merchantId,
        // the report's subscription events stay with the report: a notice is about breaks
        summary: withoutSubscriptionEvents(run.summary),
        newBreaks,
        reportPath: this.links.reportPath(run.id, this.links.issue(run)),
      });
    }
    await this.runs.markNotified(run.id);
  }
}

function withoutSubscriptionEvents({ subscriptionEvents: _, ...summary }: RunSummary): RunSummary {
  return summary;
}

function kindsLeftOut(entries: LedgerEntry[], covered: Set<string>): Set<string> {
  return new Set(entries.map((e) => `${e.source}/${e.kind}`).filter((k) => !covered.has(k)));
}
