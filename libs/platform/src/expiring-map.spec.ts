import { afterEach, describe, expect, it, vi } from 'vitest';
import { ExpiringMap } from './expiring-map';

describe('ExpiringMap', () => {
  afterEach(() => vi.useRealTimers());

  it('answers a value until its time is up, then never again', () => {
    vi.useFakeTimers({ now: 1_000 });
    const map = new ExpiringMap<string, number>(500);
    map.set('a', 1);
    vi.setSystemTime(1_499);
    expect(map.get('a')).toBe(1);
    vi.setSystemTime(1_500);
    expect(map.get('a')).toBeUndefined();
    vi.setSystemTime(1_000);
    expect(map.get('a')).toBeUndefined();
  });

  it('keeps nothing with a time of 0, forgets a deleted key, and starts over once full', () => {
    const none = new ExpiringMap<string, number>(0);
    none.set('a', 1);
    expect(none.get('a')).toBeUndefined();
    const map = new ExpiringMap<string, number>(60_000, 2);
    map.set('a', 1);
    map.delete('a');
    expect(map.get('a')).toBeUndefined();
    map.set('a', 1);
    map.set('b', 2);
    map.set('c', 3);
    expect([map.get('a'), map.get('b'), map.get('c')]).toEqual([undefined, undefined, 3]);
  });
});
