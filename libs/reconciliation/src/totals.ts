import {
  BREAK_KINDS,
  isBreak,
  ROW_KINDS,
  signed,
  type AssetTotals,
  type BreakKind,
  type Period,
  type ReconRow,
  type ReconSummary,
  type RowKind,
} from './model';

/** Per asset and source, sorted by both: what each side adds up to, what matched, and the breaks by kind. */
export function totalsOf(rows: ReconRow[]): AssetTotals[] {
  const byKey = new Map<string, AssetTotals>();
  for (const row of rows) {
    const key = `${row.asset}|${row.source}`;
    let totals = byKey.get(key);
    if (!totals) byKey.set(key, (totals = emptyTotals(row.asset, row.source)));
    if (row.ledger) add(totals.ledger, signed(row.ledger.kind, row.ledger.amount));
    if (row.external) add(totals.external, signed(row.external.kind, row.external.amount));
    if (row.kind === 'matched') add(totals.matched, signed(row.ledger!.kind, row.ledger!.amount));
    else if (row.kind === 'pending') totals.pending++;
    else totals.breaks[row.kind]++;
  }
  const all = [...byKey.values()].sort((a, b) => (a.asset === b.asset ? (a.source < b.source ? -1 : 1) : a.asset < b.asset ? -1 : 1));
  for (const totals of all) totals.difference = totals.external.net - totals.ledger.net;
  return all;
}

export function summarize(
  rows: ReconRow[],
  period: Period,
  generatedAt: Date,
  entries: { ledger: number; external: number; corrections: number },
): ReconSummary {
  const counts = Object.fromEntries(ROW_KINDS.map((k) => [k, 0])) as Record<RowKind, number>;
  for (const row of rows) counts[row.kind]++;
  return {
    period,
    generatedAt,
    rows: rows.length,
    counts,
    breaks: rows.filter((r) => isBreak(r.kind)).length,
    ledgerEntries: entries.ledger,
    externalEntries: entries.external,
    corrections: entries.corrections,
  };
}

function emptyTotals(asset: string, source: AssetTotals['source']): AssetTotals {
  return {
    asset,
    source,
    ledger: { count: 0, net: 0n },
    external: { count: 0, net: 0n },
    matched: { count: 0, net: 0n },
    pending: 0,
    breaks: Object.fromEntries(BREAK_KINDS.map((k) => [k, 0])) as Record<BreakKind, number>,
    difference: 0n,
  };
}

function add(tally: { count: number; net: bigint }, amount: bigint): void {
  tally.count++;
  tally.net += amount;
}
