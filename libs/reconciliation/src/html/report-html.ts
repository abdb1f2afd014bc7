import { adviceFor } from '../advice';
import type { HistoryPoint } from '../history';
import {
  BREAK_KINDS,
  CHANNEL_BREAK_KINDS,
  isBreak,
  PREPAID_BREAK_KINDS,
  type AssetInfo,
  type BreakKind,
  type ReconReport,
  type ReconRow,
  type RowKind,
  type SubscriptionEventKind,
} from '../model';
import { historyChart } from './chart';
import { assetInfo, assetLabel, escapeHtml as e, formatAmount, formatTime } from './format';
import { referenceUrl, type ReferenceLinkOptions } from './reference-links';
import { REPORT_CSS } from './report.css';

export interface ReportPageOptions {
  title?: string;
  merchantId?: string;
  /** symbols and decimals of the report's assets (Stripe currencies are known without it) */
  assets?: AssetInfo[];
  /** where the same report is as CSV and JSON, shown as links */
  links?: { csv?: string; json?: string };
  /** where references link to: block explorers per network, the Stripe dashboard */
  references?: ReferenceLinkOptions;
}

const KIND_LABELS: Record<RowKind, string> = {
  matched: 'Matched',
  pending: 'Pending',
  missing_in_ledger: 'Missing in ledger',
  missing_externally: 'Missing externally',
  amount_mismatch: 'Amount mismatch',
  duplicate: 'Duplicate',
  over_refund: 'Refunded more than captured',
  channel_deposit_mismatch: 'Channel deposit mismatch',
  channel_settled_mismatch: 'Channel settled mismatch',
  channel_claimed_mismatch: 'Channel claimed mismatch',
  channel_refunded_mismatch: 'Channel refunded mismatch',
  channel_not_finalized: 'Channel closed, not finalized on chain',
  channel_closed_on_chain_not_in_books: 'Channel finalized on chain, open in books',
  channel_not_on_chain: 'Channel not on chain',
  channel_unknown_to_books: 'Channel unknown to books',
  prepaid_funding_missing: 'Top-up without its payment',
  prepaid_funding_mismatch: 'Top-up amount mismatch',
  prepaid_balance_mismatch: 'Prepaid balance mismatch',
  prepaid_negative: 'Prepaid balance below zero',
};

const EVENT_LABELS: Record<SubscriptionEventKind, string> = {
  charge_failed: 'Charge failed',
  charge_refused: 'Charge refused',
  charge_voided: 'Charge voided',
  cancel_requested: 'Cancel requested',
  canceled: 'Canceled',
};

/**
 * The report as one self-contained HTML page for a browser: summary, totals per asset, a chart of volume and breaks
 * over the period, and the table of breaks. No scripts and no external assets (inline CSS, inline SVG); every value
 * from the data is escaped.
 */
export function renderReportHtml(report: ReconReport, history: HistoryPoint[], options: ReportPageOptions = {}): string {
  const known = new Map((options.assets ?? []).map((a) => [a.asset, a]));
  const info = (asset: string) => assetInfo(asset, known);
  const { summary } = report;
  const title = options.title ?? 'Reconciliation report';
  const period = `${formatTime(summary.period.from)} to ${formatTime(summary.period.to)}`;
  const breaks = report.rows.filter((r) => isBreak(r.kind));
  const status =
    summary.breaks === 0
      ? `<p class="status clean">Clean: nothing to resolve</p>`
      : `<p class="status broken">${summary.breaks} break${summary.breaks === 1 ? '' : 's'} to resolve</p>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${e(title)} · ${e(period)}</title>
<style>${REPORT_CSS}</style>
</head>
<body>
<header>
<h1>${e(title)}</h1>
<p class="meta">${options.merchantId ? `Merchant <code>${e(options.merchantId)}</code> · ` : ''}Period ${e(period)} · Generated ${e(formatTime(summary.generatedAt))}</p>
${status}
</header>
<main>
<section aria-labelledby="summary-title"><h2 id="summary-title">Summary</h2>
<ul class="cards" data-testid="summary">${summaryKinds(report)
    .map((k) => card(k, summary.counts[k] ?? 0))
    .join('')}</ul>${checkedNote(report)}
<p class="note">${summary.ledgerEntries} ledger entr${summary.ledgerEntries === 1 ? 'y' : 'ies'} and ${summary.externalEntries} external entr${summary.externalEntries === 1 ? 'y' : 'ies'} in ${summary.rows} row${summary.rows === 1 ? '' : 's'}.</p>
</section>
<section aria-labelledby="totals-title"><h2 id="totals-title">Totals per asset</h2>
${totalsTable(report, info)}
</section>
<section aria-labelledby="chart-title"><h2 id="chart-title">Volume and breaks over time</h2>
${charts(history, info)}
</section>
<section aria-labelledby="breaks-title"><h2 id="breaks-title">Breaks (${breaks.length})</h2>
${breaks.length === 0 ? '<p class="note" data-testid="breaks">No breaks: every entry of the period is matched or pending.</p>' : breaksTable(breaks, info, options.references ?? {})}
</section>
${subscriptionsSection(report, info, options.references ?? {})}
</main>
<footer>${links(options.links)}Breaks are resolved by correcting transfers in the ledger, never by editing one; the next run shows them matched.</footer>
</body>
</html>
`;
}

