import { ManualClock, systemClock } from './clock';

describe('clocks', () => {
  it('a manual clock stands still until set or advanced, and hands out copies', () => {
    const clock = new ManualClock(new Date('2027-01-31T10:00:00.000Z'));
    const before = clock.now();
    before.setUTCFullYear(1999);
    expect(clock.now().toISOString()).toBe('2027-01-31T10:00:00.000Z');
    expect(clock.advance(86_400_000).toISOString()).toBe('2027-02-01T10:00:00.000Z');
    clock.set(new Date('2026-12-01T00:00:00.000Z'));
    expect(clock.now().toISOString()).toBe('2026-12-01T00:00:00.000Z');
  });

  it('refuses to go backwards by advance, or to hold an invalid date', () => {
    const clock = new ManualClock(new Date('2027-01-01T00:00:00.000Z'));
    expect(() => clock.advance(-1)).toThrow(RangeError);
    expect(() => clock.advance(1.5)).toThrow(RangeError);
    expect(() => clock.advance(9e15)).toThrow('valid Date');
    expect(() => clock.set(new Date(Number.NaN))).toThrow('valid Date');
    expect(() => new ManualClock(new Date('not a date'))).toThrow('valid Date');
    expect(clock.now().toISOString()).toBe('2027-01-01T00:00:00.000Z');
  });

  it('the system clock reads the real time', () => {
    expect(systemClock.now()).toBeInstanceOf(Date);
  });
});
