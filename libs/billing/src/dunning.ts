import type { BillingPeriod } from './periods';
import type { DunningOutcome } from './subscription-state';

/**
 * Retries of a failed renewal. Stripe's default (8 tries over 2 weeks) outlives a weekly period, and a retry that lands
 * in the next period would pay for a period already over. So retries are fractions of the failed period's own length
 * and all fall inside it, a margin before its end; at the end the open attempt is voided and, the period being unpaid,
 * dunning is exhausted (subscription-state.ts: dunning_exhausted, to canceled or unpaid as the plan says).
 */

/** A fraction of a period's length, [numerator, denominator], exact where a decimal would not be (1/48). */
export type PeriodFraction = readonly [numerator: number, denominator: number];

/** A plan-level setting. */
export interface DunningPolicy {
  /** How long after the failed attempt to retry, each a fraction of the period's length, increasing. */
  readonly retryAfter: readonly PeriodFraction[];
  /** No retry in the last part of the period: this fraction of its length before the end. */
  readonly endMargin: PeriodFraction;
  /** What the subscription becomes when the period ends unpaid. */
  readonly whenExhausted: DunningOutcome;
}

/** A 31-day month: 15.5 h, 1.9 d, 3.9 d, 7.75 d after the failure; a week: 3.5 h, 10.5 h, 21 h, 42 h; a day: 0.5, 1.5, 3, 6 h. */
export const DEFAULT_DUNNING_POLICY: DunningPolicy = {
  retryAfter: [
    [1, 48],
    [1, 16],
    [1, 8],
    [1, 4],
  ],
  endMargin: [1, 48],
  whenExhausted: 'canceled',
};

export interface DunningSchedule {
  /** When to retry: strictly increasing, after the failure, and no later than the margin before the period's end. */
  readonly retries: readonly Date[];
  /** The period's end: an attempt still open is voided then, and if the period is unpaid dunning is exhausted. */
  readonly voidAt: Date;
  readonly whenExhausted: DunningOutcome;
}

export type DunningPolicyProblem = 'fraction_not_proper' | 'retries_not_increasing' | 'unknown_outcome';

// Bounds the products below (a ten-year period in ms times a numerator) well inside exact doubles.
const MAX_DENOMINATOR = 10_000;

export function dunningPolicyProblem(policy: DunningPolicy): DunningPolicyProblem | undefined {
  if (![...policy.retryAfter, policy.endMargin].every(isProperFraction)) return 'fraction_not_proper';
  const increasing = policy.retryAfter.every((fraction, i) => i === 0 || compare(policy.retryAfter[i - 1], fraction) < 0);
  if (!increasing) return 'retries_not_increasing';
  if (policy.whenExhausted !== 'canceled' && policy.whenExhausted !== 'unpaid') return 'unknown_outcome';
  return undefined;
}

/**
 * The retries for a renewal of `period` that failed at `failedAt`. Offsets are rounded down to the millisecond, the
 * margin up; a retry that would fall past the margin is moved back to it, and retries that coincide there become one.
 * A failure at or past the margin gets no retry.
 */
export function dunningSchedule(period: BillingPeriod, failedAt: Date, policy: DunningPolicy = DEFAULT_DUNNING_POLICY): DunningSchedule {
  const problem = dunningPolicyProblem(policy);
  if (problem) throw new RangeError(`dunning policy refused: ${problem}`);
  const start = period.start.getTime();
  const end = period.end.getTime();
  const failed = failedAt.getTime();
  if (failed < start) throw new RangeError('a renewal cannot fail before its period starts');
  const length = end - start;
  const latest = end - Math.ceil((length * policy.endMargin[0]) / policy.endMargin[1]);
  const retries: number[] = [];
  for (const [numerator, denominator] of policy.retryAfter) {
    const at = Math.min(failed + Math.floor((length * numerator) / denominator), latest);
    if (at > failed && at > (retries.at(-1) ?? -Infinity)) retries.push(at);
  }
  return { retries: retries.map((ms) => new Date(ms)), voidAt: period.end, whenExhausted: policy.whenExhausted };
}

function isProperFraction([numerator, denominator]: PeriodFraction): boolean {
  return Number.isInteger(numerator) && Number.isInteger(denominator) && numerator > 0 && numerator < denominator && denominator <= MAX_DENOMINATOR;
}

function compare([a, b]: PeriodFraction, [c, d]: PeriodFraction): number {
  return a * d - c * b;
}
