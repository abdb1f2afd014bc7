import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Stripe from 'stripe';
import { startFixture } from '../test/fixture';
import { stripeSignatureHeader } from './webhooks';

const SECRET = 'whsec_test_secret';

interface Received {
  body: string;
  signature: string;
}

/** A webhook endpoint that answers 500 to its first `failures` requests and records what it accepted. */
async function startReceiver(failures: number) {
  const accepted: Received[] = [];
  let attempts = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      attempts += 1;
      if (attempts <= failures) return void res.writeHead(500).end('not yet');
      accepted.push({ body: Buffer.concat(chunks).toString('utf8'), signature: String(req.headers['stripe-signature']) });
      res.writeHead(200).end('ok');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/stripe/webhooks`,
    accepted,
    attempts: () => attempts,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('webhooks', () => {
  it('signs the scheme stripe.webhooks.constructEvent verifies', () => {
    const payload = JSON.stringify({ id: 'evt_1', object: 'event' });
    const header = stripeSignatureHeader(SECRET, payload, 1_700_000_000);
    expect(header).toBe(Stripe.webhooks.generateTestHeaderString({ payload, secret: SECRET, timestamp: 1_700_000_000 }));
  });

  it('delivers every event in order, signed, retrying an endpoint that fails twice', async () => {
    const receiver = await startReceiver(2);
    const f = await startFixture({ webhooks: [{ url: receiver.url, secret: SECRET }], webhookRetryDelaysMs: [5, 5, 5, 5] });
    try {
      const token = await f.grantToken();
      const intent = await f.stripe.paymentIntents.create(
        { amount: 5000, currency: 'usd', confirm: true, shared_payment_granted_token: token.id } as Stripe.PaymentIntentCreateParams,
        {
          idempotencyKey: 'mpp_challenge_1',
        },
      );
      await f.stripe.refunds.create({ payment_intent: intent.id, amount: 100 });
      await f.fake.drainWebhooks();

      expect(receiver.attempts()).toBe(receiver.accepted.length + 2);
      const events = receiver.accepted.map(({ body, signature }) => f.stripe.webhooks.constructEvent(body, signature, SECRET));
      expect(events.map((event) => event.type)).toEqual([
        'payment_intent.created',
        'charge.succeeded',
        'payment_intent.succeeded',
        'shared_payment.granted_token.used',
        'refund.created',
        'charge.refunded',
      ]);
      expect(events.map((event) => event.id)).toEqual(f.fake.events().map((event) => event.id));
      expect(events[2]).toMatchObject({
        data: { object: { id: intent.id, status: 'succeeded' } },
        request: { idempotency_key: 'mpp_challenge_1' },
        pending_webhooks: 1,
      });
      // snapshots: the created event still shows the PaymentIntent as it was then
      expect(events[0].data.object).toMatchObject({ id: intent.id, status: 'requires_confirmation' });
      expect(() => f.stripe.webhooks.constructEvent(receiver.accepted[0].body, receiver.accepted[0].signature, 'whsec_other')).toThrow(
        Stripe.errors.StripeSignatureVerificationError,
      );
    } finally {
      await f.fake.stop();
      await receiver.close();
    }
  });

  it('gives up after the last retry and moves on; endpoints added later get later events only', async () => {
    const logged: string[] = [];
    const broken = await startReceiver(Number.POSITIVE_INFINITY);
    const late = await startReceiver(0);
    const f = await startFixture({ webhooks: [{ url: broken.url, secret: SECRET }], webhookRetryDelaysMs: [1, 1], log: (line) => logged.push(line) });
    try {
      await f.stripe.paymentIntents.create({ amount: 100, currency: 'usd' });
      f.fake.addWebhookEndpoint(late.url, SECRET);
      await f.stripe.paymentIntents.create({ amount: 200, currency: 'usd' });
      await f.fake.drainWebhooks();
      expect(broken.attempts()).toBe(6);
      expect(logged.filter((line) => line.includes('given up'))).toHaveLength(2);
      expect(late.accepted).toHaveLength(1);
      expect(JSON.parse(late.accepted[0].body)).toMatchObject({ data: { object: { amount: 200 } } });
    } finally {
      await f.fake.stop();
      await broken.close();
      await late.close();
    }
  });

  it('records events without delivering when deliverWebhooks is false, and drains at once', async () => {
    const receiver = await startReceiver(0);
    const f = await startFixture({ webhooks: [{ url: receiver.url, secret: SECRET }], deliverWebhooks: false });
    try {
      await f.stripe.paymentIntents.create({ amount: 100, currency: 'usd' });
      await f.fake.drainWebhooks();
      expect(f.fake.events()).toHaveLength(1);
      expect(receiver.attempts()).toBe(0);
    } finally {
      await f.fake.stop();
      await receiver.close();
    }
  });

  it('stops with a delivery still retrying', async () => {
    const broken = await startReceiver(Number.POSITIVE_INFINITY);
    const f = await startFixture({ webhooks: [{ url: broken.url, secret: SECRET }], webhookRetryDelaysMs: [60_000] });
    await f.stripe.paymentIntents.create({ amount: 100, currency: 'usd' });
    await vi.waitFor(() => expect(broken.attempts()).toBe(1));
    await f.fake.stop();
    await f.fake.drainWebhooks();
    await broken.close();
  });
});
