import fc from 'fast-check';
import { addIntervals, nextBoundaryAfter, periodBoundary } from './periods';

const at = (iso: string) => Date.parse(iso) / 1000;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

describe('billing periods', () => {
  const anchor = at('2027-01-31T10:00:00Z');
  const monthly = { interval: 'month', interval_count: 1 } as const;

  it('counts months from the anchor, clamping to the month end and keeping the time of day', () => {
    const boundaries = Array.from({ length: 15 }, (_, index) => iso(periodBoundary(anchor, monthly, index)));
    expect(boundaries).toEqual([
      '2027-01-31T10:00:00.000Z',
      '2027-02-28T10:00:00.000Z',
      '2027-03-31T10:00:00.000Z',
      '2027-04-30T10:00:00.000Z',
      '2027-05-31T10:00:00.000Z',
      '2027-06-30T10:00:00.000Z',
      '2027-07-31T10:00:00.000Z',
      '2027-08-31T10:00:00.000Z',
      '2027-09-30T10:00:00.000Z',
      '2027-10-31T10:00:00.000Z',
      '2027-11-30T10:00:00.000Z',
      '2027-12-31T10:00:00.000Z',
      '2028-01-31T10:00:00.000Z',
      '2028-02-29T10:00:00.000Z',
      '2028-03-31T10:00:00.000Z',
    ]);
  });

  it('handles years, weeks, days and multi-month counts', () => {
    expect(iso(addIntervals(at('2028-02-29T00:00:00Z'), 'year', 1))).toBe('2029-02-28T00:00:00.000Z');
    expect(iso(addIntervals(at('2027-01-31T00:00:00Z'), 'month', 36))).toBe('2030-01-31T00:00:00.000Z');
    expect(iso(periodBoundary(at('2027-11-30T23:59:59Z'), { interval: 'month', interval_count: 3 }, 1))).toBe('2028-02-29T23:59:59.000Z');
    expect(addIntervals(anchor, 'week', 2) - anchor).toBe(14 * 86_400);
    expect(addIntervals(anchor, 'day', 3) - anchor).toBe(3 * 86_400);
  });

  it('finds the first boundary strictly after a time', () => {
    expect(iso(nextBoundaryAfter(anchor, monthly, anchor))).toBe('2027-02-28T10:00:00.000Z');
    expect(iso(nextBoundaryAfter(anchor, monthly, at('2027-02-28T10:00:00Z')))).toBe('2027-03-31T10:00:00.000Z');
    expect(iso(nextBoundaryAfter(anchor, monthly, at('2028-02-29T09:59:59Z')))).toBe('2028-02-29T10:00:00.000Z');
    expect(iso(nextBoundaryAfter(anchor, monthly, anchor - 86_400))).toBe('2027-02-28T10:00:00.000Z');
  });

  it('never returns a boundary at or before the time, nor skips one', () => {
    const recurrence = fc.record({
      interval: fc.constantFrom('day' as const, 'week' as const, 'month' as const, 'year' as const),
      interval_count: fc.integer({ min: 1, max: 3 }),
    });
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 4_000_000_000 }), recurrence, fc.integer({ min: 0, max: 200_000_000 }), (start, every, offset) => {
        const time = start + offset;
        const next = nextBoundaryAfter(start, every, time);
        expect(next).toBeGreaterThan(time);
        let index = 1;
        while (periodBoundary(start, every, index) < next) index += 1;
        expect(periodBoundary(start, every, index)).toBe(next);
        if (index > 1) expect(periodBoundary(start, every, index - 1)).toBeLessThanOrEqual(time);
      }),
      { numRuns: 300 },
    );
  });
});