/** Every payment kind; the balance checks' kinds when the run made them (or a stored report has such rows). */
function summaryKinds(report: ReconReport): RowKind[] {
  const balanceKinds: readonly BreakKind[] = [...CHANNEL_BREAK_KINDS, ...PREPAID_BREAK_KINDS];
  const checked = report.summary.checked !== undefined || balanceKinds.some((k) => (report.summary.counts[k] ?? 0) > 0);
  return ['matched', 'pending', ...BREAK_KINDS.filter((k) => checked || !balanceKinds.includes(k))];
}

function checkedNote(report: ReconReport): string {
  const c = report.summary.checked;
  if (!c) return '';
  return `<p class="note" data-testid="checked">Balance checks: ${c.channels} payment channel${c.channels === 1 ? '' : 's'} against the escrow${
    c.blocks && Object.keys(c.blocks).length
      ? ` (at block ${Object.entries(c.blocks)
          .map(([n, b]) => `${e(b)} of ${e(n)}`)
          .join(', ')})`
      : ''
  }, ${c.prepaidBalances} prepaid balance${c.prepaidBalances === 1 ? '' : 's'} and ${c.topUps} top-up${c.topUps === 1 ? '' : 's'} against the book.</p>`;
}

function card(kind: RowKind, count: number): string {
  const tone = kind === 'matched' ? 'good' : kind === 'pending' ? 'neutral' : count > 0 ? 'bad' : 'neutral';
  return `<li class="card ${tone}" data-kind="${e(kind)}"><span class="count">${count}</span><span class="label">${e(KIND_LABELS[kind])}</span></li>`;
}

function totalsTable(report: ReconReport, info: (asset: string) => AssetInfo | undefined): string {
  if (report.totals.length === 0) return '<p class="note" data-testid="totals">No entries in this period.</p>';
  const rows = report.totals.map((t) => {
    const i = info(t.asset);
    const breaks = BREAK_KINDS.reduce((sum, k) => sum + (t.breaks[k] ?? 0), 0);
    return `<tr data-asset="${e(t.asset)}" data-source="${e(t.source)}">
<th scope="row" title="${e(t.asset)}">${e(assetLabel(t.asset, i))}</th><td>${e(t.source)}</td>
<td class="num">${t.ledger.count}</td><td class="num">${e(formatAmount(t.ledger.net, i))}</td>
<td class="num">${t.external.count}</td><td class="num">${e(formatAmount(t.external.net, i))}</td>
<td class="num">${t.matched.count}</td><td class="num">${t.pending}</td>
<td class="num${breaks ? ' bad' : ''}">${breaks}</td><td class="num${t.difference !== 0n ? ' bad' : ''}">${e(formatAmount(t.difference, i))}</td></tr>`;
  });
  return `<table data-testid="totals"><thead><tr><th scope="col">Asset</th><th scope="col">Source</th><th scope="col" class="num">Ledger entries</th><th scope="col" class="num">Ledger net</th><th scope="col" class="num">External entries</th><th scope="col" class="num">External net</th><th scope="col" class="num">Matched</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Breaks</th><th scope="col" class="num">Difference</th></tr></thead>
<tbody>${rows.join('')}</tbody></table>
<p class="note">Net: payments in minus refunds, fees and gas out. Difference: external net minus ledger net.</p>`;
}

