import { formatUnits } from '@mp/money';
import { adviceFor } from './advice';
import { assetInfo } from './html/format';
import type { AssetInfo, ReconReport, ReconRow } from './model';

type Column = readonly [string, (row: ReconRow, info: AssetInfo | undefined) => string, 'text' | 'number'];

/** An amount as a human decimal of its asset ("12.345678"), empty when the asset's decimals are unknown. */
const decimal = (amount: bigint | undefined, info: AssetInfo | undefined) => (amount === undefined || !info ? '' : formatUnits(amount, info.decimals));

const COLUMNS: readonly Column[] = [
  ['row_kind', (r) => r.kind, 'text'],
  ['source', (r) => r.source, 'text'],
  ['asset', (r) => r.asset, 'text'],
  ['entry_kind', (r) => r.entryKind, 'text'],
  ['reference', (r) => r.reference, 'text'],
  ['occurred_at', (r) => r.occurredAt.toISOString(), 'text'],
  ['ledger_id', (r) => r.ledger?.id ?? '', 'text'],
  ['ledger_reference', (r) => r.ledger?.reference ?? '', 'text'],
  ['ledger_state', (r) => r.ledger?.state ?? '', 'text'],
  ['ledger_amount', (r) => r.ledger?.amount.toString() ?? '', 'number'],
  ['ledger_corrections', (r) => r.corrections?.join(' ') ?? '', 'text'],
  ['external_reference', (r) => r.external?.reference ?? '', 'text'],
  ['external_amount', (r) => r.external?.amount.toString() ?? '', 'number'],
  ['difference', (r) => r.difference?.toString() ?? '', 'number'],
  ['duplicate_of', (r) => r.duplicateOf ?? '', 'text'],
  ['advice', (r) => adviceFor(r), 'text'],
  // appended, so that readers of the columns above by position keep working
  ['asset_symbol', (_, i) => i?.symbol ?? '', 'text'],
  ['ledger_amount_decimal', (r, i) => decimal(r.ledger?.amount, i), 'number'],
  ['external_amount_decimal', (r, i) => decimal(r.external?.amount, i), 'number'],
  ['difference_decimal', (r, i) => decimal(r.difference, i), 'number'],
  // subscriptions (issue 13): the charge's subscription, period and try; an over_refund's payment captured and refunded
  ['subscription_id', (r) => r.ledger?.subscription?.id ?? '', 'text'],
  ['subscription_period', (r) => r.ledger?.subscription?.periodIndex.toString() ?? '', 'number'],
  ['subscription_attempt', (r) => r.ledger?.subscription?.attempt.toString() ?? '', 'number'],
  ['captured', (r) => r.captured?.toString() ?? '', 'number'],
  ['refunded', (r) => r.refunded?.toString() ?? '', 'number'],
  // balance checks (channels, prepaid balances): what the books say, what the chain or the transfers say, and where
  ['expected', (r) => r.expected?.toString() ?? '', 'number'],
  ['actual', (r) => r.actual?.toString() ?? '', 'number'],
  [
    'details',
    (r) =>
      r.details
        ? Object.entries(r.details)
            .map(([k, v]) => `${k}=${v}`)
            .join(' ')
        : '',
    'text',
  ],
];

/**
 * The report's rows as CSV (RFC 4180: comma-separated, CRLF line ends, fields quoted when they hold a quote, comma or
 * line break, quotes doubled). Amounts are atomic units as decimal strings (`ledger_amount`, `external_amount`,
 * `difference`), and beside them the same as decimals of the asset (`*_decimal`, e.g. 1500000 → 1.5) with its symbol
 * (`asset_symbol`): from `assets`, or Stripe's currency rules for `stripe/<currency>`; empty when unknown. A text
 * field that a spreadsheet would run as a formula (starting with = + - @ or a control character) gets a leading
 * apostrophe.
 */
export function toCsv(report: ReconReport, assets: readonly AssetInfo[] = []): string {
  const known = new Map(assets.map((a) => [a.asset, a]));
  const lines = [COLUMNS.map(([name]) => name).join(',')];
  for (const row of report.rows) {
    const info = assetInfo(row.asset, known);
    lines.push(COLUMNS.map(([, value, type]) => csvField(type === 'text' ? defuse(value(row, info)) : value(row, info))).join(','));
  }
  return `${lines.join('\r\n')}\r\n`;
}

export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

function defuse(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}
