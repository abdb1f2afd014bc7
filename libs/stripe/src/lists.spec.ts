import { startFixture, type FakeStripeFixture } from '../test/fixture';

describe('lists', () => {
  let f: FakeStripeFixture;
  const ids: string[] = [];
  const created: number[] = [];
  beforeAll(async () => {
    f = await startFixture();
    // seven PaymentIntents, one "day" apart, so created filters have something to cut
    for (let i = 0; i < 7; i++) {
      const intent = await f.stripe.paymentIntents.create({ amount: 100 + i, currency: 'usd' });
      ids.push(intent.id);
      created.push(intent.created);
      f.advance(86_400);
    }
  });
  afterAll(() => f.fake.stop());

  const newestFirst = () => [...ids].reverse();

  it('lists newest first in Stripe list shape, limit 10 by default', async () => {
    const page = await f.stripe.paymentIntents.list();
    expect(page).toMatchObject({ object: 'list', has_more: false, url: '/v1/payment_intents' });
    expect(page.data.map((intent) => intent.id)).toEqual(newestFirst());
  });

  it('pages forwards with starting_after and backwards with ending_before', async () => {
    const first = await f.stripe.paymentIntents.list({ limit: 3 });
    expect(first.has_more).toBe(true);
    const second = await f.stripe.paymentIntents.list({ limit: 3, starting_after: first.data[2].id });
    expect(second.data.map((intent) => intent.id)).toEqual(newestFirst().slice(3, 6));
    const back = await f.stripe.paymentIntents.list({ limit: 2, ending_before: second.data[0].id });
    expect(back.data.map((intent) => intent.id)).toEqual(newestFirst().slice(1, 3));
    expect(back.has_more).toBe(true);
  });

  it('auto-paginates forwards and backwards through every object', async () => {
    expect((await f.stripe.paymentIntents.list({ limit: 2 }).autoPagingToArray({ limit: 100 })).map((intent) => intent.id)).toEqual(newestFirst());
    // backwards from the oldest: the SDK yields objects oldest to newest
    const backwards = await f.stripe.paymentIntents.list({ limit: 2, ending_before: ids[0] }).autoPagingToArray({ limit: 100 });
    expect(backwards.map((intent) => intent.id)).toEqual(ids.slice(1));
  });

  it('filters by created with ranges and an exact second', async () => {
    const range = await f.stripe.paymentIntents.list({ created: { gte: created[2], lt: created[5] } }).autoPagingToArray({ limit: 100 });
    expect(range.map((intent) => intent.id)).toEqual([ids[4], ids[3], ids[2]]);
    const open = await f.stripe.paymentIntents.list({ created: { gt: created[5] } });
    expect(open.data.map((intent) => intent.id)).toEqual([ids[6]]);
    const upTo = await f.stripe.paymentIntents.list({ created: { lte: created[0] } });
    expect(upTo.data.map((intent) => intent.id)).toEqual([ids[0]]);
    const exact = await f.stripe.paymentIntents.list({ created: created[3] });
    expect(exact.data.map((intent) => intent.id)).toEqual([ids[3]]);
  });

  it('refuses a bad limit, an unknown cursor, both cursors and unknown filters', async () => {
    const attempt = (params: object) => f.stripe.paymentIntents.list(params).catch((e: unknown) => e);
    expect(await attempt({ limit: 101 })).toMatchObject({ statusCode: 400, param: 'limit' });
    expect(await attempt({ limit: 0 })).toMatchObject({ statusCode: 400, param: 'limit' });
    expect(await attempt({ starting_after: 'pi_nope' })).toMatchObject({ statusCode: 400, code: 'resource_missing', param: 'starting_after' });
    expect(await attempt({ starting_after: ids[0], ending_before: ids[1] })).toMatchObject({ statusCode: 400 });
    expect(await attempt({ created: { after: 1 } })).toMatchObject({ code: 'parameter_unknown', param: 'created[after]' });
  });

  it('lists events, filtered by type (with a wildcard) and created, and retrieves one', async () => {
    const all = await f.stripe.events.list({ limit: 100 });
    expect(all.data).toHaveLength(7);
    expect(all.data.every((event) => event.type === 'payment_intent.created')).toBe(true);
    expect(all.data[0]).toMatchObject({ object: 'event', livemode: false, api_version: '2026-10-28.endive', data: { object: { id: ids[6] } } });
    expect(all.data[0].request?.id).toMatch(/^req_/);
    expect((await f.stripe.events.list({ type: 'payment_intent.*' })).data).toHaveLength(7);
    expect((await f.stripe.events.list({ type: '*.created' })).data).toHaveLength(7);
    expect((await f.stripe.events.list({ type: 'payment*created' })).data).toHaveLength(7);
    expect((await f.stripe.events.list({ types: ['charge.*', 'payment_intent.succeeded'] })).data).toHaveLength(0);
    expect((await f.stripe.events.list({ type: 'charge.succeeded' })).data).toHaveLength(0);
    expect((await f.stripe.events.list({ created: { gte: created[6] } })).data).toHaveLength(1);
    expect(await f.stripe.events.retrieve(all.data[3].id)).toEqual(all.data[3]);
    expect(f.fake.events().map((event) => event.id)).toEqual(all.data.map((event) => event.id).reverse());
  });
});
