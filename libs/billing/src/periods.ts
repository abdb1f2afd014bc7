/**
 * Billing periods, as the MPP subscription intent defines them (recurring-and-streaming.md §1.1): a plan bills every
 * `count` days, weeks or calendar months, counted from an anchor. Period n is the half-open [boundary(n), boundary(n+1)).
 * Everything is computed in UTC from the original anchor, so boundaries never drift.
 */
export type PeriodUnit = 'day' | 'week' | 'month';

export interface Period {
  readonly unit: PeriodUnit;
  readonly count: number;
}

export interface BillingPeriod {
  readonly index: number;
  readonly start: Date;
  readonly end: Date;
}

export const PERIOD_UNITS: readonly PeriodUnit[] = ['day', 'week', 'month'];

/** Ten years in each unit: longer than any plan we expect, and small enough that every boundary is exact. */
export const MAX_PERIOD_COUNT: Readonly<Record<PeriodUnit, number>> = { day: 3650, week: 520, month: 120 };

/** Stripe's `recurring.interval_count` caps: three years in each unit (stripe Prices.d.ts). */
export const STRIPE_MAX_PERIOD_COUNT: Readonly<Record<PeriodUnit, number>> = { day: 1095, week: 156, month: 36 };

export type PeriodProblem = 'unknown_unit' | 'count_not_positive_integer' | 'count_too_large';

export class InvalidPeriodError extends Error {
  constructor(
    readonly problem: PeriodProblem,
    message: string,
  ) {
    super(message);
    this.name = 'InvalidPeriodError';
  }
}

const DAY_MS = 86_400_000;
const FIXED_UNIT_MS = { day: DAY_MS, week: 7 * DAY_MS } as const;
// ECMAScript's time range: ±10^8 days around the epoch.
const MAX_TIME_MS = 8.64e15;

/** Why a period cannot be represented exactly, or undefined when it can. */
export function periodProblem(period: Period): PeriodProblem | undefined {
  if (!PERIOD_UNITS.includes(period.unit)) return 'unknown_unit';
  if (!Number.isInteger(period.count) || period.count < 1) return 'count_not_positive_integer';
  if (period.count > MAX_PERIOD_COUNT[period.unit]) return 'count_too_large';
  return undefined;
}

export function assertPeriod(period: Period): Period {
  const problem = periodProblem(period);
  if (problem) throw new InvalidPeriodError(problem, `period ${JSON.stringify(period)} cannot be represented exactly (${problem})`);
  return period;
}

/** The MPP wire form: `periodUnit` and `periodCount` as strings, the count `^[1-9][0-9]*$`. Never rounds. */
export function parsePeriod(periodUnit: string, periodCount: string): Period {
  if (!(PERIOD_UNITS as readonly string[]).includes(periodUnit)) throw new InvalidPeriodError('unknown_unit', 'periodUnit must be day, week or month');
  if (!/^[1-9][0-9]*$/.test(periodCount)) throw new InvalidPeriodError('count_not_positive_integer', 'periodCount must be a positive integer in decimal');
  // Five digits exceed every cap (the largest is 3650); Number() of a longer string could even be Infinity.
  if (periodCount.length > 4) throw new InvalidPeriodError('count_too_large', `periodCount ${periodCount.slice(0, 12)}… is beyond the caps`);
  return assertPeriod({ unit: periodUnit as PeriodUnit, count: Number(periodCount) });
}

/** Whether a Stripe Price can carry this period as `recurring.interval` + `interval_count` (the Stripe profile's caps). */
export function stripeRepresentable(period: Period): boolean {
  return periodProblem(period) === undefined && period.count <= STRIPE_MAX_PERIOD_COUNT[period.unit];
}

/**
 * The start of period n (n ≥ 0). Days and weeks are fixed lengths. Months add n·count calendar months to the anchor's
 * own year and month; a day the target month lacks becomes its last day, and the time of day is kept, so an anchor of
 * Jan 31 gives Feb 28 (29), Mar 31, Apr 30.
 */
export function periodBoundary(anchor: Date, period: Period, n: number): Date {
  assertPeriod(period);
  assertTime(anchor, 'anchor');
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`period index must be a non-negative integer, got ${n}`);
  if (period.unit === 'month') return addCalendarMonths(anchor, n * period.count);
  const offset = n * period.count * FIXED_UNIT_MS[period.unit];
  if (!Number.isSafeInteger(offset)) throw new RangeError(`period ${n} lies beyond the representable range of dates`);
  return withinRange(anchor.getTime() + offset);
}

/** The largest n whose boundary is at or before t; −1 when t is before the anchor. */
export function periodIndexAt(anchor: Date, period: Period, t: Date): number {
  assertPeriod(period);
  assertTime(anchor, 'anchor');
  assertTime(t, 'time');
  if (t.getTime() < anchor.getTime()) return -1;
  if (period.unit !== 'month') return Math.floor((t.getTime() - anchor.getTime()) / (period.count * FIXED_UNIT_MS[period.unit]));
  // Boundary n falls in calendar month anchor + n·count, whatever the clamping; so the estimate is right or, when the
  // boundary shares t's month but lies later in it, one too high.
  const monthsBetween = monthNumber(t) - monthNumber(anchor);
  let n = Math.floor(monthsBetween / period.count);
  while (n > 0 && periodBoundary(anchor, period, n).getTime() > t.getTime()) n -= 1;
  return n;
}

/** Period n as a half-open interval [start, end). */
export function periodAt(anchor: Date, period: Period, n: number): BillingPeriod {
  return { index: n, start: periodBoundary(anchor, period, n), end: periodBoundary(anchor, period, n + 1) };
}

/** The period that contains t, or undefined before the anchor. */
export function periodContaining(anchor: Date, period: Period, t: Date): BillingPeriod | undefined {
  const n = periodIndexAt(anchor, period, t);
  return n < 0 ? undefined : periodAt(anchor, period, n);
}

function addCalendarMonths(anchor: Date, months: number): Date {
  const target = monthNumber(anchor) + months;
  const year = Math.floor(target / 12);
  const month = target - year * 12;
  const day = Math.min(anchor.getUTCDate(), daysInMonth(year, month));
  // setUTCFullYear rather than Date.UTC, which reads years 0–99 as 1900–1999.
  const boundary = new Date(timeOfDayMs(anchor));
  boundary.setUTCFullYear(year, month, day);
  return withinRange(boundary.getTime());
}

function monthNumber(t: Date): number {
  return t.getUTCFullYear() * 12 + t.getUTCMonth();
}

function daysInMonth(year: number, month: number): number {
  const lastDay = new Date(0);
  lastDay.setUTCFullYear(year, month + 1, 0);
  return lastDay.getUTCDate();
}

function timeOfDayMs(t: Date): number {
  return ((t.getTime() % DAY_MS) + DAY_MS) % DAY_MS;
}

function assertTime(t: Date, what: string): void {
  if (!(t instanceof Date) || Number.isNaN(t.getTime())) throw new RangeError(`${what} must be a valid Date`);
}

function withinRange(ms: number): Date {
  if (!(Math.abs(ms) <= MAX_TIME_MS)) throw new RangeError('period boundary lies beyond the representable range of dates');
  return new Date(ms);
}
