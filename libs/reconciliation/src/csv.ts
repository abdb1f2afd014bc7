import { adviceFor } from './advice';
import type { ReconReport, ReconRow } from './model';

const COLUMNS: readonly [string, (row: ReconRow) => string, 'text' | 'number'][] = [
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
];

/**
 * The report's rows as CSV (RFC 4180: comma-separated, CRLF line ends, fields quoted when they hold a quote, comma or
 * line break, quotes doubled). Amounts are atomic units as decimal strings. A text field that a spreadsheet would run
 * as a formula (starting with = + - @ or a control character) gets a leading apostrophe.
 */
export function toCsv(report: ReconReport): string {
  const lines = [COLUMNS.map(([name]) => name).join(',')];
  for (const row of report.rows) lines.push(COLUMNS.map(([, value, type]) => csvField(type === 'text' ? defuse(value(row)) : value(row))).join(','));
  return `${lines.join('\r\n')}\r\n`;
}

export function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replace(/"/g, '""')}"` : value;
}

function defuse(value: string): string {
  return /^[=+\-@\t\r]/.test(value) ? `'${value}` : value;
}
