import { createHash } from 'node:crypto';
import type { Period } from '@mp/reconciliation';

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** The last complete hour or day (UTC) before `now`. */
export function lastCompletePeriod(now: Date, unit: 'hour' | 'day'): Period {
  const size = unit === 'hour' ? HOUR : DAY;
  const to = Math.floor(now.getTime() / size) * size;
  return { from: new Date(to - size), to: new Date(to) };
}

/**
 * The id of a merchant's scheduled run of a period, the same wherever and however often it is computed: a schedule
 * firing twice, or on two replicas, creates one run. A UUID of version 8 (RFC 9562, custom) from SHA-256.
 */
export function scheduledRunId(merchantId: string, period: Period): string {
  const hex = createHash('sha256').update(`reconciliation|${merchantId.toLowerCase()}|${period.from.toISOString()}|${period.to.toISOString()}`).digest('hex');
  const variant = ((parseInt(hex[16], 16) & 0x3) | 0x8).toString(16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-8${hex.slice(13, 16)}-${variant}${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}