function charts(history: HistoryPoint[], info: (asset: string) => AssetInfo | undefined): string {
  const assets = [...new Set(history.map((p) => p.asset))];
  if (assets.length === 0) return '<p class="note">Nothing to draw.</p>';
  const legend = '<p class="legend"><span class="swatch volume"></span>payment volume <span class="swatch breaks"></span>breaks</p>';
  return (
    legend +
    assets
      .map((asset) => {
        const label = assetLabel(asset, info(asset));
        return `<figure data-testid="chart">${historyChart(
          history.filter((p) => p.asset === asset),
          label,
          info(asset),
        )}<figcaption>${e(label)}</figcaption></figure>`;
      })
      .join('')
  );
}

function breaksTable(rows: ReconRow[], info: (asset: string) => AssetInfo | undefined, references: ReferenceLinkOptions): string {
  const body = rows.map((r) => {
    const i = info(r.asset);
    return `<tr data-kind="${e(r.kind)}">
<td><span class="kind ${e(r.kind)}">${e(KIND_LABELS[r.kind])}</span></td><td>${e(formatTime(r.occurredAt))}</td><td>${e(`${r.source} ${r.entryKind}`)}</td>
<td title="${e(r.asset)}">${e(assetLabel(r.asset, i))}</td><td>${reference(r, references)}</td>
<td class="num">${bookSide(r, i)}</td><td class="num">${outsideSide(r, i)}</td>
<td class="num">${r.difference === undefined ? '' : e(formatAmount(r.difference, i))}</td><td class="advice">${e(adviceFor(r, (amount) => formatAmount(amount, i)))}</td></tr>`;
  });
  return `<table data-testid="breaks"><thead><tr><th scope="col">Kind</th><th scope="col">When</th><th scope="col">What</th><th scope="col">Asset</th><th scope="col">Reference</th><th scope="col" class="num">Ledger</th><th scope="col" class="num">External</th><th scope="col" class="num">Difference</th><th scope="col">To resolve</th></tr></thead>
<tbody>${body.join('')}</tbody></table>`;
}

/**
 * Subscriptions and refunds (issue 13): each period's charge as reconciled (its subscription, period and try from the
 * ledger, or a Stripe invoice's subscription when only Stripe has it), every refund with what it refunds, and the
 * attempts that failed and the cancellations of the period, which moved no money and so are no breaks. Left out when
 * the period has none of them.
 */
