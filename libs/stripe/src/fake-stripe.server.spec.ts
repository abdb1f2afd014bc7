import http from 'node:http';
import Stripe from 'stripe';
import { startFixture, type FakeStripeFixture } from '../test/fixture';
import { MAX_BODY_BYTES } from './fake-stripe.server';

describe('fake Stripe server', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(() => f.fake.stop());

  const post = (path: string, body: string, headers: Record<string, string> = {}) =>
    fetch(`${f.fake.url}${path}`, {
      method: 'POST',
      body,
      headers: { Authorization: 'Bearer sk_test_123', 'Content-Type': 'application/x-www-form-urlencoded', ...headers },
    });

  it('answers 401 without an API key or with a non-test key', async () => {
    const missing = await fetch(`${f.fake.url}/v1/payment_intents`);
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({ error: { type: 'invalid_request_error', message: expect.stringMatching(/^You did not provide an API key/) } });
    const live = new Stripe('sk_live_1234567890abcdef', { host: f.fake.host, port: f.fake.port, protocol: 'http', maxNetworkRetries: 0 });
    const error = await live.paymentIntents.list().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Stripe.errors.StripeAuthenticationError);
    expect((error as Error).message).toMatch(/^Invalid API Key provided: sk_live_\*+cdef$/);
    const basic = await fetch(`${f.fake.url}/v1/payment_intents`, { headers: { Authorization: `Basic ${Buffer.from('sk_test_123:').toString('base64')}` } });
    expect(basic.status).toBe(200);
  });

  it('answers an unknown route with 404 Unrecognized request URL', async () => {
    const response = await fetch(`${f.fake.url}/v1/customers?limit=1`, { headers: { Authorization: 'Bearer sk_test_123' } });
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({
      error: { type: 'invalid_request_error', message: expect.stringMatching(/^Unrecognized request URL \(GET: \/v1\/customers\)/) },
    });
    const wrongMethod = await post('/v1/payment_intents/pi_1', '');
    expect(wrongMethod.status).toBe(404);
  });

  it('sets Request-Id and echoes Stripe-Version on every answer', async () => {
    const response = await fetch(`${f.fake.url}/v1/events`, { headers: { Authorization: 'Bearer sk_test_123', 'Stripe-Version': '2026-07-29.preview' } });
    expect(response.headers.get('request-id')).toMatch(/^req_[0-9A-Za-z]{24}$/);
    expect(response.headers.get('stripe-version')).toBe('2026-07-29.preview');
    const denied = await fetch(`${f.fake.url}/v1/events`);
    expect(denied.headers.get('request-id')).toMatch(/^req_/);
    const intent = await f.stripe.paymentIntents.create({ amount: 100, currency: 'usd' }, { apiVersion: '2026-07-29.preview' });
    expect(intent.lastResponse.apiVersion).toBe('2026-07-29.preview');
  });

  it('answers 400 to garbage bodies and keeps serving', async () => {
    for (const body of ['a[b=1', '%%%', 'amount=1&amount[x]=2', '\u0000\u0001[]]]=&&', 'x'.repeat(10_000)]) {
      const response = await post('/v1/payment_intents', body);
      expect(response.status).toBe(400);
      const json = (await response.json()) as { error: { type: string } };
      expect(json.error.type).toBe('invalid_request_error');
      expect(JSON.stringify(json)).not.toMatch(/\bat .*\.ts:\d+/); // no stack traces
    }
    const asJson = await post('/v1/payment_intents', '{"amount":1}', { 'Content-Type': 'application/json' });
    expect(asJson.status).toBe(400);
    expect(((await asJson.json()) as { error: { message: string } }).error.message).toMatch(/unsupported Content-Type application\/json/);
    expect((await f.stripe.paymentIntents.create({ amount: 1, currency: 'usd' })).status).toBe('requires_payment_method');
  });

  it('answers 413 to a body over 1 MiB, declared or streamed', async () => {
    const declared = await post('/v1/payment_intents', `description=${'x'.repeat(MAX_BODY_BYTES)}`);
    expect(declared.status).toBe(413);
    const streamed = await new Promise<number>((resolve, reject) => {
      const request = http.request(
        `${f.fake.url}/v1/payment_intents`,
        { method: 'POST', headers: { Authorization: 'Bearer sk_test_123', 'Transfer-Encoding': 'chunked' } },
        (response) => {
          response.resume();
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', reject);
      for (let i = 0; i < 20; i++) request.write('x'.repeat(100_000));
      request.end();
    });
    expect(streamed).toBe(413);
    expect((await f.stripe.paymentIntents.list({ limit: 1 })).object).toBe('list');
  });
});
