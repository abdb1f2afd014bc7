import type { PeriodUnit } from '@mp/billing';
import type { InvalidParam } from '@mp/platform';

/** What a plan's subscriptions become when dunning runs out: ended, or kept as unpaid. */
export const DUNNING_OUTCOMES = ['canceled', 'unpaid'] as const;
export type DunningOutcome = (typeof DUNNING_OUTCOMES)[number];

/** What an immediate cancel refunds: nothing, or the unused part of the paid period. */
export const CANCEL_REFUNDS = ['none', 'unused_part'] as const;
export type CancelRefund = (typeof CANCEL_REFUNDS)[number];

/**
 * A usage-priced part of a plan: each period, the aggregate of the merchant's meter `meterKey` over the
 * subscription's usage events (CloudEvents whose `subject` is the subscription id) times `unitAmount`, rounded up to
 * whole atomic units, drawn from the payer's prepaid balance when the period closes.
 */
export interface UsageComponent {
  key: string;
  meterKey: string;
  /** atomic units of the plan's asset per unit of the meter's aggregate: an exact decimal string, > 0 */
  unitAmount: string;
  description: string | null;
}

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
  /** in the merchant's order; none for a flat plan */
  usage: UsageComponent[];
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
  'usage',
] as const satisfies readonly (keyof PlanTerms)[];

const sameTerm = (a: PlanTerms[keyof PlanTerms], b: PlanTerms[keyof PlanTerms]) =>
  a instanceof Date && b instanceof Date ? a.getTime() === b.getTime() : Array.isArray(a) && Array.isArray(b) ? sameUsage(a, b) : a === b;

/** The same components in the same order; prices compared as numbers (`"1.50"` is `"1.5"`). */
function sameUsage(a: readonly UsageComponent[], b: readonly UsageComponent[]): boolean {
  return (
    a.length === b.length &&
    a.every(
      (x, i) =>
        x.key === b[i].key &&
        x.meterKey === b[i].meterKey &&
        canonicalDecimal(x.unitAmount) === canonicalDecimal(b[i].unitAmount) &&
        x.description === b[i].description,
    )
  );
}

/** A non-negative decimal string without leading zeros in its integer part or trailing zeros in its fraction. */
export function canonicalDecimal(value: string): string {
  const [integer, fraction = ''] = value.split('.');
  const whole = integer.replace(/^0+(?=\d)/, '');
  const decimals = fraction.replace(/0+$/, '');
  return decimals ? `${whole}.${decimals}` : whole;
}

/** The terms in which a retried create differs from the plan stored under its id: none means it is the same request. */
export function differingTerms(stored: PlanTerms, requested: PlanTerms): (keyof PlanTerms)[] {
  return TERM_NAMES.filter((name) => !sameTerm(stored[name], requested[name]));
}

/** Why a plan's usage components are refused (beyond their shape, which the DTO checks). */
export type UsageComponentReason = 'duplicate_component_key' | 'meter_not_found' | 'usage_not_supported_on_stripe';

export interface UsageComponentProblem extends InvalidParam {
  reasonCode: UsageComponentReason;
}

/**
 * What makes a plan's usage components unbillable: a key used twice, a meter the merchant does not have, or any
 * component on a Stripe plan (the Stripe rail charges what its Price says; usage is drawn from EVM payers' prepaid
 * balances, see docs/architecture.md).
 */
export function usageComponentProblems(plan: Pick<PlanTerms, 'asset' | 'usage'>, hasMeter: (key: string) => boolean): UsageComponentProblem[] {
  if (plan.usage.length && plan.asset.startsWith('stripe/'))
    return [
      {
        name: 'usage',
        reason: "usage components are billed from the payer's prepaid balance on EVM plans; a plan priced in a stripe/… asset cannot carry them",
        reasonCode: 'usage_not_supported_on_stripe',
      },
    ];
  const problems: UsageComponentProblem[] = [];
  const seen = new Set<string>();
  plan.usage.forEach((c, i) => {
    if (seen.has(c.key))
      problems.push({ name: `usage.${i}.key`, reason: `key ${c.key} is used by an earlier component`, reasonCode: 'duplicate_component_key' });
    seen.add(c.key);
    if (!hasMeter(c.meterKey))
      problems.push({
        name: `usage.${i}.meterKey`,
        reason: `the merchant has no meter ${c.meterKey} (POST /usage/meters first)`,
        reasonCode: 'meter_not_found',
      });
  });
  return problems;
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
    usage: plan.usage.map((c) => ({ key: c.key, meterKey: c.meterKey, unitAmount: c.unitAmount, description: c.description })),
    archived: plan.archivedAt !== null,
    archivedAt: plan.archivedAt?.toISOString() ?? null,
    createdAt: plan.createdAt.toISOString(),
  };
}

export type PlanView = ReturnType<typeof planView>;
