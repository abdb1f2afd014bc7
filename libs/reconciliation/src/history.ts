import { isBreak, type ReconReport } from './model';

/** One bar of the report's chart: an asset's payment volume and the breaks in one bucket of time. */
export interface HistoryPoint {
  /** start of the bucket (UTC) */
  start: Date;
  /** how long the bucket is: `minute`, `5 minutes`, …, `day`, `week` */
  bucket: string;
  asset: string;
  /** payments in, atomic units: the external amount when there is one, else the ledger's */
  volume: bigint;
  rows: number;
  breaks: number;
}

const MINUTE = 60_000;
const BUCKETS = [
  { ms: MINUTE, name: 'minute' },
  { ms: 5 * MINUTE, name: '5 minutes' },
  { ms: 15 * MINUTE, name: '15 minutes' },
  { ms: 60 * MINUTE, name: 'hour' },
  { ms: 6 * 60 * MINUTE, name: '6 hours' },
  { ms: 24 * 60 * MINUTE, name: 'day' },
  { ms: 7 * 24 * 60 * MINUTE, name: 'week' },
];
/** Enough bars to see a shape, few enough to read each. */
const MAX_BUCKETS = 60;

/**
 * Every bucket of the period for every asset of the report, empty ones included, oldest first. The bucket is the
 * smallest of minute, 5 and 15 minutes, hour, 6 hours, day and week that needs at most 60 of them (weeks may need more).
 */
export function volumeHistory(report: ReconReport): HistoryPoint[] {
  const { from, to } = report.summary.period;
  const span = to.getTime() - from.getTime();
  const bucket = BUCKETS.find((b) => Math.ceil(span / b.ms) + 1 <= MAX_BUCKETS) ?? BUCKETS[BUCKETS.length - 1];
  const first = Math.floor(from.getTime() / bucket.ms) * bucket.ms;
  const count = Math.max(1, Math.ceil((to.getTime() - first) / bucket.ms));
  const assets = [...new Set(report.totals.map((t) => t.asset))].sort();
  const points = new Map<string, HistoryPoint>();
  for (const asset of assets) {
    for (let i = 0; i < count; i++)
      points.set(`${asset}|${i}`, { start: new Date(first + i * bucket.ms), bucket: bucket.name, asset, volume: 0n, rows: 0, breaks: 0 });
  }
  for (const row of report.rows) {
    const point = points.get(`${row.asset}|${Math.floor((row.occurredAt.getTime() - first) / bucket.ms)}`);
    if (!point) continue;
    point.rows++;
    if (isBreak(row.kind)) point.breaks++;
    if (row.entryKind === 'payment') point.volume += (row.external ?? row.ledger)!.amount;
  }
  return [...points.values()];
}
