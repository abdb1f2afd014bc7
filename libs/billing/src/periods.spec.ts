import fc from 'fast-check';
import {
  InvalidPeriodError,
  MAX_PERIOD_COUNT,
  parsePeriod,
  type Period,
  periodAt,
  periodBoundary,
  periodContaining,
  periodIndexAt,
  periodProblem,
  stripeRepresentable,
} from './periods';

const at = (iso: string) => new Date(iso);
const monthly: Period = { unit: 'month', count: 1 };
const boundaries = (anchor: string, period: Period, count: number) =>
  Array.from({ length: count }, (_, n) => periodBoundary(at(anchor), period, n).toISOString());

describe('monthly periods', () => {
  it('gives 13 periods from a Jan 31 anchor, clamped to each month and never drifting, the last ending on Feb 29, 2028', () => {
    const anchor = at('2027-01-31T10:00:00.000Z');
    const periods = Array.from({ length: 13 }, (_, n) => periodAt(anchor, monthly, n)).map(({ index, start, end }) => [
      index,
      start.toISOString(),
      end.toISOString(),
    ]);
    expect(periods).toEqual([
      [0, '2027-01-31T10:00:00.000Z', '2027-02-28T10:00:00.000Z'],
      [1, '2027-02-28T10:00:00.000Z', '2027-03-31T10:00:00.000Z'],
      [2, '2027-03-31T10:00:00.000Z', '2027-04-30T10:00:00.000Z'],
      [3, '2027-04-30T10:00:00.000Z', '2027-05-31T10:00:00.000Z'],
      [4, '2027-05-31T10:00:00.000Z', '2027-06-30T10:00:00.000Z'],
      [5, '2027-06-30T10:00:00.000Z', '2027-07-31T10:00:00.000Z'],
      [6, '2027-07-31T10:00:00.000Z', '2027-08-31T10:00:00.000Z'],
      [7, '2027-08-31T10:00:00.000Z', '2027-09-30T10:00:00.000Z'],
      [8, '2027-09-30T10:00:00.000Z', '2027-10-31T10:00:00.000Z'],
      [9, '2027-10-31T10:00:00.000Z', '2027-11-30T10:00:00.000Z'],
      [10, '2027-11-30T10:00:00.000Z', '2027-12-31T10:00:00.000Z'],
      [11, '2027-12-31T10:00:00.000Z', '2028-01-31T10:00:00.000Z'],
      [12, '2028-01-31T10:00:00.000Z', '2028-02-29T10:00:00.000Z'],
    ]);
  });

  it('lands on Feb 29 in a leap year', () => {
    expect(boundaries('2028-01-31T23:59:59.999Z', monthly, 4)).toEqual([
      '2028-01-31T23:59:59.999Z',
      '2028-02-29T23:59:59.999Z',
      '2028-03-31T23:59:59.999Z',
      '2028-04-30T23:59:59.999Z',
    ]);
    expect(boundaries('2027-12-31T00:00:00.000Z', monthly, 3)).toEqual(['2027-12-31T00:00:00.000Z', '2028-01-31T00:00:00.000Z', '2028-02-29T00:00:00.000Z']);
  });

  it('counts every boundary from the original anchor: a quarter from Nov 30 returns to the 30th after February', () => {
    expect(boundaries('2026-11-30T08:15:00.000Z', { unit: 'month', count: 3 }, 5)).toEqual([
      '2026-11-30T08:15:00.000Z',
      '2027-02-28T08:15:00.000Z',
      '2027-05-30T08:15:00.000Z',
      '2027-08-30T08:15:00.000Z',
      '2027-11-30T08:15:00.000Z',
    ]);
    expect(boundaries('2028-02-29T12:00:00.000Z', { unit: 'month', count: 12 }, 5)).toEqual([
      '2028-02-29T12:00:00.000Z',
      '2029-02-28T12:00:00.000Z',
      '2030-02-28T12:00:00.000Z',
      '2031-02-28T12:00:00.000Z',
      '2032-02-29T12:00:00.000Z',
    ]);
  });

  it('finds the period of a time: the largest index whose boundary is at or before it', () => {
    const anchor = at('2027-01-31T10:00:00.000Z');
    expect(periodIndexAt(anchor, monthly, at('2027-01-31T09:59:59.999Z'))).toBe(-1);
    expect(periodIndexAt(anchor, monthly, anchor)).toBe(0);
    expect(periodIndexAt(anchor, monthly, at('2027-02-28T09:59:59.999Z'))).toBe(0);
    expect(periodIndexAt(anchor, monthly, at('2027-02-28T10:00:00.000Z'))).toBe(1);
    // Mar 30 is in period 1 although it is later in its month than Feb 28: period 2 starts on Mar 31.
    expect(periodIndexAt(anchor, monthly, at('2027-03-30T23:00:00.000Z'))).toBe(1);
    expect(periodIndexAt(anchor, monthly, at('2027-03-31T10:00:00.000Z'))).toBe(2);
    expect(periodAt(anchor, monthly, 1)).toEqual({ index: 1, start: at('2027-02-28T10:00:00.000Z'), end: at('2027-03-31T10:00:00.000Z') });
    expect(periodContaining(anchor, monthly, at('2028-02-01T00:00:00.000Z'))).toEqual({
      index: 12,
      start: at('2028-01-31T10:00:00.000Z'),
      end: at('2028-02-29T10:00:00.000Z'),
    });
    expect(periodContaining(anchor, monthly, at('2026-01-01T00:00:00.000Z'))).toBeUndefined();
  });

  it('keeps years below 100 as written (no 19xx reading)', () => {
    const anchor = new Date(0);
    anchor.setUTCFullYear(50, 0, 31);
    expect(periodBoundary(anchor, monthly, 1).getUTCFullYear()).toBe(50);
    expect(periodBoundary(anchor, monthly, 1).getUTCDate()).toBe(28);
  });
});

