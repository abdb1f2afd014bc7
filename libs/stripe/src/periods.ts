import type { RecurringInterval } from './billing-types';

/**
 * Billing periods the way Stripe counts them (docs: billing-cycle). Boundary N of a subscription is the billing cycle
 * anchor plus N intervals, always computed from the anchor, never by stepping from the previous boundary: a month that
 * lacks the anchor's day ends on its last day, keeping the time of day (Jan 31 → Feb 28 → Mar 31 → Apr 30).
 * Times are unix seconds, in UTC.
 */

export interface Recurrence {
  interval: RecurringInterval;
  interval_count: number;
}

const DAY = 86_400;

/** `anchor` plus `count` intervals. */
export function addIntervals(anchor: number, interval: RecurringInterval, count: number): number {
  if (interval === 'day') return anchor + count * DAY;
  if (interval === 'week') return anchor + count * 7 * DAY;
  const start = new Date(anchor * 1000);
  const months = start.getUTCMonth() + (interval === 'year' ? 12 * count : count);
  const year = start.getUTCFullYear() + Math.floor(months / 12);
  const month = ((months % 12) + 12) % 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  const day = Math.min(start.getUTCDate(), lastDay);
  return Date.UTC(year, month, day, start.getUTCHours(), start.getUTCMinutes(), start.getUTCSeconds()) / 1000;
}

/** Boundary `index` (0 is the anchor itself). */
export function periodBoundary(anchor: number, recurrence: Recurrence, index: number): number {
  return addIntervals(anchor, recurrence.interval, index * recurrence.interval_count);
}

/** The first boundary strictly after `time` (at least boundary 1). */
export function nextBoundaryAfter(anchor: number, recurrence: Recurrence, time: number): number {
  // a first guess from the average period length, then exact steps: boundaries are increasing
  const averageSeconds = addIntervals(0, recurrence.interval, recurrence.interval_count) || 1;
  let index = Math.max(1, Math.floor((time - anchor) / averageSeconds) - 1);
  while (index > 1 && periodBoundary(anchor, recurrence, index - 1) > time) index -= 1;
  while (periodBoundary(anchor, recurrence, index) <= time) index += 1;
  return periodBoundary(anchor, recurrence, index);
}
