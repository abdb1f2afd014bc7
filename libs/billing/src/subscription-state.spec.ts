import { isTerminal, SUBSCRIPTION_EVENTS, SUBSCRIPTION_STATES, type SubscriptionEvent, type SubscriptionState, transition } from './subscription-state';

// Written out by hand rather than read from the table, so a changed row fails here.
const allowed: ReadonlyArray<readonly [SubscriptionState, SubscriptionEvent, SubscriptionState]> = [
  ['incomplete', 'trial_started', 'trialing'],
  ['incomplete', 'activated', 'active'],
  ['incomplete', 'activation_expired', 'incomplete_expired'],
  ['trialing', 'trial_charge_paid', 'active'],
  ['trialing', 'trial_charge_failed', 'past_due'],
  ['active', 'renewal_paid', 'active'],
  ['past_due', 'renewal_paid', 'active'],
  ['active', 'renewal_failed', 'past_due'],
  ['past_due', 'renewal_failed', 'past_due'],
  ['past_due', 'dunning_exhausted', 'canceled'],
  ['trialing', 'cancel_requested', 'trialing'],
  ['active', 'cancel_requested', 'active'],
  ['past_due', 'cancel_requested', 'past_due'],
  ['incomplete', 'canceled_now', 'canceled'],
  ['trialing', 'canceled_now', 'canceled'],
  ['active', 'canceled_now', 'canceled'],
  ['past_due', 'canceled_now', 'canceled'],
  ['unpaid', 'canceled_now', 'canceled'],
  ['trialing', 'period_ended_after_cancel', 'canceled'],
  ['active', 'period_ended_after_cancel', 'canceled'],
  ['past_due', 'period_ended_after_cancel', 'canceled'],
  ['trialing', 'plan_ended', 'canceled'],
  ['active', 'plan_ended', 'canceled'],
  ['past_due', 'plan_ended', 'canceled'],
  ['incomplete', 'payer_revoked', 'canceled'],
  ['trialing', 'payer_revoked', 'canceled'],
  ['active', 'payer_revoked', 'canceled'],
  ['past_due', 'payer_revoked', 'canceled'],
  ['unpaid', 'payer_revoked', 'canceled'],
];

describe('subscription state machine', () => {
  it.each(allowed)('%s --%s--> %s', (from, event, to) => {
    expect(transition(from, event)).toEqual({ ok: true, from, to, event });
  });

  it('sends an exhausted dunning to canceled or unpaid as the plan says', () => {
    expect(transition('past_due', 'dunning_exhausted', 'unpaid')).toEqual({ ok: true, from: 'past_due', to: 'unpaid', event: 'dunning_exhausted' });
    expect(transition('past_due', 'dunning_exhausted', 'canceled')).toMatchObject({ ok: true, to: 'canceled' });
  });

  it('refuses every other pair of state and event', () => {
    const allowedPairs = new Set(allowed.map(([from, event]) => `${from} ${event}`));
    const refused = SUBSCRIPTION_STATES.flatMap((from) => SUBSCRIPTION_EVENTS.map((event) => [from, event] as const)).filter(
      ([from, event]) => !allowedPairs.has(`${from} ${event}`),
    );
    expect(refused).toHaveLength(SUBSCRIPTION_STATES.length * SUBSCRIPTION_EVENTS.length - allowed.length);
    for (const [from, event] of refused) expect(transition(from, event)).toEqual({ ok: false, reason: 'transition_not_allowed', from, event });
  });

  it('refuses an event it does not know, even one named like an Object member', () => {
    expect(transition('active', 'toString' as SubscriptionEvent)).toMatchObject({ ok: false, reason: 'transition_not_allowed' });
    expect(transition('active', 'nonsense' as SubscriptionEvent)).toMatchObject({ ok: false });
  });

  it('ends only in canceled and incomplete_expired', () => {
    expect(SUBSCRIPTION_STATES.filter(isTerminal)).toEqual(['incomplete_expired', 'canceled']);
  });
});