describe('day and week periods', () => {
  it('steps a weekly plan with count 2 by exactly 14 days', () => {
    const anchor = at('2027-03-10T09:30:00.000Z');
    const fortnightly: Period = { unit: 'week', count: 2 };
    expect(boundaries(anchor.toISOString(), fortnightly, 4)).toEqual([
      '2027-03-10T09:30:00.000Z',
      '2027-03-24T09:30:00.000Z',
      '2027-04-07T09:30:00.000Z',
      '2027-04-21T09:30:00.000Z',
    ]);
    expect(periodIndexAt(anchor, fortnightly, at('2027-03-24T09:29:59.999Z'))).toBe(0);
    expect(periodIndexAt(anchor, fortnightly, at('2027-03-24T09:30:00.000Z'))).toBe(1);
    expect(periodIndexAt(anchor, fortnightly, at('2027-04-21T09:30:00.000Z'))).toBe(3);
  });

  it('steps days by 86400 s, across a leap day', () => {
    expect(boundaries('2028-02-27T00:00:00.000Z', { unit: 'day', count: 1 }, 4)).toEqual([
      '2028-02-27T00:00:00.000Z',
      '2028-02-28T00:00:00.000Z',
      '2028-02-29T00:00:00.000Z',
      '2028-03-01T00:00:00.000Z',
    ]);
    expect(periodBoundary(at('2027-01-01T00:00:00.000Z'), { unit: 'day', count: 30 }, 2).toISOString()).toBe('2027-03-02T00:00:00.000Z');
  });
});

describe('periods that cannot be represented exactly', () => {
  it.each([
    [{ unit: 'year', count: 1 }, 'unknown_unit'],
    [{ unit: 'month', count: 0 }, 'count_not_positive_integer'],
    [{ unit: 'week', count: -1 }, 'count_not_positive_integer'],
    [{ unit: 'day', count: 1.5 }, 'count_not_positive_integer'],
    [{ unit: 'day', count: Number.NaN }, 'count_not_positive_integer'],
    [{ unit: 'month', count: 121 }, 'count_too_large'],
    [{ unit: 'week', count: 521 }, 'count_too_large'],
    [{ unit: 'day', count: 3651 }, 'count_too_large'],
  ])('refuses %j (%s)', (period, problem) => {
    expect(periodProblem(period as Period)).toBe(problem);
    expect(() => periodBoundary(at('2027-01-01T00:00:00Z'), period as Period, 1)).toThrow(InvalidPeriodError);
  });

  it('parses the MPP wire strings without rounding', () => {
    expect(parsePeriod('month', '3')).toEqual({ unit: 'month', count: 3 });
    expect(parsePeriod('day', '3650')).toEqual({ unit: 'day', count: 3650 });
    for (const [unit, count, problem] of [
      ['year', '1', 'unknown_unit'],
      ['Month', '1', 'unknown_unit'],
      ['month', '0', 'count_not_positive_integer'],
      ['month', '01', 'count_not_positive_integer'],
      ['month', '1.0', 'count_not_positive_integer'],
      ['month', ' 1', 'count_not_positive_integer'],
      ['month', '121', 'count_too_large'],
      ['day', '9'.repeat(400), 'count_too_large'],
    ]) {
      expect(() => parsePeriod(unit, count)).toThrow(expect.objectContaining({ problem }));
    }
  });

  it("knows Stripe's caps: 36 months, 156 weeks, three years of days", () => {
    expect(stripeRepresentable({ unit: 'month', count: 36 })).toBe(true);
    expect(stripeRepresentable({ unit: 'month', count: 37 })).toBe(false);
    expect(stripeRepresentable({ unit: 'week', count: 156 })).toBe(true);
    expect(stripeRepresentable({ unit: 'week', count: 157 })).toBe(false);
    expect(stripeRepresentable({ unit: 'day', count: 1095 })).toBe(true);
    expect(stripeRepresentable({ unit: 'day', count: 1096 })).toBe(false);
    expect(stripeRepresentable({ unit: 'day', count: 0 })).toBe(false);
  });

  it('refuses negative and fractional indexes and invalid dates', () => {
    const anchor = at('2027-01-01T00:00:00Z');
    expect(() => periodBoundary(anchor, monthly, -1)).toThrow(RangeError);
    expect(() => periodBoundary(anchor, monthly, 0.5)).toThrow(RangeError);
    expect(() => periodBoundary(new Date(Number.NaN), monthly, 0)).toThrow('anchor must be a valid Date');
    expect(() => periodIndexAt(anchor, monthly, new Date(Number.NaN))).toThrow('time must be a valid Date');
    expect(() => periodBoundary(anchor, { unit: 'day', count: 3650 }, 1e9)).toThrow('beyond the representable range');
    expect(() => periodBoundary(anchor, { unit: 'month', count: 120 }, 1e7)).toThrow('beyond the representable range');
  });
});

