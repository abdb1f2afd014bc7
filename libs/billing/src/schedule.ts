import { type BillingPeriod, type Period, periodAt, periodIndexAt, periodProblem, type PeriodProblem } from './periods';

/** Stripe's cap on `trial_period_days`. */
export const MAX_TRIAL_DAYS = 730;

const DAY_MS = 86_400_000;

/**
 * What fixes a subscription's periods. Trials are ours (the MPP intent leaves them out, recurring-and-streaming.md
 * §1.1), decided as follows:
 * - the trial runs [startedAt, startedAt + trialDays·86400 s) and is free;
 * - period 0, the first charged period, starts where the trial ends: that instant is the anchor. Without a trial the
 *   anchor is startedAt, the time activation succeeded, as MPP says;
 * - endsAt is the plan's end: no period starting at or after it is charged; a period that started before it is
 *   served to its own end (nothing is prorated), so the subscription ends with the last period that starts before endsAt.
 */
export interface SubscriptionTerms {
  readonly startedAt: Date;
  readonly period: Period;
  readonly trialDays?: number;
  readonly endsAt?: Date;
}

export type TermsProblem = PeriodProblem | 'invalid_date' | 'trial_days_not_whole' | 'trial_too_long' | 'ends_before_first_period';

export class InvalidTermsError extends Error {
  constructor(readonly problem: TermsProblem) {
    super(`subscription terms refused: ${problem}`);
    this.name = 'InvalidTermsError';
  }
}

export type SchedulePosition =
  | { readonly phase: 'not_started' }
  | { readonly phase: 'trial'; readonly start: Date; readonly end: Date }
  | { readonly phase: 'period'; readonly period: BillingPeriod }
  | { readonly phase: 'ended'; readonly at: Date };

export function termsProblem(terms: SubscriptionTerms): TermsProblem | undefined {
  const periodIssue = periodProblem(terms.period);
  if (periodIssue) return periodIssue;
  if (!isValidDate(terms.startedAt) || (terms.endsAt !== undefined && !isValidDate(terms.endsAt))) return 'invalid_date';
  const trialDays = terms.trialDays ?? 0;
  if (!Number.isInteger(trialDays) || trialDays < 0) return 'trial_days_not_whole';
  if (trialDays > MAX_TRIAL_DAYS) return 'trial_too_long';
  if (terms.endsAt !== undefined && terms.endsAt.getTime() <= anchorMs(terms)) return 'ends_before_first_period';
  return undefined;
}

export function assertTerms(terms: SubscriptionTerms): SubscriptionTerms {
  const problem = termsProblem(terms);
  if (problem) throw new InvalidTermsError(problem);
  return terms;
}

/** The start of period 0: the end of the trial, or startedAt without one. */
export function billingAnchor(terms: SubscriptionTerms): Date {
  return new Date(anchorMs(assertTerms(terms)));
}

/** The index of the last period the plan charges, or undefined for a plan without an end. */
export function lastPeriodIndex(terms: SubscriptionTerms): number | undefined {
  if (terms.endsAt === undefined) return undefined;
  return periodIndexAt(billingAnchor(terms), terms.period, new Date(terms.endsAt.getTime() - 1));
}

/** When the subscription is over by its terms alone: the end of its last period (undefined without endsAt). */
export function scheduledEnd(terms: SubscriptionTerms): Date | undefined {
  const last = lastPeriodIndex(terms);
  return last === undefined ? undefined : periodAt(billingAnchor(terms), terms.period, last).end;
}

/** Where t falls by the terms alone: before the start, in the trial, in period n, or after the last period. */
export function scheduleAt(terms: SubscriptionTerms, t: Date): SchedulePosition {
  const anchor = billingAnchor(terms);
  if (t.getTime() < terms.startedAt.getTime()) return { phase: 'not_started' };
  if (t.getTime() < anchor.getTime()) return { phase: 'trial', start: terms.startedAt, end: anchor };
  const end = scheduledEnd(terms);
  if (end !== undefined && t.getTime() >= end.getTime()) return { phase: 'ended', at: end };
  return { phase: 'period', period: periodAt(anchor, terms.period, periodIndexAt(anchor, terms.period, t)) };
}

function anchorMs(terms: SubscriptionTerms): number {
  return terms.startedAt.getTime() + (terms.trialDays ?? 0) * DAY_MS;
}

function isValidDate(t: unknown): t is Date {
  return t instanceof Date && !Number.isNaN(t.getTime());
}
