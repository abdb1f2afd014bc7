import { isEntitled } from '@mp/billing';
import { factsOf, type ChargeRecord, type SubscriptionRecord } from './subscription';
import { advance, Change, recordFailed, recordPaid, recordRefundOutcome, requestCancel } from './subscription-engine';

const MERCHANT = '11111111-1111-4111-8111-111111111111';

export function subscription(extra: Partial<SubscriptionRecord> = {}): SubscriptionRecord {
  return {
    merchantId: MERCHANT,
    id: 'sub_engine_spec_0001',
    planId: null,
    planNote: null,
    product: 'pro',
    method: 'evm',
    payer: '0x2b5ad5c4795c026514f8317c7a215e218dccd6cf',
    payTo: '0x6813eb9362372eef6200f3b1dbc3f819671cba69',
    network: 'eip155:8453',
    asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
    amount: 10_000_000n,
    periodUnit: 'month',
    periodCount: 1,
    trialDays: 0,
    anchor: new Date('2027-01-31T12:00:00Z'),
    expiresAt: null,
    authorizedPeriods: null,
    onDunningExhausted: 'canceled',
    cancelRefund: 'none',
    challengeId: 'ch_1',
    externalId: null,
    stripeCustomer: null,
    stripeSubscription: null,
    state: 'active',
    lastPaidIndex: 0,
    inFlightIndex: null,
    inFlightAttempt: null,
    inFlightSince: null,
    failedIndex: null,
    failedAt: null,
    nextAttempt: 0,
    cancelAt: null,
    cancelRequestedAt: null,
    cancelBy: null,
    cancelReason: null,
    cancelConfirmedAt: null,
    refundAmount: null,
    refundState: null,
    endedAt: null,
    endedReason: null,
    nextActionAt: null,
    usageNextIndex: null,
    version: 1,
    ...extra,
  };
}

/** A tiny in-memory store: what the repository keeps, for driving the engine through time. */
class World {
  charges: ChargeRecord[] = [];
  constructor(public s: SubscriptionRecord) {}

  step(fn: (change: Change) => void): Change {
    const change = new Change(this.s, this.charges);
    fn(change);
    for (const c of change.charges.values()) {
      this.charges = this.charges.filter((k) => !(k.periodIndex === c.periodIndex && k.attempt === c.attempt));
      this.charges.push(c);
    }
    this.s = change.record;
    return change;
  }
}

const at = (iso: string) => new Date(iso);

