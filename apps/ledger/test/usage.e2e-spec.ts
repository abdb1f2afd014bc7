import { randomUUID } from 'node:crypto';
import { ManualClock } from '@mp/billing';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { call, type Answer } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const DAY = 24 * 3600_000;
/** The ledger's billing clock stands still here, so the edges of the accepted time window are exact. */
const NOW = new Date('2026-12-02T12:00:00.000Z');

describe('ledger API: usage events and meters', () => {
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  const clock = new ManualClock(NOW);

  const send = async (body: unknown, key: string | undefined, contentType = 'application/json'): Promise<Answer> => {
    const response = await fetch(`${ledger.url}/usage/events`, {
      method: 'POST',
      headers: { 'content-type': contentType, ...(key && { authorization: `Bearer ${key}` }) },
      body: typeof body === 'string' ? body : JSON.stringify(body),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : text, headers: response.headers };
  };
  const get = (path: string, key?: string) => call(`${ledger.url}${path}`, { key });
  const post = (path: string, body: unknown, key?: string) => call(`${ledger.url}${path}`, { key, method: 'POST', body });

  const event = (extra: Record<string, unknown> = {}) => ({
    specversion: '1.0',
    id: randomUUID(),
    source: 'test/usage',
    type: 'api.call',
    subject: 'customer-1',
    time: new Date(NOW.getTime() - 3600_000).toISOString(),
    data: { tokens: 10 },
    ...extra,
  });
  /** The events stored for the merchant, as (source, id) pairs. */
  const stored = async (merchant: TestMerchant) =>
    (
      await ledger.db.$queryRawUnsafe<{ key: string }[]>(
        `SELECT source || '/' || event_id AS key FROM ledger.usage_events WHERE merchant_id = $1::uuid ORDER BY 1`,
        merchant.merchantId,
      )
    ).map((r) => r.key);

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url }, { clock });
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
  });

  it('requires a merchant API key on every usage route', async () => {
    for (const answer of [
      await send([event()], undefined),
      await send([event()], 'mpk_not_a_key'),
      await get('/usage/meters'),
      await post('/usage/meters', { id: 'm', eventType: 'x', aggregation: 'count' }),
      await get('/usage/meters/m/summary'),
    ]) {
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ code: 'unauthorized' });
    }
  });

  describe('dedupe on (merchant, source, id)', () => {
    it('stores a retried batch once: a retry is counted as duplicates, a partly new batch stores only the new events', async () => {
      const merchant = createMerchant('Usage dedupe merchant');
      const batch = [event(), event(), event({ source: 'test/other' })];
      expect(await send(batch, merchant.apiKey, 'application/cloudevents-batch+json')).toMatchObject({ status: 200, body: { accepted: 3, duplicates: 0 } });
      expect((await send(batch, merchant.apiKey, 'application/cloudevents-batch+json')).body).toEqual({ accepted: 0, duplicates: 3 });
      // the same id from another source is another event; a copy with other content is still a duplicate (first wins)
      const [first] = batch;
      const next = [{ ...first, data: { tokens: 999 } }, event({ id: first.id, source: 'test/third' }), event()];
      expect((await send(next, merchant.apiKey)).body).toEqual({ accepted: 2, duplicates: 1 });
      // one event alone, as application/cloudevents+json
      expect((await send(batch[1], merchant.apiKey, 'application/cloudevents+json')).body).toEqual({ accepted: 0, duplicates: 1 });
      // the same event twice in one batch is stored once
      const twice = event();
      expect((await send([twice, twice, event()], merchant.apiKey)).body).toEqual({ accepted: 2, duplicates: 1 });
      // sources and ids are compared whole: these two are different events
      const tricky = [event({ source: 'a\nb', id: 'c' }), event({ source: 'a', id: 'b\nc' })];
      expect((await send(tricky, merchant.apiKey)).body).toEqual({ accepted: 2, duplicates: 0 });
      expect(await stored(merchant)).toHaveLength(9);
      const [{ tokens }] = await ledger.db.$queryRawUnsafe<{ tokens: number }[]>(
        `SELECT (data->>'tokens')::int AS tokens FROM ledger.usage_events WHERE merchant_id = $1::uuid AND source = $2 AND event_id = $3`,
        merchant.merchantId,
        first.source,
        first.id,
      );
      expect(tokens).toBe(10);
    });

    it('keeps merchants apart: the same (source, id) of two merchants is two events', async () => {
      const a = createMerchant('Usage merchant A');
      const b = createMerchant('Usage merchant B');
      const shared = event();
      expect((await send([shared], a.apiKey)).body).toEqual({ accepted: 1, duplicates: 0 });
      expect((await send([shared], b.apiKey)).body).toEqual({ accepted: 1, duplicates: 0 });
      expect(await stored(a)).toEqual([`${shared.source}/${shared.id}`]);
      expect(await stored(b)).toEqual([`${shared.source}/${shared.id}`]);
    });

    it('stores concurrent identical batches, and concurrent copies of one event, exactly once', async () => {
      const merchant = createMerchant('Usage concurrency merchant');
      const batch = Array.from({ length: 100 }, () => event());
      const answers = await Promise.all(Array.from({ length: 8 }, () => send(batch, merchant.apiKey)));
      expect(answers.map((a) => a.status)).toEqual(Array(8).fill(200));
      expect(answers.reduce((n, a) => n + a.body.accepted, 0)).toBe(100);
      expect(answers.reduce((n, a) => n + a.body.duplicates, 0)).toBe(700);

      // one-event requests are coalesced into shared INSERTs: copies of an event never share one, and one wins
      const one = event();
      const singles = await Promise.all(Array.from({ length: 20 }, () => send(one, merchant.apiKey)));
      expect(singles.filter((a) => a.body.accepted === 1)).toHaveLength(1);
      expect(singles.filter((a) => a.body.duplicates === 1)).toHaveLength(19);
      // many different events at once: each stored
      const many = Array.from({ length: 50 }, () => event());
      const manyAnswers = await Promise.all(many.map((e) => send(e, merchant.apiKey)));
      expect(manyAnswers.every((a) => a.status === 200 && a.body.accepted === 1)).toBe(true);
      expect(await stored(merchant)).toHaveLength(151);
    });

    it('remembers events across a restart of the ledger', async () => {
      const merchant = createMerchant('Usage restart merchant');
      const batch = [event(), event()];
      expect((await send(batch, merchant.apiKey)).body).toEqual({ accepted: 2, duplicates: 0 });
      await ledger.close();
      ledger = await startLedger({ FACILITATOR_URL: facilitator.url }, { clock });
      expect((await send([...batch, event()], merchant.apiKey)).body).toEqual({ accepted: 1, duplicates: 2 });
      expect(await stored(merchant)).toHaveLength(3);
    });
  });

  describe('the accepted time window: 35 days back to 5 minutes ahead', () => {
    it('accepts events at both edges, and an event without time as received now', async () => {
      const merchant = createMerchant('Usage window merchant');
      const oldest = event({ time: new Date(NOW.getTime() - 35 * DAY).toISOString() });
      const latest = event({ time: new Date(NOW.getTime() + 5 * 60_000).toISOString() });
      const { time: _time, ...timeless } = event();
      const offset = event({ time: '2026-12-02T13:04:59.999+01:00' });
      expect((await send([oldest, latest, timeless, offset], merchant.apiKey)).body).toEqual({ accepted: 4, duplicates: 0 });
      const times = await ledger.db.$queryRawUnsafe<{ event_id: string; time: Date }[]>(
        `SELECT event_id, time FROM ledger.usage_events WHERE merchant_id = $1::uuid`,
        merchant.merchantId,
      );
      const timeOf = (id: string) => times.find((t) => t.event_id === id)!.time.toISOString();
      expect(timeOf(oldest.id)).toBe('2026-10-28T12:00:00.000Z');
      expect(timeOf(latest.id)).toBe('2026-12-02T12:05:00.000Z');
      expect(timeOf(timeless.id)).toBe(NOW.toISOString());
      expect(timeOf(offset.id)).toBe('2026-12-02T12:04:59.999Z');
    });

    it('refuses the whole batch for an event a millisecond too old or too far ahead, naming it, and stores nothing', async () => {
      const merchant = createMerchant('Usage window refusals merchant');
      const tooOld = await send([event(), event({ time: new Date(NOW.getTime() - 35 * DAY - 1).toISOString() }), event()], merchant.apiKey);
      expect(tooOld.status).toBe(400);
      expect(tooOld.body).toMatchObject({
        code: 'event_too_old',
        invalidParams: [{ name: 'events[1].time', reasonCode: 'event_too_old', reason: expect.stringContaining('2026-10-28T12:00:00.000Z') }],
      });
      const ahead = await send(event({ time: new Date(NOW.getTime() + 5 * 60_000 + 1).toISOString() }), merchant.apiKey, 'application/cloudevents+json');
      expect(ahead.status).toBe(400);
      expect(ahead.body).toMatchObject({ code: 'event_in_future', invalidParams: [{ name: 'event.time', reasonCode: 'event_in_future' }] });
      // one malformed event among them makes the batch validation_failed, every problem still named
      const mixed = await send([event({ time: '2020-01-01T00:00:00Z' }), event({ id: '' })], merchant.apiKey);
      expect(mixed.status).toBe(400);
      expect(mixed.body.code).toBe('validation_failed');
      expect(mixed.body.invalidParams).toEqual([
        { name: 'events[0].time', reasonCode: 'event_too_old', reason: expect.any(String) },
        { name: 'events[1].id', reasonCode: 'invalid_event', reason: 'must be a string of 1 to 256 characters' },
      ]);
      expect(await stored(merchant)).toEqual([]);

      // the window moves with the clock: the same event a day later is too old
      const edge = event({ time: new Date(NOW.getTime() - 35 * DAY).toISOString() });
      clock.set(new Date(NOW.getTime() + 1));
      try {
        expect((await send([edge], merchant.apiKey)).body.code).toBe('event_too_old');
      } finally {
        clock.set(NOW);
      }
    });
  });

  it('refuses malformed bodies and events with 400 and a reason naming each, storing nothing', async () => {
    const merchant = createMerchant('Usage malformed merchant');
    const refused = async (body: unknown, contentType?: string) => {
      const answer = await send(body, merchant.apiKey, contentType);
      expect(answer.status).toBe(400);
      return answer.body;
    };
    const { id: _id, ...noId } = event();
    const { subject: _subject, ...noSubject } = event();
    expect((await refused([event(), noId, noSubject])).invalidParams).toEqual([
      { name: 'events[1].id', reason: 'is required', reasonCode: 'invalid_event' },
      { name: 'events[2].subject', reason: 'is required', reasonCode: 'invalid_event' },
    ]);
    const names = async (e: Record<string, unknown>) => (await refused([e])).invalidParams.map((p: { name: string }) => p.name);
    expect(await names(event({ specversion: '0.3' }))).toEqual(['events[0].specversion']);
    expect(await names(event({ time: '2026-12-02 10:00:00' }))).toEqual(['events[0].time']);
    expect(await names(event({ time: '2026-02-30T10:00:00Z' }))).toEqual(['events[0].time']);
    expect(await names(event({ data: [1, 2] }))).toEqual(['events[0].data']);
    expect(await names(event({ data: 'text' }))).toEqual(['events[0].data']);
    expect(await names(event({ type: 42 }))).toEqual(['events[0].type']);
    expect(await names(event({ source: 'x'.repeat(513) }))).toEqual(['events[0].source']);
    expect(await names(event({ Bad_Name: 1 }))).toEqual(['events[0].Bad_Name']);
    expect(await names(event({ datacontenttype: 'text/plain' }))).toEqual(['events[0].datacontenttype']);
    // what PostgreSQL cannot store (NUL, an unpaired surrogate) is a 400, never a failed INSERT
    expect(await names(event({ data: { note: 'a\u0000b' } }))).toEqual(['events[0].data']);
    expect(await names(event({ subject: 'x\ud800' }))).toEqual(['events[0].subject']);
    expect((await refused([event(), 7])).invalidParams).toEqual([
      { name: 'events[1]', reason: 'must be a JSON object (a CloudEvent)', reasonCode: 'invalid_event' },
    ]);
    // the body's shape
    expect((await refused([])).detail).toMatch(/empty/);
    expect((await refused('"text"')).code).toBe('validation_failed');
    expect((await refused([event()], 'application/cloudevents+json')).detail).toMatch(/one event/);
    expect((await refused(event(), 'application/cloudevents-batch+json')).detail).toMatch(/array/);
    // more than 100 events: 413
    const tooMany = await send(
      Array.from({ length: 101 }, () => event()),
      merchant.apiKey,
    );
    expect(tooMany.status).toBe(413);
    expect(tooMany.body).toMatchObject({ code: 'payload_too_large', maxEvents: 100 });
    // not JSON
    expect((await send('{"id":', merchant.apiKey)).body.code).toBe('malformed_json');
    expect((await send('id=1', merchant.apiKey, 'application/x-www-form-urlencoded')).status).toBe(415);
    // extension attributes are accepted (and not kept); a missing specversion is 1.0
    const { specversion: _v, ...noVersion } = event({ traceparent: '00-abc', region2: 'eu' });
    expect((await send([noVersion], merchant.apiKey)).body).toEqual({ accepted: 1, duplicates: 0 });
    expect(await stored(merchant)).toHaveLength(1);
  });

  describe('meters', () => {
    it('creates a meter idempotently by key, refuses another definition under it, and validates definitions', async () => {
      const merchant = createMerchant('Usage meters merchant');
      const other = createMerchant('Usage meters merchant B');
      const meter = { id: 'tokens', eventType: 'llm.call', aggregation: 'sum', valueProperty: '$.usage.tokens', groupBy: { model: '$.model' } };
      const created = await post('/usage/meters', meter, merchant.apiKey);
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ ...meter, createdAt: expect.any(String) });
      expect((await post('/usage/meters', meter, merchant.apiKey)).status).toBe(200);
      const conflict = await post('/usage/meters', { ...meter, aggregation: 'max', groupBy: {} }, merchant.apiKey);
      expect(conflict.status).toBe(409);
      expect(conflict.body).toMatchObject({ code: 'meter_conflict', conflictingFields: ['aggregation', 'groupBy'] });
      expect((await get('/usage/meters/tokens', merchant.apiKey)).body).toEqual(created.body);
      expect((await get('/usage/meters', merchant.apiKey)).body).toEqual({ data: [created.body] });
      // another merchant's meters are its own
      expect((await get('/usage/meters/tokens', other.apiKey)).status).toBe(404);
      expect((await get('/usage/meters/tokens/summary', other.apiKey)).body.code).toBe('not_found');

      const invalid = async (body: Record<string, unknown>) => {
        const answer = await post('/usage/meters', { id: 'bad', eventType: 'x', ...body }, merchant.apiKey);
        expect(answer.status).toBe(400);
        return answer.body.invalidParams.map((p: { name: string; reason: string }) => `${p.name}: ${p.reason}`);
      };
      expect(await invalid({ aggregation: 'sum' })).toEqual(['valueProperty: is required unless aggregation is count']);
      expect(await invalid({ aggregation: 'count', valueProperty: '$.x' })).toEqual(['valueProperty: must be absent when aggregation is count']);
      expect(await invalid({ aggregation: 'median', valueProperty: '$.x' })).toEqual([expect.stringMatching(/^aggregation: must be one of sum, count/)]);
      expect(await invalid({ aggregation: 'max', valueProperty: 'tokens' })).toEqual([expect.stringMatching(/^valueProperty: must be a JSON path/)]);
      expect(await invalid({ aggregation: 'max', valueProperty: '$.a', groupBy: { 'bad name': '$.b' } })).toEqual([expect.stringMatching(/^groupBy: /)]);
      expect(await invalid({ aggregation: 'count', id: '-x' })).toEqual([expect.stringMatching(/^id: /)]);
      expect(await invalid({ aggregation: 'count', eventType: 'a\u0000' })).toEqual([expect.stringMatching(/^eventType: must not contain the NUL/)]);
      const badQuery = await get('/usage/meters/tokens/summary?windowSize=week&from=yesterday&subject=a%00b', merchant.apiKey);
      expect(badQuery.status).toBe(400);
      expect(badQuery.body.invalidParams.map((p: { name: string }) => p.name).sort()).toEqual(['from', 'subject', 'windowSize']);
      // a time PostgreSQL cannot hold is refused, not a failed query
      const yearZero = await get('/usage/meters/tokens/summary?from=0000-06-01T00:00:00Z&to=0001-01-01T00:00:00%2B01:00', merchant.apiKey);
      expect(yearZero.status).toBe(400);
      expect(yearZero.body.invalidParams).toEqual([
        { name: 'from', reason: 'must be at or after 0001-01-01T00:00:00Z' },
        { name: 'to', reason: 'must be at or after 0001-01-01T00:00:00Z' },
      ]);
    });

    it('computes every aggregation per window in SQL, exactly, per subject and groupBy', async () => {
      const merchant = createMerchant('Usage aggregation merchant');
      const usage = (time: string, data: Record<string, unknown> | undefined, subject = 'alice') => event({ type: 'llm.call', subject, time, data });
      // Dec 1 and Dec 2 (UTC); values as numbers and as decimal strings; some events carry no usable value
      const events = [
        usage('2026-12-01T09:15:00Z', { tokens: 10, model: 'small', user: 'u1' }),
        usage('2026-12-01T09:45:00Z', { tokens: '2.5', model: 'small', user: 'u2' }),
        usage('2026-12-01T10:05:00Z', { tokens: 7.25, model: 'large', user: 'u1' }),
        usage('2026-12-01T10:30:00Z', { tokens: 'many', model: 'large', user: 'u3' }), // not a number: no value
        usage('2026-12-01T11:00:00Z', undefined), // no data at all
        usage('2026-12-02T08:00:00Z', { tokens: '100000000000000000000000000001', model: 'small', user: 'u1' }),
        usage('2026-12-02T07:00:00Z', { tokens: -3, model: 'small', user: 'u4' }),
        usage('2026-12-01T12:00:00Z', { tokens: 1000, model: 'small', user: 'u9' }, 'bob'), // another subject
        event({ type: 'other.type', subject: 'alice', time: '2026-12-01T09:00:00Z', data: { tokens: 5000 } }), // another type
      ];
      // sent in an order unlike their times: latest is by event time, not arrival
      expect((await send(events.reverse(), merchant.apiKey)).body).toEqual({ accepted: 9, duplicates: 0 });

      const meters: Record<string, Record<string, unknown>> = {
        'tok-sum': { aggregation: 'sum', valueProperty: '$.tokens' },
        'tok-count': { aggregation: 'count' },
        'tok-min': { aggregation: 'min', valueProperty: '$.tokens' },
        'tok-max': { aggregation: 'max', valueProperty: '$.tokens' },
        'tok-avg': { aggregation: 'avg', valueProperty: '$.tokens' },
        users: { aggregation: 'unique_count', valueProperty: '$.user' },
        'tok-latest': { aggregation: 'latest', valueProperty: '$.tokens' },
        'tok-by-model': { aggregation: 'sum', valueProperty: '$.tokens', groupBy: { model: '$.model' } },
      };
      for (const [id, definition] of Object.entries(meters)) {
        expect((await post('/usage/meters', { id, eventType: 'llm.call', ...definition }, merchant.apiKey)).status).toBe(201);
      }
      const summary = async (meter: string, query: string) => {
        const answer = await get(`/usage/meters/${meter}/summary?${query}`, merchant.apiKey);
        expect(answer.status).toBe(200);
        return answer.body;
      };
      const values = async (meter: string, query: string) => (await summary(meter, query)).data.map((d: { value: string | null }) => d.value);
      const alice = 'subject=alice&from=2026-12-01T00:00:00Z&to=2026-12-03T00:00:00Z';

      // per day, alice: Dec 1 values 10, 2.5, 7.25 (+ 2 events without one); Dec 2 values 1e29+1 and -3
      expect(await values('tok-sum', `${alice}&windowSize=day`)).toEqual(['19.75', '99999999999999999999999999998']);
      expect(await values('tok-count', `${alice}&windowSize=day`)).toEqual(['5', '2']);
      expect(await values('tok-min', `${alice}&windowSize=day`)).toEqual(['2.5', '-3']);
      expect(await values('tok-max', `${alice}&windowSize=day`)).toEqual(['10', '100000000000000000000000000001']);
      // 19.75 / 3 = 6.58333…, rounded to 18 places; (1e29 + 1 - 3) / 2 exactly
      expect(await values('tok-avg', `${alice}&windowSize=day`)).toEqual(['6.583333333333333333', '49999999999999999999999999999']);
      expect(await values('users', `${alice}&windowSize=day`)).toEqual(['3', '2']);
      // latest by event time: Dec 1 the 10:05 value (the 10:30 and 11:00 events carry none), Dec 2 the 08:00 one
      expect(await values('tok-latest', `${alice}&windowSize=day`)).toEqual(['7.25', '100000000000000000000000000001']);

      // one window (none), every subject: bob's 1000 joins
      const whole = await summary('tok-sum', 'from=2026-12-01T00:00:00Z&to=2026-12-03T00:00:00Z');
      expect(whole).toEqual({
        meter: 'tok-sum',
        aggregation: 'sum',
        subject: null,
        from: '2026-12-01T00:00:00.000Z',
        to: '2026-12-03T00:00:00.000Z',
        windowSize: 'none',
        data: [{ windowStart: '2026-12-01T00:00:00.000Z', windowEnd: '2026-12-03T00:00:00.000Z', value: '100000000000000000000000001017.75' }],
      });
      expect(await values('users', 'windowSize=none')).toEqual(['5']);
      expect(await values('tok-latest', 'windowSize=none')).toEqual(['100000000000000000000000000001']);

      // per hour, with bounds cutting a window: [09:30, 10:30) holds the 09:45 and 10:05 events
      const hours = await summary('tok-sum', 'subject=alice&from=2026-12-01T09:30:00Z&to=2026-12-01T10:30:00Z&windowSize=hour');
      expect(hours.data).toEqual([
        { windowStart: '2026-12-01T09:00:00.000Z', windowEnd: '2026-12-01T10:00:00.000Z', value: '2.5' },
        { windowStart: '2026-12-01T10:00:00.000Z', windowEnd: '2026-12-01T11:00:00.000Z', value: '7.25' },
      ]);
      // per month: one window, December
      expect((await summary('tok-count', 'subject=alice&windowSize=month')).data).toEqual([
        { windowStart: '2026-12-01T00:00:00.000Z', windowEnd: '2027-01-01T00:00:00.000Z', value: '7' },
      ]);
      // a window with events but no values: min is null; no events at all: no windows
      expect(await values('tok-min', 'subject=alice&from=2026-12-01T10:30:00Z&to=2026-12-01T11:30:00Z')).toEqual([null]);
      expect(await values('tok-sum', 'subject=carol')).toEqual([]);

      // groupBy: per model (an event without the dimension is its own group, null)
      const byModel = await summary('tok-by-model', `${alice}&windowSize=none`);
      expect(byModel.data).toEqual([
        { windowStart: '2026-12-01T00:00:00.000Z', windowEnd: '2026-12-03T00:00:00.000Z', groupBy: { model: 'large' }, value: '7.25' },
        {
          windowStart: '2026-12-01T00:00:00.000Z',
          windowEnd: '2026-12-03T00:00:00.000Z',
          groupBy: { model: 'small' },
          value: '100000000000000000000000000010.5',
        },
        { windowStart: '2026-12-01T00:00:00.000Z', windowEnd: '2026-12-03T00:00:00.000Z', groupBy: { model: null }, value: '0' },
      ]);
      // avg of values given as decimal strings and numbers alike: (10 + 2.5) / 2 in the 09:00 hour
      expect(await values('tok-avg', 'subject=alice&from=2026-12-01T09:00:00Z&to=2026-12-01T10:00:00Z&windowSize=hour')).toEqual(['6.25']);
    });
  });
});