function subscriptionsSection(report: ReconReport, info: (asset: string) => AssetInfo | undefined, references: ReferenceLinkOptions): string {
  const charges = report.rows.filter((r) => r.ledger?.subscription || r.external?.details.invoice);
  const refunds = report.rows.filter((r) => r.entryKind === 'refund');
  const events = report.subscriptionEvents ?? [];
  if (charges.length + refunds.length + events.length === 0) return '';
  const amounts = (r: ReconRow, i: AssetInfo | undefined) =>
    `<td class="num">${r.ledger ? e(formatAmount(r.ledger.amount, i)) : '—'}</td><td class="num">${r.external ? e(formatAmount(r.external.amount, i)) : '—'}</td>`;
  const status = (r: ReconRow) => `<span class="kind ${e(r.kind)}">${e(KIND_LABELS[r.kind])}</span>`;
  const chargeRows = charges.map((r) => {
    const i = info(r.asset);
    const sub = r.ledger?.subscription;
    const subscription = sub?.id ?? r.external?.details.subscription ?? '';
    const period = sub ? String(sub.periodIndex) : (r.external?.details.periodStart ?? '');
    return `<tr data-charge="${e(r.kind)}"><td><code>${e(subscription)}</code></td><td class="num">${e(period)}</td><td class="num">${sub ? sub.attempt : ''}</td>
<td>${status(r)}</td><td>${e(formatTime(r.occurredAt))}</td><td title="${e(r.asset)}">${e(assetLabel(r.asset, i))}</td><td>${reference(r, references)}</td>${amounts(r, i)}</tr>`;
  });
  const refundRows = refunds.map((r) => {
    const i = info(r.asset);
    const of = r.kind === 'over_refund' ? `${formatAmount(r.refunded!, i)} of ${formatAmount(r.captured!, i)} captured` : (r.external?.details.refundOf ?? '');
    return `<tr data-refund="${e(r.kind)}"><td>${status(r)}</td><td>${e(formatTime(r.occurredAt))}</td><td>${e(r.source)}</td><td title="${e(r.asset)}">${e(assetLabel(r.asset, i))}</td>
<td>${reference(r, references)}</td>${amounts(r, i)}<td>${e(of)}</td></tr>`;
  });
  const eventRows = events.map((ev) => {
    const i = info(ev.asset);
    return `<tr data-event="${e(ev.kind)}"><td>${e(formatTime(ev.at))}</td><td><code>${e(ev.subscriptionId)}</code></td><td>${e(EVENT_LABELS[ev.kind])}</td>
<td class="num">${ev.periodIndex ?? ''}</td><td class="num">${ev.attempt ?? ''}</td><td class="num">${ev.amount === undefined ? '' : e(formatAmount(ev.amount, i))}</td><td>${e(ev.detail ?? '')}</td></tr>`;
  });
  const head = (...names: string[]) =>
    `<thead><tr>${names.map((n) => `<th scope="col"${n.startsWith('#') ? ' class="num"' : ''}>${e(n.replace(/^#/, ''))}</th>`).join('')}</tr></thead>`;
  return `<section aria-labelledby="subscriptions-title"><h2 id="subscriptions-title">Subscriptions and refunds</h2>
<h3>Charges per period (${charges.length})</h3>
${charges.length === 0 ? '<p class="note">No subscription charges in this period.</p>' : `<table data-testid="subscription-charges">${head('Subscription', '#Period', '#Try', 'Status', 'When', 'Asset', 'Reference', '#Ledger', '#External')}<tbody>${chargeRows.join('')}</tbody></table>`}
<h3>Refunds (${refunds.length})</h3>
${refunds.length === 0 ? '<p class="note">No refunds in this period.</p>' : `<table data-testid="refunds">${head('Status', 'When', 'Source', 'Asset', 'Reference', '#Ledger', '#External', 'Refund of')}<tbody>${refundRows.join('')}</tbody></table>`}
<h3>Failed attempts and cancellations (${events.length})</h3>
${events.length === 0 ? '<p class="note">None in this period.</p>' : `<table data-testid="subscription-events">${head('When', 'Subscription', 'Event', '#Period', '#Try', '#Amount', 'Detail')}<tbody>${eventRows.join('')}</tbody></table>`}
<p class="note">Failed attempts and cancellations moved no money: they are shown, never counted as breaks. A charge or refund that did not match is also listed under Breaks.</p>
</section>`;
}

/** The ledger's amount of a row: its entry's, or what the books say in a balance check. */
function bookSide(r: ReconRow, i: AssetInfo | undefined): string {
  const value = r.ledger?.amount ?? r.expected;
  return value === undefined ? '—' : e(formatAmount(value, i));
}

/** The outside's amount of a row: the external entry's, or what the chain (or the book's own transfers) says. */
function outsideSide(r: ReconRow, i: AssetInfo | undefined): string {
  const value = r.external?.amount ?? r.actual;
  return value === undefined ? '—' : e(formatAmount(value, i));
}

/** The reference, linked to its explorer or Stripe dashboard page when one is known; no referrer goes with it. */
function reference(row: ReconRow, options: ReferenceLinkOptions): string {
  const code = `<code>${e(row.reference)}</code>`;
  if (row.entryKind === 'channel') return code;
  const url = referenceUrl(row.source, row.asset, row.reference, options);
  return url ? `<a href="${e(url)}" rel="noopener noreferrer" target="_blank">${code}</a>` : code;
}

function links(given: ReportPageOptions['links']): string {
  const parts = [given?.csv && `<a href="${e(given.csv)}">CSV</a>`, given?.json && `<a href="${e(given.json)}">JSON</a>`].filter(Boolean);
  return parts.length ? `<p>Also as ${parts.join(' · ')}.</p>` : '';
}