describe('subscription engine', () => {
  it('charges each monthly period from a Jan 31 anchor once, at its clamped start', () => {
    const world = new World(subscription());
    const starts: string[] = [];
    let t = at('2027-02-01T00:00:00Z');
    for (let i = 0; i < 12; i++) {
      // step through the period in 3 pieces: only its start charges it
      for (let k = 0; k < 3; k++) {
        const now = world.s.nextActionAt && world.s.nextActionAt > t ? world.s.nextActionAt : t;
        const change = world.step((c) => advance(c, now));
        for (const command of change.commands) {
          if (command.type !== 'charge') continue;
          starts.push(command.periodStart);
          world.step((c) => recordPaid(c, command.periodIndex, command.attempt, '00000000-0000-4000-8000-000000000001', now));
        }
        t = new Date(now.getTime() + 86_400_000);
      }
    }
    expect(starts.slice(0, 4)).toEqual(['2027-02-28T12:00:00.000Z', '2027-03-31T12:00:00.000Z', '2027-04-30T12:00:00.000Z', '2027-05-31T12:00:00.000Z']);
    expect(new Set(starts).size).toBe(starts.length);
    expect(world.charges.filter((c) => c.state === 'paid').length).toBe(starts.length);
  });

  it('retries a failed renewal inside its period, then cancels at its end, voiding the open attempt', () => {
    const world = new World(subscription());
    let now = at('2027-02-28T12:00:00Z');
    let change = world.step((c) => advance(c, now));
    expect(change.commands).toMatchObject([{ type: 'charge', periodIndex: 1, attempt: 0 }]);
    world.step((c) => {
      recordFailed(c, 1, 0, now, { state: 'failed', reason: 'insufficient_funds' });
      advance(c, now);
    });
    expect(world.s).toMatchObject({ state: 'past_due', failedIndex: 1, nextAttempt: 1 });
    const retryAt = world.s.nextActionAt!;
    expect(retryAt.getTime()).toBeGreaterThan(now.getTime());
    change = world.step((c) => advance(c, new Date(retryAt.getTime() - 1)));
    expect(change.commands).toEqual([]);
    now = retryAt;
    change = world.step((c) => advance(c, now));
    expect(change.commands).toMatchObject([{ type: 'charge', periodIndex: 1, attempt: 1 }]);
    // no outcome by the period's end: voided, dunning exhausted, canceled
    now = at('2027-03-31T12:00:00Z');
    change = world.step((c) => advance(c, now));
    expect(world.charges.find((c) => c.attempt === 1)?.state).toBe('voided');
    expect(world.s).toMatchObject({ state: 'canceled', inFlightIndex: null, nextActionAt: null });
    expect(change.transitions.map((t) => [t.event, t.noticeType])).toEqual([['dunning_exhausted', 'subscription.canceled']]);
    // the rail is told to stop, so nothing (Stripe Billing's own invoicing) collects a later period
    expect(change.commands).toMatchObject([{ type: 'cancel', at: 'immediately', effectiveAt: now.toISOString() }]);
    // a late confirmation of the voided attempt is flagged, not counted
    const late = world.step((c) => expect(recordPaid(c, 1, 1, '00000000-0000-4000-8000-000000000002', now)).toBe('late'));
    expect(late.transitions).toEqual([]);
    expect(world.s.lastPaidIndex).toBe(0);
  });

  it('lets an in-flight renewal count after an immediate cancel, refunding its unused part', () => {
    const world = new World(subscription({ cancelRefund: 'unused_part' }));
    const start = at('2027-02-28T12:00:00Z');
    world.step((c) => advance(c, start));
    const cancelAt = at('2027-03-14T12:00:00Z'); // 14 of 31 days used
    const cancel = world.step((c) =>
      expect(requestCancel(c, { at: 'immediately', by: 'merchant', reason: null, now: cancelAt })).toEqual({ kind: 'recorded' }),
    );
    expect(world.s.state).toBe('canceled');
    // period 0 is over: nothing of it is unused, so nothing is refunded yet
    expect(cancel.commands.map((c) => c.type)).toEqual(['cancel']);
    const paid = world.step((c) => recordPaid(c, 1, 0, '00000000-0000-4000-8000-000000000003', cancelAt));
    const unused = (10_000_000n * 17n) / 31n;
    expect(world.s).toMatchObject({ lastPaidIndex: 1, state: 'canceled', refundState: 'refund_requested', refundAmount: unused });
    expect(paid.commands).toEqual([
      {
        type: 'refund',
        commandId: `refund-${world.s.id}-1`,
        subscriptionId: world.s.id,
        merchantId: world.s.merchantId,
        requestedAt: cancelAt.toISOString(),
        periodIndex: 1,
        amount: String(unused),
        reason: 'unused_part',
      },
    ]);
    // its outcome is recorded once, as a transition without a state change, told to the merchant
    const outcome = world.step((c) => expect(recordRefundOutcome(c, 'refunded', cancelAt, { reason: 'refunded' })).toBe(true));
    expect(world.s.refundState).toBe('refunded');
    expect(outcome.transitions).toEqual([
      expect.objectContaining({ event: 'refunded', fromState: 'canceled', toState: 'canceled', noticeType: 'subscription.refunded' }),
    ]);
    world.step((c) => expect(recordRefundOutcome(c, 'refund_failed', cancelAt, { reason: 'reverted' })).toBe(false));
    expect(world.s.refundState).toBe('refunded');
    expect(isEntitled(factsOf(world.s), cancelAt)).toBe(false);
  });

  it('expires an activation whose first payment failed, and does not revive it when a confirmation overturns the failure', () => {
    const world = new World(
      subscription({ state: 'incomplete', lastPaidIndex: null, inFlightIndex: 0, inFlightAttempt: 0, inFlightSince: at('2027-01-31T12:00:00Z') }),
    );
    const now = at('2027-01-31T12:05:00Z');
    world.step((c) => {
      recordFailed(c, 0, 0, now, { state: 'failed', reason: 'card_declined' });
      advance(c, now);
    });
    expect(world.s).toMatchObject({ state: 'incomplete_expired', endedReason: 'card_declined', nextActionAt: null });
    world.step((c) => expect(recordPaid(c, 0, 0, '00000000-0000-4000-8000-000000000004', now)).toBe('late'));
    expect(world.s).toMatchObject({ state: 'incomplete_expired', lastPaidIndex: null });
    expect(isEntitled(factsOf(world.s), now)).toBe(false);
  });
});