describe('period properties', () => {
  const periods = fc
    .constantFrom<Period['unit']>('day', 'week', 'month')
    .chain((unit) => fc.integer({ min: 1, max: MAX_PERIOD_COUNT[unit] }).map((count): Period => ({ unit, count })));
  const anchors = fc.date({ min: at('1970-01-01T00:00:00Z'), max: at('2200-12-31T23:59:59.999Z'), noInvalidDate: true });
  const indexes = fc.integer({ min: 0, max: 400 });

  it('boundaries strictly increase and periodIndexAt inverts periodBoundary', () => {
    fc.assert(
      fc.property(anchors, periods, indexes, (anchor, period, n) => {
        const start = periodBoundary(anchor, period, n);
        const next = periodBoundary(anchor, period, n + 1);
        expect(start.getTime()).toBeLessThan(next.getTime());
        expect(periodIndexAt(anchor, period, start)).toBe(n);
        expect(periodIndexAt(anchor, period, new Date(next.getTime() - 1))).toBe(n);
      }),
    );
  });

  it('periods tile time: every instant from the anchor on lies in exactly the period its index names', () => {
    fc.assert(
      fc.property(anchors, periods, fc.integer({ min: 0, max: 50 * 366 * 86_400_000 }), (anchor, period, offset) => {
        const t = new Date(anchor.getTime() + offset);
        const containing = periodContaining(anchor, period, t)!;
        expect(containing.start.getTime()).toBeLessThanOrEqual(t.getTime());
        expect(t.getTime()).toBeLessThan(containing.end.getTime());
        if (containing.index > 0) expect(periodAt(anchor, period, containing.index - 1).end).toEqual(containing.start);
        expect(periodAt(anchor, period, containing.index + 1).start).toEqual(containing.end);
        expect(periodIndexAt(anchor, period, new Date(anchor.getTime() - 1 - offset))).toBe(-1);
      }),
    );
  });

  it('month boundaries keep the time of day and the anchor day, moved only by clamping to the month end', () => {
    const isLeap = (y: number) => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
    const monthLength = (y: number, m: number) => [31, isLeap(y) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][m];
    const monthly = fc.integer({ min: 1, max: MAX_PERIOD_COUNT.month }).map((count): Period => ({ unit: 'month', count }));
    fc.assert(
      fc.property(anchors, monthly, indexes, (anchor, period, n) => {
        const boundary = periodBoundary(anchor, period, n);
        const months = anchor.getUTCMonth() + n * period.count;
        const year = anchor.getUTCFullYear() + Math.floor(months / 12);
        expect(boundary.getUTCFullYear()).toBe(year);
        expect(boundary.getUTCMonth()).toBe(months % 12);
        expect(boundary.getUTCDate()).toBe(Math.min(anchor.getUTCDate(), monthLength(year, months % 12)));
        expect(boundary.getTime() % 86_400_000).toBe(anchor.getTime() % 86_400_000);
      }),
    );
  });
});
