import { isEntitled } from './entitlement';
import type { SubscriptionFacts } from './renewal';

const at = (iso: string) => new Date(iso);
// Monthly from Jan 31: period 1 is Feb 28 10:00 → Mar 31 10:00.
const paidThroughPeriod1: SubscriptionFacts = {
  terms: { startedAt: at('2027-01-31T10:00:00.000Z'), period: { unit: 'month', count: 1 } },
  state: 'active',
  lastPaidIndex: 1,
  inFlightIndex: null,
  failedIndex: null,
  canceledAt: null,
  cancelAtPeriodEnd: false,
};

describe('entitlement', () => {
  it('covers the paid period exactly, and not the next one until it is paid', () => {
    expect(isEntitled(paidThroughPeriod1, at('2027-02-28T10:00:00.000Z'))).toBe(true);
    expect(isEntitled(paidThroughPeriod1, at('2027-03-31T09:59:59.999Z'))).toBe(true);
    expect(isEntitled(paidThroughPeriod1, at('2027-03-31T10:00:00.000Z'))).toBe(false);
    expect(isEntitled({ ...paidThroughPeriod1, lastPaidIndex: 2 }, at('2027-03-31T10:00:00.000Z'))).toBe(true);
  });

  it('never follows the state alone: active with the current period unpaid is not entitled', () => {
    expect(isEntitled({ ...paidThroughPeriod1, state: 'active', lastPaidIndex: 0 }, at('2027-03-01T00:00:00.000Z'))).toBe(false);
    expect(isEntitled({ ...paidThroughPeriod1, state: 'past_due', lastPaidIndex: 0, failedIndex: 1 }, at('2027-03-01T00:00:00.000Z'))).toBe(false);
  });

  it('ends at once on an immediate cancel, and at the paid period end otherwise (a payer revoking included)', () => {
    const canceledAt = at('2027-03-05T00:00:00.000Z');
    const immediately: SubscriptionFacts = { ...paidThroughPeriod1, state: 'canceled', canceledAt, cancelAtPeriodEnd: false };
    expect(isEntitled(immediately, at('2027-03-04T23:59:59.999Z'))).toBe(true);
    expect(isEntitled(immediately, canceledAt)).toBe(false);
    const revoked: SubscriptionFacts = { ...paidThroughPeriod1, state: 'canceled', canceledAt, cancelAtPeriodEnd: true };
    expect(isEntitled(revoked, at('2027-03-31T09:59:59.999Z'))).toBe(true);
    expect(isEntitled(revoked, at('2027-03-31T10:00:00.000Z'))).toBe(false);
  });

  it('covers the trial once it has started, not before and not while incomplete', () => {
    const trial: SubscriptionFacts = {
      ...paidThroughPeriod1,
      terms: { ...paidThroughPeriod1.terms, startedAt: at('2027-01-24T10:00:00.000Z'), trialDays: 7 },
      state: 'trialing',
      lastPaidIndex: null,
    };
    expect(isEntitled(trial, at('2027-01-24T09:59:59.999Z'))).toBe(false);
    expect(isEntitled(trial, at('2027-01-24T10:00:00.000Z'))).toBe(true);
    expect(isEntitled(trial, at('2027-01-31T09:59:59.999Z'))).toBe(true);
    expect(isEntitled(trial, at('2027-01-31T10:00:00.000Z'))).toBe(false);
    expect(isEntitled({ ...trial, state: 'incomplete' }, at('2027-01-25T00:00:00.000Z'))).toBe(false);
    expect(isEntitled({ ...trial, canceledAt: at('2027-01-26T00:00:00.000Z') }, at('2027-01-27T00:00:00.000Z'))).toBe(false);
  });

  it("ends with the plan's last period", () => {
    const ending: SubscriptionFacts = { ...paidThroughPeriod1, terms: { ...paidThroughPeriod1.terms, endsAt: at('2027-03-15T00:00:00.000Z') } };
    expect(isEntitled(ending, at('2027-03-31T09:59:59.999Z'))).toBe(true);
    expect(isEntitled({ ...ending, lastPaidIndex: 2 }, at('2027-03-31T10:00:00.000Z'))).toBe(false);
  });
});