describe('usage periods', () => {
  const PLAN = '22222222-2222-4222-8222-222222222222';
  const withUsage = (extra: Partial<SubscriptionRecord> = {}) => subscription({ planId: PLAN, usageNextIndex: 0, ...extra });
  const closes = (change: Change) => change.usageCloses.map((c) => [c.periodIndex, c.start.toISOString(), c.end.toISOString()]);

  it('closes each period once it is over, at the renewal of the next, and wakes the scan at its end', () => {
    const world = new World(withUsage());
    let change = world.step((c) => advance(c, at('2027-02-28T11:59:59.999Z')));
    expect(change.usageCloses).toEqual([]);
    change = world.step((c) => advance(c, at('2027-02-28T12:00:00Z')));
    expect(closes(change)).toEqual([[0, '2027-01-31T12:00:00.000Z', '2027-02-28T12:00:00.000Z']]);
    expect(change.commands).toMatchObject([{ type: 'charge', periodIndex: 1 }]);
    expect(world.s.usageNextIndex).toBe(1);
    expect(world.s.nextActionAt).toEqual(at('2027-03-31T12:00:00Z'));
    // looked at again (an outcome, a retry): nothing closes twice
    expect(world.step((c) => advance(c, at('2027-03-01T00:00:00Z'))).usageCloses).toEqual([]);
  });

  it('closes the last period at its boundary after a cancel at period end, though the scan ends it later', () => {
    const world = new World(withUsage({ lastPaidIndex: 1, usageNextIndex: 1 }));
    world.step((c) => requestCancel(c, { at: 'period_end', by: 'merchant', reason: null, now: at('2027-03-10T00:00:00Z') }));
    const change = world.step((c) => advance(c, at('2027-03-31T12:00:07Z')));
    expect(world.s.state).toBe('canceled');
    expect(closes(change)).toEqual([[1, '2027-02-28T12:00:00.000Z', '2027-03-31T12:00:00.000Z']]);
    expect(world.s).toMatchObject({ usageNextIndex: null, nextActionAt: null });
  });

  it('closes the served part of the period at an immediate cancel', () => {
    const world = new World(withUsage({ lastPaidIndex: 1, usageNextIndex: 1 }));
    const change = world.step((c) => {
      requestCancel(c, { at: 'immediately', by: 'payer', reason: null, now: at('2027-03-10T08:30:00.250Z') });
      advance(c, at('2027-03-10T08:30:00.250Z'));
    });
    expect(closes(change)).toEqual([[1, '2027-02-28T12:00:00.000Z', '2027-03-10T08:30:00.250Z']]);
    expect(world.s.usageNextIndex).toBeNull();
  });

  it('bills nothing for an activation that never paid, nor without a bound plan', () => {
    const expired = new World(withUsage({ state: 'incomplete', lastPaidIndex: null }));
    const change = expired.step((c) => advance(c, at('2027-03-01T00:00:00Z')));
    expect(expired.s.state).toBe('incomplete_expired');
    expect(change.usageCloses).toEqual([]);
    expect(expired.s.usageNextIndex).toBeNull();
    const unbound = new World(subscription({ usageNextIndex: 0 }));
    expect(unbound.step((c) => advance(c, at('2027-03-01T00:00:00Z'))).usageCloses).toEqual([]);
  });

  it('catches up at most 12 periods per look, and asks to be looked at again at once', () => {
    const world = new World(withUsage({ periodUnit: 'day', anchor: at('2027-01-01T00:00:00Z'), lastPaidIndex: 40 }));
    const now = at('2027-01-31T00:00:00Z');
    const change = world.step((c) => advance(c, now));
    expect(change.usageCloses.map((c) => c.periodIndex)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    expect(world.s.nextActionAt).toEqual(now);
  });
});
