import { exactAverage, summarySql, windowEnd } from './meter';
import { parseTime, parseUsageEvents } from './usage-event';

describe('usage meters: exact averages', () => {
  it('divides the exact sum by the count, rounded half away from zero to 18 places, trailing zeros dropped', () => {
    expect(exactAverage('19.75/3')).toBe('6.583333333333333333');
    expect(exactAverage('2/3')).toBe('0.666666666666666667');
    expect(exactAverage('-2/3')).toBe('-0.666666666666666667');
    expect(exactAverage('12.5/2')).toBe('6.25');
    expect(exactAverage('99999999999999999999999999998/2')).toBe('49999999999999999999999999999');
    expect(exactAverage('0.000000000000000001/2')).toBe('0.000000000000000001'); // 5e-19 rounds away from zero
    expect(exactAverage('-0.000000000000000001/3')).toBe('0');
    expect(exactAverage('0/5')).toBe('0');
    expect(exactAverage(null)).toBeNull();
  });
});

describe('usage meters: windows and SQL', () => {
  it('ends hour, day and month windows in UTC (months of any length)', () => {
    expect(windowEnd(new Date('2026-01-31T00:00:00Z'), 'day').toISOString()).toBe('2026-02-01T00:00:00.000Z');
    expect(windowEnd(new Date('2026-02-01T00:00:00Z'), 'month').toISOString()).toBe('2026-03-01T00:00:00.000Z');
    expect(windowEnd(new Date('2026-12-01T23:00:00Z'), 'hour').toISOString()).toBe('2026-12-02T00:00:00.000Z');
  });

  it('binds every value as a parameter: keys, types and paths never become SQL text', () => {
    const { text, values } = summarySql(
      { key: 'k', eventType: "x'; DROP TABLE t; --", aggregation: 'sum', valueProperty: '$.a.b', groupBy: { m: '$.model' } },
      { merchantId: '00000000-0000-4000-8000-000000000000', subject: "o'brien", windowSize: 'day' },
    );
    expect(text).not.toContain('DROP');
    expect(text).not.toContain("o'brien");
    expect(values).toEqual(['00000000-0000-4000-8000-000000000000', "x'; DROP TABLE t; --", "o'brien", ['a', 'b'], ['model']]);
  });
});

describe('usage events: parsing', () => {
  const now = new Date('2026-12-02T12:00:00Z');
  it('reads RFC 3339 times and refuses impossible dates', () => {
    expect(parseTime('2026-12-02T10:00:00.123456Z')?.toISOString()).toBe('2026-12-02T10:00:00.123Z');
    expect(parseTime('2026-12-02t10:00:00+02:00')?.toISOString()).toBe('2026-12-02T08:00:00.000Z');
    for (const bad of ['2026-02-29T00:00:00Z', '2026-12-02T24:00:00Z', '2026-12-02T10:00Z', '2026-12-02', 1733133600, ''])
      expect(parseTime(bad)).toBeUndefined();
  });

  it('reads one event or a batch, all or none, and names each problem by its place', () => {
    const ok = { id: '1', source: 's', type: 't', subject: 'c' };
    expect(parseUsageEvents(ok, 'json', now)).toEqual({ ok: true, events: [{ ...ok, time: now, data: null }] });
    expect(parseUsageEvents([ok, { ...ok, id: '2', data: { n: 1 } }], 'batch', now)).toMatchObject({
      ok: true,
      events: [{ id: '1' }, { id: '2', data: '{"n":1}' }],
    });
    expect(parseUsageEvents([ok, { ...ok, subject: '' }], 'json', now)).toEqual({
      ok: false,
      problems: [{ name: 'events[1].subject', reason: 'must be a string of 1 to 256 characters', reasonCode: 'invalid_event' }],
    });
    expect(parseUsageEvents(Array(101).fill(ok), 'json', now)).toEqual({ ok: false, tooMany: 101 });
    // what PostgreSQL cannot store is refused here, not by a failing INSERT
    const unstorable = [
      { ...ok, id: 'a\u0000b' },
      { ...ok, subject: '\ud800' },
      { ...ok, data: { note: 'x\u0000' } },
      { ...ok, data: { list: [{ ['\udc00']: 1 }] } },
    ];
    const refused = parseUsageEvents(unstorable, 'json', now);
    expect('problems' in refused && refused.problems.map((p) => p.name)).toEqual(['events[0].id', 'events[1].subject', 'events[2].data', 'events[3].data']);
    expect(parseUsageEvents({ ...ok, data: { emoji: '\ud83d\ude00', text: 'a\\u0000' } }, 'json', now).ok).toBe(true);
    expect(parseUsageEvents(JSON.parse('{"id":"1","source":"s","type":"t","subject":"c","__proto__":{}}'), 'json', now)).toMatchObject({
      ok: false,
      problems: [{ name: 'event.__proto__' }],
    });
  });
});
