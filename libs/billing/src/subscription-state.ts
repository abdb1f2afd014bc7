/**
 * The subscription state machine. States mirror Stripe's subscription statuses; every allowed move is one row of
 * SUBSCRIPTION_TRANSITIONS, and anything not in the table is refused.
 */
export const SUBSCRIPTION_STATES = ['incomplete', 'incomplete_expired', 'trialing', 'active', 'past_due', 'canceled', 'unpaid'] as const;
export type SubscriptionState = (typeof SUBSCRIPTION_STATES)[number];

export const SUBSCRIPTION_EVENTS = [
  'trial_started',
  'activated',
  'activation_expired',
  'trial_charge_paid',
  'trial_charge_failed',
  'renewal_paid',
  'renewal_failed',
  'dunning_exhausted',
  'cancel_requested',
  'canceled_now',
  'period_ended_after_cancel',
  'plan_ended',
  'payer_revoked',
] as const;
export type SubscriptionEvent = (typeof SUBSCRIPTION_EVENTS)[number];

/** What a plan does when a period ends unpaid after dunning (Stripe's "if all retries fail" setting). */
export type DunningOutcome = 'canceled' | 'unpaid';

/** `same`: the state does not change (the event sets a flag); `dunning_outcome`: the plan's DunningOutcome. */
export type TransitionTarget = SubscriptionState | 'same' | 'dunning_outcome';

export interface TransitionRule {
  readonly from: readonly SubscriptionState[];
  readonly to: TransitionTarget;
  readonly why: string;
}

const LIVE: readonly SubscriptionState[] = ['trialing', 'active', 'past_due'];

export const SUBSCRIPTION_TRANSITIONS: Readonly<Record<SubscriptionEvent, TransitionRule>> = {
  trial_started: { from: ['incomplete'], to: 'trialing', why: 'the plan has a trial: access without a charge until the anchor' },
  activated: { from: ['incomplete'], to: 'active', why: 'period 0 was paid at activation' },
  activation_expired: { from: ['incomplete'], to: 'incomplete_expired', why: 'the first payment never completed' },
  trial_charge_paid: { from: ['trialing'], to: 'active', why: 'the trial ended and period 0 was paid' },
  trial_charge_failed: { from: ['trialing'], to: 'past_due', why: 'the trial ended and the charge for period 0 failed: dunning starts' },
  renewal_paid: { from: ['active', 'past_due'], to: 'active', why: 'the current period was paid, on time or by a retry' },
  renewal_failed: { from: ['active', 'past_due'], to: 'past_due', why: 'a renewal or one of its retries failed' },
  dunning_exhausted: { from: ['past_due'], to: 'dunning_outcome', why: 'the period ended unpaid; the plan says canceled or unpaid' },
  cancel_requested: { from: LIVE, to: 'same', why: 'cancel at period end: a flag, the paid period is served to its end' },
  canceled_now: { from: ['incomplete', ...LIVE, 'unpaid'], to: 'canceled', why: 'immediate cancellation by the subscriber or the merchant' },
  period_ended_after_cancel: { from: LIVE, to: 'canceled', why: 'the last period before a cancel at period end is over' },
  plan_ended: { from: LIVE, to: 'canceled', why: "the last period before the plan's endsAt is over" },
  payer_revoked: {
    from: ['incomplete', ...LIVE, 'unpaid'],
    to: 'canceled',
    why: 'the payer withdrew the authorization on chain (EIP-3009 cancelAuthorization)',
  },
};

export type TransitionResult =
  | { readonly ok: true; readonly from: SubscriptionState; readonly to: SubscriptionState; readonly event: SubscriptionEvent }
  | { readonly ok: false; readonly reason: 'transition_not_allowed'; readonly from: SubscriptionState; readonly event: SubscriptionEvent };

/** The state after event, or a refusal naming what was refused. `dunningOutcome` matters only for dunning_exhausted. */
export function transition(from: SubscriptionState, event: SubscriptionEvent, dunningOutcome: DunningOutcome = 'canceled'): TransitionResult {
  const rule: TransitionRule | undefined = Object.hasOwn(SUBSCRIPTION_TRANSITIONS, event) ? SUBSCRIPTION_TRANSITIONS[event] : undefined;
  if (!rule || !rule.from.includes(from)) return { ok: false, reason: 'transition_not_allowed', from, event };
  const to = rule.to === 'same' ? from : rule.to === 'dunning_outcome' ? dunningOutcome : rule.to;
  return { ok: true, from, to, event };
}

/** States no event leaves. `unpaid` is not one: the subscriber or merchant can still cancel it. */
export function isTerminal(state: SubscriptionState): boolean {
  return SUBSCRIPTION_EVENTS.every((event) => !transition(state, event).ok);
}
