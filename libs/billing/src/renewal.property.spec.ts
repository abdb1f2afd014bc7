import fc from 'fast-check';
import { ManualClock } from './clock';
import { isEntitled } from './entitlement';
import { type Period, periodAt, periodIndexAt } from './periods';
import { decideCharge, dueLifecycleEvent, type SubscriptionFacts } from './renewal';
import { billingAnchor, scheduleAt, type SubscriptionTerms } from './schedule';
import { type SubscriptionEvent, type SubscriptionState, transition } from './subscription-state';

type Command =
  | { readonly kind: 'advance'; readonly ms: number }
  | { readonly kind: 'renew'; readonly outcome: 'paid' | 'failed' | 'pending'; readonly lifecycleFirst: boolean }
  | { readonly kind: 'settle'; readonly outcome: 'paid' | 'failed' }
  | { readonly kind: 'cancel'; readonly atPeriodEnd: boolean };

const PAID_EVENT: Partial<Record<SubscriptionState, SubscriptionEvent>> = {
  incomplete: 'activated',
  trialing: 'trial_charge_paid',
  active: 'renewal_paid',
  past_due: 'renewal_paid',
};
const FAILED_EVENT: Partial<Record<SubscriptionState, SubscriptionEvent>> = {
  trialing: 'trial_charge_failed',
  active: 'renewal_failed',
  past_due: 'renewal_failed',
};

/**
 * A ledger in miniature: it applies due lifecycle events (or forgets to, like a late cron), asks decideCharge, marks
 * the attempt in flight and books outcomes as the rail reports them, in any order. It keeps every attempt it started,
 * so a second attempt for a period would be seen paying twice. It checks at every step what must hold whatever the
 * clock and the rails do.
 */
function run(terms: SubscriptionTerms, commands: readonly Command[]): Set<number> {
  const clock = new ManualClock(terms.startedAt);
  const anchor = billingAnchor(terms);
  const chargedPeriods = new Set<number>();
  let facts: SubscriptionFacts = {
    terms,
    state: 'incomplete',
    lastPaidIndex: null,
    inFlightIndex: null,
    failedIndex: null,
    canceledAt: null,
    cancelAtPeriodEnd: false,
  };

  const apply = (event: SubscriptionEvent | undefined) => {
    if (event === undefined) return;
    const result = transition(facts.state, event, 'unpaid');
    if (!result.ok) throw new Error(`${event} refused in ${facts.state}`);
    facts = { ...facts, state: result.to };
  };
  const catchUp = () => {
    for (let event = dueLifecycleEvent(facts, clock.now()); event !== undefined; event = dueLifecycleEvent(facts, clock.now())) apply(event);
  };
  // Attempts submitted whose outcome is unknown, oldest first.
  let pending: number[] = [];
  const track = (attempts: number[]) => {
    pending = attempts;
    facts = { ...facts, inFlightIndex: pending.at(-1) ?? null };
  };
  // An attempt that completes after a cancellation still counts (the defined outcome of the race); the state stays.
  const settle = (index: number, outcome: 'paid' | 'failed') => {
    const stillLive = facts.state !== 'canceled' && facts.state !== 'unpaid';
    if (outcome === 'paid') {
      expect(chargedPeriods.has(index)).toBe(false);
      chargedPeriods.add(index);
      if (stillLive) apply(PAID_EVENT[facts.state]);
      facts = { ...facts, lastPaidIndex: index, failedIndex: null };
    } else {
      if (stillLive) apply(FAILED_EVENT[facts.state]);
      facts = { ...facts, failedIndex: facts.state === 'past_due' ? index : null };
    }
  };

  if ((terms.trialDays ?? 0) > 0) apply('trial_started');
  for (const command of commands) {
    if (command.kind === 'advance') clock.advance(command.ms);
    else if (command.kind !== 'renew' || command.lifecycleFirst) catchUp();
    const now = clock.now();
    if (command.kind === 'renew') {
      const decision = decideCharge(facts, now);
      if (decision.due) {
        expect(decision.period.index).toBe(periodIndexAt(anchor, terms.period, now));
        expect(decision.period.start.getTime()).toBeLessThanOrEqual(now.getTime());
        expect(now.getTime()).toBeLessThan(decision.period.end.getTime());
        expect(decision.period.index).toBeGreaterThan(facts.lastPaidIndex ?? -1);
        if (terms.endsAt) expect(decision.period.start.getTime()).toBeLessThan(terms.endsAt.getTime());
        expect(facts.canceledAt).toBeNull();
        track([...pending, decision.period.index]);
        if (command.outcome !== 'pending') {
          track(pending.slice(0, -1));
          settle(decision.period.index, command.outcome);
        }
      } else if (decision.nextDueAt) {
        expect(decision.nextDueAt.getTime()).toBeGreaterThan(now.getTime());
      } else if (decision.reason === 'stale_in_flight') {
        // Voided: a stale attempt's window has closed, it can no longer pay.
        track(pending.filter((index) => index !== decision.staleIndex));
      }
    } else if (command.kind === 'settle' && pending.length > 0) {
      const [oldest, ...rest] = pending;
      track(rest);
      if (now.getTime() < periodAt(anchor, terms.period, oldest).end.getTime()) settle(oldest, command.outcome);
    } else if (command.kind === 'cancel') {
      const event = command.atPeriodEnd && facts.canceledAt === null ? 'cancel_requested' : 'canceled_now';
      if (transition(facts.state, event).ok) {
        apply(event);
        facts = { ...facts, canceledAt: now, cancelAtPeriodEnd: event === 'cancel_requested' };
      }
    }
    // No entitlement without a paid period.
    if (isEntitled(facts, now)) {
      const position = scheduleAt(terms, now);
      expect(position.phase === 'trial' || (position.phase === 'period' && chargedPeriods.has(position.period.index))).toBe(true);
    }
  }
  return chargedPeriods;
}

