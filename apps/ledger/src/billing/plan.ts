import type { PeriodUnit } from '@mp/billing';

/** What a plan's subscriptions become when dunning runs out: ended, or kept as unpaid. */
export const DUNNING_OUTCOMES = ['canceled', 'unpaid'] as const;
export type DunningOutcome = (typeof DUNNING_OUTCOMES)[number];

/** What an immediate cancel refunds: nothing, or the unused part of the paid period. */
export const CANCEL_REFUNDS = ['none', 'unused_part'] as const;
export type CancelRefund = (typeof CANCEL_REFUNDS)[number];

/** The terms a merchant creates a plan with; all of them are what makes a retried create the same request. */
export interface PlanTerms {
  name: string;
  product: string;
  /** atomic units of `asset` each period */
  amount: bigint;
  asset: string;
  periodUnit: PeriodUnit;
  periodCount: number;
  trialDays: number;
  endsAt: Date | null;
  onDunningExhausted: DunningOutcome;
  cancelRefund: CancelRefund;
}

export interface PlanInput extends PlanTerms {
  id: string;
}

export interface PlanRecord extends PlanInput {
  archivedAt: Date | null;
  createdAt: Date;
}

const TERM_NAMES = [
  'name',
  'product',
  'amount',
  'asset',
  'periodUnit',
  'periodCount',
  'trialDays',
  'endsAt',
  'onDunningExhausted',
  'cancelRefund',
] as const satisfies readonly (keyof PlanTerms)[];

const sameTerm = (a: PlanTerms[keyof PlanTerms], b: PlanTerms[keyof PlanTerms]) =>
  a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : a === b;

/** The terms in which a retried create differs from the plan stored under its id: none means it is the same request. */
export function differingTerms(stored: PlanTerms, requested: PlanTerms): (keyof PlanTerms)[] {
  return TERM_NAMES.filter((name) => !sameTerm(stored[name], requested[name]));
}

/** The plan as the API shows it: the amount a decimal string of atomic units, times ISO 8601. */
export function planView(plan: PlanRecord) {
  return {
    id: plan.id,
    name: plan.name,
    product: plan.product,
    amount: plan.amount.toString(),
    asset: plan.asset,
    periodUnit: plan.periodUnit,
    periodCount: plan.periodCount,
    trialDays: plan.trialDays,
    endsAt: plan.endsAt?.toISOString() ?? null,
    onDunningExhausted: plan.onDunningExhausted,
    cancelRefund: plan.cancelRefund,
    archived: plan.archivedAt !== null,
    archivedAt: plan.archivedAt?.toISOString() ?? null,
    createdAt: plan.createdAt.toISOString(),
  };
}

export type PlanView = ReturnType<typeof planView>;
