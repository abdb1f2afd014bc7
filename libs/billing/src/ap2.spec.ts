import { ap2Frequency } from './ap2';
import type { Period } from './periods';

describe('AP2 recurrence', () => {
  it.each([
    [{ unit: 'day', count: 1 }, 'DAILY'],
    [{ unit: 'week', count: 1 }, 'WEEKLY'],
    [{ unit: 'week', count: 2 }, 'BIWEEKLY'],
    [{ unit: 'month', count: 1 }, 'MONTHLY'],
    [{ unit: 'month', count: 3 }, 'QUARTERLY'],
  ])('maps %j to %s', (period, frequency) => {
    expect(ap2Frequency(period as Period)).toBe(frequency);
  });

  it.each([
    { unit: 'day', count: 7 },
    { unit: 'day', count: 14 },
    { unit: 'week', count: 4 },
    { unit: 'month', count: 2 },
    { unit: 'month', count: 12 },
  ])('maps nothing else, not even %j', (period) => {
    expect(ap2Frequency(period as Period)).toBeUndefined();
  });
});
