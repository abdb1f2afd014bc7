import Stripe from 'stripe';
import { startFixture, untyped, type FakeStripeFixture } from '../test/fixture';

describe('idempotency', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(() => f.fake.stop());

  const settle = (token: string, key: string, amount = 5000) =>
    f.stripe.paymentIntents.create(untyped({ amount, currency: 'usd', confirm: true, shared_payment_granted_token: token, metadata: { a: '1', b: '2' } }), {
      idempotencyKey: key,
    });

  it('replays the first answer for the same key and parameters, marked Idempotent-Replayed', async () => {
    const token = await f.grantToken();
    const first = await settle(token.id, 'key-replay');
    expect(first.lastResponse.headers['idempotent-replayed']).toBeUndefined();
    const second = await settle(token.id, 'key-replay');
    expect(second.id).toBe(first.id);
    expect(second.status).toBe('succeeded');
    expect(second.lastResponse.headers['idempotent-replayed']).toBe('true');
    expect(second.lastResponse.headers['original-request']).toBe(first.lastResponse.requestId);
    expect(second.lastResponse.idempotencyKey).toBe('key-replay');
    // parameter order does not matter
    const reordered = await f.stripe.paymentIntents.create(
      untyped({ metadata: { b: '2', a: '1' }, shared_payment_granted_token: token.id, confirm: true, currency: 'usd', amount: 5000 }),
      { idempotencyKey: 'key-replay' },
    );
    expect(reordered.id).toBe(first.id);
  });

  it('refuses the same key with other parameters or another path', async () => {
    const token = await f.grantToken();
    await settle(token.id, 'key-mismatch');
    const other = await settle(token.id, 'key-mismatch', 4000).catch((e: unknown) => e);
    expect(other).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
    expect((other as Error).message).toMatch(/^Keys for idempotent requests can only be used with the same parameters/);
    const otherPath = await f.stripe.refunds.create({ payment_intent: 'pi_x' }, { idempotencyKey: 'key-mismatch' }).catch((e: unknown) => e);
    expect(otherPath).toBeInstanceOf(Stripe.errors.StripeIdempotencyError);
  });

  it('keeps keys per API key', async () => {
    const token = await f.grantToken();
    const first = await settle(token.id, 'key-per-account');
    const otherAccount = new Stripe('sk_test_other', { host: f.fake.host, port: f.fake.port, protocol: 'http', maxNetworkRetries: 0 });
    const created = await otherAccount.paymentIntents.create({ amount: 7, currency: 'usd' }, { idempotencyKey: 'key-per-account' });
    expect(created.id).not.toBe(first.id);
  });

  it('replays a 4xx answer too, including a decline', async () => {
    const declined = await f.grantToken({ paymentMethod: 'pm_card_chargeDeclined' });
    const first = (await settle(declined.id, 'key-decline').catch((e: unknown) => e)) as Stripe.errors.StripeCardError;
    const second = (await settle(declined.id, 'key-decline').catch((e: unknown) => e)) as Stripe.errors.StripeCardError;
    expect(second).toBeInstanceOf(Stripe.errors.StripeCardError);
    expect(second.headers?.['idempotent-replayed']).toBe('true');
    expect(second.payment_intent?.id).toBe(first.payment_intent?.id);
    expect(second.payment_intent?.id).toMatch(/^pi_/);
    expect(
      (await f.stripe.paymentIntents.list({ limit: 100 })).data.filter(
        (pi) => (pi as unknown as { shared_payment_granted_token: string }).shared_payment_granted_token === declined.id,
      ),
    ).toHaveLength(1);
  });

  it('runs concurrent requests with one key once', async () => {
    const token = await f.grantToken();
    const results = await Promise.all(Array.from({ length: 8 }, () => settle(token.id, 'key-concurrent')));
    expect(new Set(results.map((intent) => intent.id)).size).toBe(1);
    expect(results.filter((intent) => intent.lastResponse.headers['idempotent-replayed'] === 'true')).toHaveLength(7);
    const charges = await f.stripe.charges.list({ payment_intent: results[0].id });
    expect(charges.data).toHaveLength(1);
  });
});
