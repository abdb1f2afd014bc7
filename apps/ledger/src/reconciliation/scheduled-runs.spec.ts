import { lastCompletePeriod, scheduledRunId } from './scheduled-runs';

describe('scheduled runs', () => {
  it('reconcile the last complete day or hour before they fire', () => {
    const now = new Date('2026-12-01T00:15:03Z');
    expect(lastCompletePeriod(now, 'day')).toEqual({ from: new Date('2026-11-30T00:00:00Z'), to: new Date('2026-12-01T00:00:00Z') });
    expect(lastCompletePeriod(now, 'hour')).toEqual({ from: new Date('2026-11-30T23:00:00Z'), to: new Date('2026-12-01T00:00:00Z') });
  });

  it('have one id per merchant and period, a valid UUID', () => {
    const period = lastCompletePeriod(new Date('2026-12-01T00:15:03Z'), 'day');
    const id = scheduledRunId('00000000-0000-4000-8000-000000000001', period);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(scheduledRunId('00000000-0000-4000-8000-000000000001', lastCompletePeriod(new Date('2026-12-01T23:59:59Z'), 'day'))).toBe(id);
    expect(scheduledRunId('00000000-0000-4000-8000-000000000002', period)).not.toBe(id);
    expect(scheduledRunId('00000000-0000-4000-8000-000000000001', lastCompletePeriod(new Date('2026-12-02T00:15:03Z'), 'day'))).not.toBe(id);
  });
});