const periods = fc.oneof(
  fc.integer({ min: 1, max: 3 }).map((count): Period => ({ unit: 'day', count })),
  fc.integer({ min: 1, max: 2 }).map((count): Period => ({ unit: 'week', count })),
  fc.integer({ min: 1, max: 3 }).map((count): Period => ({ unit: 'month', count })),
);
const terms = fc
  .record({
    startedAt: fc.date({ min: new Date('2026-01-01T00:00:00Z'), max: new Date('2030-12-31T00:00:00Z'), noInvalidDate: true }),
    period: periods,
    trialDays: fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 14 })),
    endsAfterDays: fc.option(fc.integer({ min: 31, max: 400 }), { nil: undefined }),
  })
  .map(({ startedAt, period, trialDays, endsAfterDays }): SubscriptionTerms => ({
    startedAt,
    period,
    trialDays,
    ...(endsAfterDays !== undefined && { endsAt: new Date(startedAt.getTime() + endsAfterDays * 86_400_000) }),
  }));
const DAY_MS = 86_400_000;
// Mostly short steps and successful charges, so subscriptions live long enough to renew many times; sometimes a
// jump over several periods, a failure, an attempt left pending, a cancellation.
const commands = fc.array(
  fc.oneof(
    { weight: 12, arbitrary: fc.noBias(fc.integer({ min: 0, max: 2 * DAY_MS })).map((ms): Command => ({ kind: 'advance', ms })) },
    { weight: 4, arbitrary: fc.noBias(fc.integer({ min: 0, max: 40 * DAY_MS })).map((ms): Command => ({ kind: 'advance', ms })) },
    {
      weight: 20,
      arbitrary: fc
        .record({ outcome: fc.constantFrom('paid', 'paid', 'paid', 'paid', 'failed', 'pending'), lifecycleFirst: fc.boolean() })
        .map(({ outcome, lifecycleFirst }): Command => ({ kind: 'renew', outcome, lifecycleFirst })),
    },
    { weight: 8, arbitrary: fc.constantFrom('paid', 'paid', 'paid', 'failed').map((outcome): Command => ({ kind: 'settle', outcome })) },
    { weight: 1, arbitrary: fc.boolean().map((atPeriodEnd): Command => ({ kind: 'cancel', atPeriodEnd })) },
  ),
  { minLength: 10, maxLength: 120, size: 'max' },
);

describe('renewals over random clocks and failures', () => {
  it('charge each period at most once, never one before the current, and entitle only paid periods', () => {
    fc.assert(
      fc.property(terms, commands, (subscriptionTerms, steps) => {
        run(subscriptionTerms, steps);
      }),
    );
  });

  it('charge every period once when the clock visits each and every charge succeeds', () => {
    const monthly: SubscriptionTerms = { startedAt: new Date('2027-01-31T10:00:00.000Z'), period: { unit: 'month', count: 1 } };
    const renew: Command = { kind: 'renew', outcome: 'paid', lifecycleFirst: true };
    const steps: Command[] = [renew];
    for (let i = 0; i < 12; i += 1) steps.push({ kind: 'advance', ms: 31 * DAY_MS }, renew, renew);
    const charged = run(monthly, steps);
    // Each 31-day step lands in the next period (no month is longer): every period is charged once though asked twice.
    expect([...charged]).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  });

  it('start no second attempt while one is in flight, even when both would succeed', () => {
    const weekly: SubscriptionTerms = { startedAt: new Date('2027-03-10T09:30:00.000Z'), period: { unit: 'week', count: 1 } };
    const charged = run(weekly, [
      { kind: 'renew', outcome: 'pending', lifecycleFirst: true },
      { kind: 'renew', outcome: 'paid', lifecycleFirst: true },
      { kind: 'settle', outcome: 'paid' },
      { kind: 'renew', outcome: 'paid', lifecycleFirst: true },
    ]);
    expect([...charged]).toEqual([0]);
  });
});
