import { isBreak, type ReconReport } from './model';

/** One bar of the report's chart: an asset's payment volume and the breaks in one hour or day. */
export interface HistoryPoint {
  /** start of the bucket (UTC) */
  start: Date;
  asset: string;
  /** payments in, atomic units: the external amount when there is one, else the ledger's */
  volume: bigint;
  rows: number;
  breaks: number;
}

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
/** Periods up to two days are drawn per hour, longer ones per day. */
const HOURLY_UP_TO = 2 * DAY;
/** Enough for a year; longer periods keep their last buckets (the API allows far shorter periods). */
const MAX_BUCKETS = 400;

/** Every bucket of the period for every asset of the report, empty ones included, oldest first. */
export function volumeHistory(report: ReconReport): HistoryPoint[] {
  const { from, to } = report.summary.period;
  const size = to.getTime() - from.getTime() <= HOURLY_UP_TO ? HOUR : DAY;
  const first = Math.floor(from.getTime() / size) * size;
  const count = Math.min(MAX_BUCKETS, Math.max(1, Math.ceil((to.getTime() - first) / size)));
  const start = Math.ceil((to.getTime() - first) / size) - count;
  const assets = [...new Set(report.totals.map((t) => t.asset))].sort();
  const points = new Map<string, HistoryPoint>();
  for (const asset of assets) {
    for (let i = start; i < start + count; i++) points.set(`${asset}|${i}`, { start: new Date(first + i * size), asset, volume: 0n, rows: 0, breaks: 0 });
  }
  for (const row of report.rows) {
    const point = points.get(`${row.asset}|${Math.floor((row.occurredAt.getTime() - first) / size)}`);
    if (!point) continue;
    point.rows++;
    if (isBreak(row.kind)) point.breaks++;
    if (row.entryKind === 'payment') point.volume += (row.external ?? row.ledger)!.amount;
  }
  return [...points.values()];
}
