import Stripe from 'stripe';
import { startFixture, untyped, type FakeStripeFixture } from '../test/fixture';
import { parseQuery } from './search';

describe('PaymentIntent search and injected faults', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(() => f.fake.stop());

  const charge = async (key: string, metadata: Record<string, string>, amount = 500) => {
    const token = await f.grantToken();
    return f.stripe.paymentIntents.create(untyped({ amount, currency: 'usd', confirm: true, shared_payment_granted_token: token.id, metadata }), {
      idempotencyKey: key,
    });
  };
  const byChallenge = (challengeId: string) => f.stripe.paymentIntents.search({ query: `metadata['challenge_id']:'${challengeId}'` });

  it('finds PaymentIntents by metadata with the SDK search call, newest first, paged', async () => {
    const first = await charge('search-1', { challenge_id: 'ch_search_a' });
    const second = await charge('search-2', { challenge_id: 'ch_search_a', merchant_id: 'm1' });
    await charge('search-3', { challenge_id: 'ch_search_b' });

    const found = await byChallenge('ch_search_a');
    expect(found.object).toBe('search_result');
    expect(found.data.map((pi) => pi.id)).toEqual([second.id, first.id]);
    expect((await byChallenge('ch_search_missing')).data).toEqual([]);

    const both = await f.stripe.paymentIntents.search({
      query: `metadata["challenge_id"]:"ch_search_a" AND metadata['merchant_id']:'m1' AND status:'succeeded' AND amount:500`,
    });
    expect(both.data.map((pi) => pi.id)).toEqual([second.id]);

    const page1 = await f.stripe.paymentIntents.search({ query: `metadata['challenge_id']:'ch_search_a'`, limit: 1 });
    expect(page1).toMatchObject({ has_more: true, next_page: expect.any(String) });
    const page2 = await f.stripe.paymentIntents.search({ query: `metadata['challenge_id']:'ch_search_a'`, limit: 1, page: page1.next_page! });
    expect(page2.data.map((pi) => pi.id)).toEqual([first.id]);
    expect(page2.has_more).toBe(false);
  });

  it('refuses a query it cannot read with a 400 naming the clause, not a wrong match', async () => {
    const error = await f.stripe.paymentIntents.search({ query: `metadata['challenge_id']:'a' OR status:'succeeded'` }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect((error as Stripe.errors.StripeError).param).toBe('query');
    expect(() => parseQuery(`customer:'cus_1'`)).toThrow(/cannot read "customer:'cus_1'"/);
    expect(() => parseQuery(`metadata:'x'`)).toThrow(/cannot read/);
    expect(parseQuery(`status:'succeeded' AND metadata['k']:'v'`)).toEqual([
      { field: 'status', value: 'succeeded' },
      { field: 'metadata', key: 'k', value: 'v' },
    ]);
  });

  it('answers 409 idempotency_key_in_use to a request whose key a held request is using; the held one still charges', async () => {
    const held = f.fake.hold('POST', '/v1/payment_intents');
    const token = await f.grantToken();
    const params = untyped<Stripe.PaymentIntentCreateParams>({
      amount: 700,
      currency: 'usd',
      confirm: true,
      shared_payment_granted_token: token.id,
      metadata: { challenge_id: 'ch_held' },
    });
    const original = f.stripe.paymentIntents.create(params, { idempotencyKey: 'held-key' });
    await held.reached;

    const duplicate = await f.stripe.paymentIntents.create(params, { idempotencyKey: 'held-key' }).catch((e: unknown) => e);
    // stripe-node makes any 409 a StripeAPIError; the code says why.
    expect(duplicate).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(duplicate).toMatchObject({ statusCode: 409, code: 'idempotency_key_in_use' });
    expect((await byChallenge('ch_held')).data).toEqual([]);

    held.release();
    const intent = await original;
    expect(intent.status).toBe('succeeded');
    // Once it ran, the key replays its answer.
    expect((await f.stripe.paymentIntents.create(params, { idempotencyKey: 'held-key' })).id).toBe(intent.id);
  });

  it('answers 500 after running the request, and the key replays that 500; the charge is made once', async () => {
    f.fake.failAfterRunning('POST', '/v1/payment_intents');
    const token = await f.grantToken();
    const params = untyped<Stripe.PaymentIntentCreateParams>({
      amount: 800,
      currency: 'usd',
      confirm: true,
      shared_payment_granted_token: token.id,
      metadata: { challenge_id: 'ch_500' },
    });
    const first = await f.stripe.paymentIntents.create(params, { idempotencyKey: 'key-500' }).catch((e: unknown) => e);
    expect(first).toBeInstanceOf(Stripe.errors.StripeAPIError);
    expect(first).toMatchObject({ statusCode: 500 });
    const again = await f.stripe.paymentIntents.create(params, { idempotencyKey: 'key-500' }).catch((e: unknown) => e);
    expect(again).toMatchObject({ statusCode: 500 });

    const found = await byChallenge('ch_500');
    expect(found.data).toHaveLength(1);
    expect(found.data[0]).toMatchObject({ status: 'succeeded', amount: 800 });
  });
});
