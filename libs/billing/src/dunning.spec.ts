import fc from 'fast-check';
import { DEFAULT_DUNNING_POLICY, type DunningPolicy, dunningPolicyProblem, dunningSchedule } from './dunning';
import { type Period, periodAt } from './periods';

const at = (iso: string) => new Date(iso);
const iso = (dates: readonly Date[]) => dates.map((d) => d.toISOString());

describe('dunning schedules', () => {
  it('retries a monthly renewal at 1/48, 1/16, 1/8 and 1/4 of the month after the failure', () => {
    // Period 1 of a Jan 31 anchor: Feb 28 → Mar 31, 31 days.
    const period = periodAt(at('2027-01-31T10:00:00.000Z'), { unit: 'month', count: 1 }, 1);
    const schedule = dunningSchedule(period, period.start);
    expect(iso(schedule.retries)).toEqual(['2027-03-01T01:30:00.000Z', '2027-03-02T08:30:00.000Z', '2027-03-04T07:00:00.000Z', '2027-03-08T04:00:00.000Z']);
    expect(schedule.voidAt).toEqual(at('2027-03-31T10:00:00.000Z'));
    expect(schedule.whenExhausted).toBe('canceled');
  });

  it('keeps a weekly renewal inside its week, where a two-week schedule would not fit', () => {
    const period = periodAt(at('2027-03-10T09:30:00.000Z'), { unit: 'week', count: 1 }, 0);
    expect(iso(dunningSchedule(period, period.start).retries)).toEqual([
      '2027-03-10T13:00:00.000Z',
      '2027-03-10T20:00:00.000Z',
      '2027-03-11T06:30:00.000Z',
      '2027-03-12T03:30:00.000Z',
    ]);
  });

  it('moves retries that would fall in the last 1/48 of the period back to its edge, once', () => {
    const period = periodAt(at('2027-03-10T09:30:00.000Z'), { unit: 'week', count: 1 }, 0);
    // The edge is 3.5 h before Mar 17 09:30.
    expect(iso(dunningSchedule(period, at('2027-03-16T09:30:00.000Z')).retries)).toEqual([
      '2027-03-16T13:00:00.000Z',
      '2027-03-16T20:00:00.000Z',
      '2027-03-17T06:00:00.000Z',
    ]);
    expect(dunningSchedule(period, at('2027-03-17T06:00:00.000Z')).retries).toEqual([]);
    expect(dunningSchedule(period, at('2027-03-17T09:30:00.000Z')).retries).toEqual([]);
  });

  it('follows a plan that sets its own schedule and sends the subscription to unpaid', () => {
    const period = periodAt(at('2027-01-01T00:00:00.000Z'), { unit: 'day', count: 1 }, 0);
    const policy: DunningPolicy = { retryAfter: [[1, 3]], endMargin: [1, 1000], whenExhausted: 'unpaid' };
    expect(dunningSchedule(period, period.start, policy)).toEqual({
      retries: [at('2027-01-01T08:00:00.000Z')],
      voidAt: at('2027-01-02T00:00:00.000Z'),
      whenExhausted: 'unpaid',
    });
  });

  it('refuses a failure before its period and a policy that is not well formed', () => {
    const period = periodAt(at('2027-01-01T00:00:00.000Z'), { unit: 'day', count: 1 }, 0);
    expect(() => dunningSchedule(period, at('2026-12-31T23:59:59.999Z'))).toThrow('before its period starts');
    expect(dunningPolicyProblem(DEFAULT_DUNNING_POLICY)).toBeUndefined();
    const withRetries = (retryAfter: DunningPolicy['retryAfter']): DunningPolicy => ({ ...DEFAULT_DUNNING_POLICY, retryAfter });
    expect(dunningPolicyProblem(withRetries([[0, 4]]))).toBe('fraction_not_proper');
    expect(dunningPolicyProblem(withRetries([[4, 4]]))).toBe('fraction_not_proper');
    expect(dunningPolicyProblem(withRetries([[1.5, 4]]))).toBe('fraction_not_proper');
    expect(dunningPolicyProblem(withRetries([[1, 10_001]]))).toBe('fraction_not_proper');
    expect(dunningPolicyProblem({ ...DEFAULT_DUNNING_POLICY, endMargin: [1, 0] })).toBe('fraction_not_proper');
    expect(
      dunningPolicyProblem(
        withRetries([
          [1, 8],
          [2, 16],
        ]),
      ),
    ).toBe('retries_not_increasing');
    expect(dunningPolicyProblem({ ...DEFAULT_DUNNING_POLICY, whenExhausted: 'paused' as never })).toBe('unknown_outcome');
    expect(() => dunningSchedule(period, period.start, withRetries([[1, 1]]))).toThrow('fraction_not_proper');
  });

  it('keeps every retry after the failure, increasing, and a margin before the period ends', () => {
    const periods = fc
      .constantFrom<Period['unit']>('day', 'week', 'month')
      .chain((unit) => fc.integer({ min: 1, max: 12 }).map((count): Period => ({ unit, count })));
    fc.assert(
      fc.property(
        fc.date({ min: at('2000-01-01T00:00:00Z'), max: at('2100-01-01T00:00:00Z'), noInvalidDate: true }),
        periods,
        fc.integer({ min: 0, max: 100 }),
        fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
        (anchor, period, n, where) => {
          const billing = periodAt(anchor, period, n);
          const length = billing.end.getTime() - billing.start.getTime();
          const failedAt = new Date(billing.start.getTime() + Math.floor(where * length));
          const { retries, voidAt } = dunningSchedule(billing, failedAt);
          expect(voidAt).toEqual(billing.end);
          expect(retries.length).toBeLessThanOrEqual(DEFAULT_DUNNING_POLICY.retryAfter.length);
          retries.forEach((retry, i) => {
            expect(retry.getTime()).toBeGreaterThan(i === 0 ? failedAt.getTime() : retries[i - 1].getTime());
            expect((billing.end.getTime() - retry.getTime()) * 48).toBeGreaterThanOrEqual(length);
          });
          // A failure early in the period gets every retry.
          if (where === 0) expect(retries).toHaveLength(4);
        },
      ),
    );
  });
});
