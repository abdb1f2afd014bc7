import { volumeHistory } from './history';
import { reconcile } from './reconcile';
import { bookedAs, chainLog, LATER, PERIOD, USDC, WINDOW_MS } from '../test/entries';

describe('volumeHistory', () => {
  it('has one bucket per hour of a one-day period, with payment volume, rows and breaks', () => {
    const logs = [chainLog(1, 0, 5n, '03:10:00'), chainLog(2, 0, 7n, '03:50:00'), chainLog(3, 0, 1n, '22:00:00')];
    const report = reconcile({ ledger: [bookedAs('a', logs[0])], external: logs, period: PERIOD, pendingWindowMs: WINDOW_MS, now: LATER });
    const points = volumeHistory(report);
    expect(points).toHaveLength(24);
    expect(points.every((p) => p.asset === USDC)).toBe(true);
    expect(points[3]).toMatchObject({ start: new Date('2026-11-01T03:00:00Z'), bucket: 'hour', volume: 12n, rows: 2, breaks: 1 });
    expect(points[22]).toMatchObject({ volume: 1n, rows: 1, breaks: 1 });
    expect(points[0]).toMatchObject({ volume: 0n, rows: 0, breaks: 0 });
  });

  it('draws a few minutes per minute', () => {
    const period = { from: new Date('2026-11-01T10:00:30Z'), to: new Date('2026-11-01T10:11:30Z') };
    const report = reconcile({ ledger: [], external: [chainLog(1, 0, 5n, '10:05:10')], period, pendingWindowMs: WINDOW_MS, now: LATER });
    const points = volumeHistory(report);
    expect(points).toHaveLength(12);
    expect(points[0]).toMatchObject({ start: new Date('2026-11-01T10:00:00Z'), bucket: 'minute' });
    expect(points[5]).toMatchObject({ volume: 5n, breaks: 1 });
  });

  it('draws longer periods per day', () => {
    const period = { from: new Date('2026-10-01T00:00:00Z'), to: new Date('2026-11-01T00:00:00Z') };
    const log = { ...chainLog(1, 0, 5n), occurredAt: new Date('2026-10-15T12:00:00Z') };
    const report = reconcile({ ledger: [], external: [log], period, pendingWindowMs: WINDOW_MS, now: LATER });
    const points = volumeHistory(report);
    expect(points).toHaveLength(31);
    expect(points[14]).toMatchObject({ start: new Date('2026-10-15T00:00:00Z'), bucket: 'day', volume: 5n, breaks: 1 });
  });
});
