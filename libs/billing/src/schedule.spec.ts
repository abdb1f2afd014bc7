import { billingAnchor, InvalidTermsError, lastPeriodIndex, scheduleAt, scheduledEnd, type SubscriptionTerms, termsProblem } from './schedule';

const at = (iso: string) => new Date(iso);
const withTrial: SubscriptionTerms = { startedAt: at('2027-01-17T12:00:00.000Z'), period: { unit: 'month', count: 1 }, trialDays: 14 };

describe('trials and the anchor', () => {
  it('anchors period 0 where the trial ends', () => {
    expect(billingAnchor(withTrial)).toEqual(at('2027-01-31T12:00:00.000Z'));
    expect(billingAnchor({ ...withTrial, trialDays: undefined })).toEqual(withTrial.startedAt);
    expect(billingAnchor({ ...withTrial, trialDays: 0 })).toEqual(withTrial.startedAt);
  });

  it('says for a time whether it is before the start, in the trial, or in period n', () => {
    expect(scheduleAt(withTrial, at('2027-01-17T11:59:59.999Z'))).toEqual({ phase: 'not_started' });
    const trial = { phase: 'trial', start: at('2027-01-17T12:00:00.000Z'), end: at('2027-01-31T12:00:00.000Z') };
    expect(scheduleAt(withTrial, at('2027-01-17T12:00:00.000Z'))).toEqual(trial);
    expect(scheduleAt(withTrial, at('2027-01-31T11:59:59.999Z'))).toEqual(trial);
    expect(scheduleAt(withTrial, at('2027-01-31T12:00:00.000Z'))).toEqual({
      phase: 'period',
      period: { index: 0, start: at('2027-01-31T12:00:00.000Z'), end: at('2027-02-28T12:00:00.000Z') },
    });
    expect(scheduleAt(withTrial, at('2027-03-01T00:00:00.000Z'))).toMatchObject({ phase: 'period', period: { index: 1 } });
  });
});

describe("the plan's end", () => {
  it('serves the last period that starts before endsAt to its own end', () => {
    const terms = { ...withTrial, endsAt: at('2027-04-15T00:00:00.000Z') };
    expect(lastPeriodIndex(terms)).toBe(2);
    expect(scheduledEnd(terms)).toEqual(at('2027-04-30T12:00:00.000Z'));
    expect(scheduleAt(terms, at('2027-04-30T11:59:59.999Z'))).toMatchObject({ phase: 'period', period: { index: 2 } });
    expect(scheduleAt(terms, at('2027-04-30T12:00:00.000Z'))).toEqual({ phase: 'ended', at: at('2027-04-30T12:00:00.000Z') });
  });

  it('charges no period that starts exactly at endsAt', () => {
    const terms = { ...withTrial, endsAt: at('2027-03-31T12:00:00.000Z') };
    expect(lastPeriodIndex(terms)).toBe(1);
    expect(scheduledEnd(terms)).toEqual(at('2027-03-31T12:00:00.000Z'));
    expect(scheduleAt(terms, at('2027-03-31T12:00:00.000Z'))).toMatchObject({ phase: 'ended' });
  });

  it('has no end without endsAt', () => {
    expect(lastPeriodIndex(withTrial)).toBeUndefined();
    expect(scheduledEnd(withTrial)).toBeUndefined();
    expect(scheduleAt(withTrial, at('2999-01-01T00:00:00.000Z'))).toMatchObject({ phase: 'period', period: { index: 972 * 12 - 1 } });
  });
});

describe('terms that are refused', () => {
  it.each([
    [{ ...withTrial, period: { unit: 'month', count: 0 } }, 'count_not_positive_integer'],
    [{ ...withTrial, startedAt: new Date(Number.NaN) }, 'invalid_date'],
    [{ ...withTrial, endsAt: new Date(Number.NaN) }, 'invalid_date'],
    [{ ...withTrial, trialDays: 1.5 }, 'trial_days_not_whole'],
    [{ ...withTrial, trialDays: -1 }, 'trial_days_not_whole'],
    [{ ...withTrial, trialDays: 731 }, 'trial_too_long'],
    [{ ...withTrial, endsAt: at('2027-01-31T12:00:00.000Z') }, 'ends_before_first_period'],
  ])('%j: %s', (terms, problem) => {
    expect(termsProblem(terms as SubscriptionTerms)).toBe(problem);
    expect(() => billingAnchor(terms as SubscriptionTerms)).toThrow(InvalidTermsError);
  });

  it('accepts a trial of 730 days, Stripe’s cap', () => {
    expect(termsProblem({ ...withTrial, trialDays: 730 })).toBeUndefined();
  });
});
