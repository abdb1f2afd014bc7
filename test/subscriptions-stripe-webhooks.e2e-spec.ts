import { randomBytes, randomUUID } from 'node:crypto';
import { Challenge as MppxChallenge, Credential as MppxCredential } from 'mppx';
import Stripe from 'stripe';
import { PrismaService } from '@mp/db';
import { startFakeStripe, stripeClientOptions, type FakeStripe, type StripeEvent } from '@mp/stripe';
import { Clock } from '../apps/facilitator/src/x402/clock';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';
import { call } from './support/http';
import { createMerchant } from './support/merchants';
import { postStripeWebhook, TEST_STRIPE_WEBHOOK_SECRET } from './support/stripe';

const HOUR = 3600;
const DAY = 86_400;
const SUBSCRIPTIONS = 6;

/**
 * Stripe's webhooks as Stripe sends them: many in flight at once and in no order, some more than once. Renewals of
 * several subscriptions on one test clock reach the facilitator through the fake delivering 16 at a time; then every
 * invoice event is delivered again, concurrently and newest first, each twice (once under its own id, once as a copy
 * under a new one). Each period's paid invoice is recorded once, from the invoice read again from Stripe.
 */
describe('Stripe webhooks delivered concurrently, duplicated and out of order', () => {
  let fake: FakeStripe;
  let api: Stripe;
  let facilitator: RunningFacilitator;
  let merchant: { merchantId: string; apiKey: string };
  let db: PrismaService;

  beforeAll(async () => {
    fake = await startFakeStripe({ port: 0, webhookConcurrency: 16, webhookRetryDelaysMs: [50, 100, 200] });
    api = new Stripe('sk_test_facilitator', stripeClientOptions(fake));
    merchant = createMerchant('Stripe webhooks at once');
    facilitator = await startFacilitator({
      STRIPE_SECRET_KEY: 'sk_test_facilitator',
      STRIPE_API_BASE: fake.url,
      STRIPE_WEBHOOK_SECRET: TEST_STRIPE_WEBHOOK_SECRET,
      QUEUE_PREFIX: `mp:test-stripewh-${randomUUID().slice(0, 8)}`,
      FACILITATOR_OPEN_MODE: 'false',
      SUBSCRIPTION_SEALING_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      REVOCATION_POLL_MS: '600000',
      RECOVERY_INTERVAL_MS: '600000',
      API_KEY_CACHE_MS: '0',
    });
    db = facilitator.app.get(PrismaService);
    fake.addWebhookEndpoint(`${facilitator.url}/stripe/webhooks`, TEST_STRIPE_WEBHOOK_SECRET);
  });

  afterAll(async () => {
    await facilitator?.close();
    await fake?.stop();
  });

  const asMerchant = (path: string, body: unknown) => call(`${facilitator.url}${path}`, { key: merchant.apiKey, body });
  const terms = {
    realm: 'news.example',
    offers: [
      {
        method: 'stripe',
        intent: 'subscription',
        request: {
          amount: '700',
          currency: 'usd',
          periodUnit: 'day',
          periodCount: '1',
          methodDetails: { networkId: 'profile_test_merchant', paymentMethodTypes: ['card'] },
        },
      },
    ],
  };

  const subscribe = async (customer: string): Promise<string> => {
    const issued = await asMerchant('/mpp/challenges', terms);
    expect(issued.status, JSON.stringify(issued.body)).toBe(201);
    const challenge = MppxChallenge.deserialize(issued.body.wwwAuthenticate[0]);
    const credential = MppxCredential.serialize(MppxCredential.from({ challenge, payload: { paymentMethod: 'pm_card_visa', customer } }));
    const settled = await asMerchant('/mpp/settle', { credential, terms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    return settled.body.receipt.subscriptionId as string;
  };

  const post = async (event: StripeEvent, id = event.id) => {
    const body = JSON.stringify({ ...event, id });
    return (await postStripeWebhook(facilitator.url, body)).status;
  };

  it('records each period once, whatever the order and however often its events arrive', async () => {
    const start = Math.floor(Date.now() / 1000);
    const testClock = await api.testHelpers.testClocks.create({ frozen_time: start });
    const offset = start * 1000 - Date.now();
    facilitator.app.get(Clock, { strict: false }).nowMs = () => Date.now() + offset;
    const ids: string[] = [];
    for (let i = 0; i < SUBSCRIPTIONS; i++) {
      const customer = await api.customers.create({ test_clock: testClock.id } as Stripe.CustomerCreateParams);
      ids.push(await subscribe(customer.id));
    }

    // Stripe renews all of them, collects an hour later, and sends their events, 16 in flight at a time.
    const renewedAt = start + DAY + HOUR + 60;
    await api.testHelpers.testClocks.advance(testClock.id, { frozen_time: renewedAt });
    facilitator.app.get(Clock, { strict: false }).nowMs = () => Date.now() + (renewedAt * 1000 - Date.now());
    await fake.drainWebhooks();

    const counted = () =>
      db.stripeSubscriptionInvoice.findMany({ where: { subscriptionId: { in: ids } }, select: { subscriptionId: true, periodIndex: true, outcome: true } });
    const first = await counted();
    expect(first).toHaveLength(2 * SUBSCRIPTIONS);
    expect(first.every((row) => row.outcome === 'counted')).toBe(true);
    for (const id of ids)
      expect(
        first
          .filter((row) => row.subscriptionId === id)
          .map((row) => row.periodIndex)
          .sort(),
      ).toEqual([0, 1]);
    // period 1 came by invoice.paid alone (nothing asked for it here), its event named
    const byWebhook = await db.stripeSubscriptionInvoice.count({ where: { subscriptionId: { in: ids }, periodIndex: 1, eventId: { not: null } } });
    expect(byWebhook).toBe(SUBSCRIPTIONS);

    // Every invoice event again, newest first and all at once: under its own id (a redelivery) and as a copy.
    const invoiceEvents = fake
      .events()
      .filter((e) => e.type.startsWith('invoice.'))
      .reverse();
    const statuses = await Promise.all(invoiceEvents.flatMap((event) => [post(event), post(event, `evt_copy_${randomBytes(8).toString('hex')}`)]));
    expect(statuses.every((status) => status === 200)).toBe(true);

    expect(await counted()).toEqual(expect.arrayContaining(first));
    expect(await counted()).toHaveLength(first.length);
    const payments = await db.payment.findMany({ where: { subscriptionId: { in: ids } }, select: { subscriptionPeriod: true, state: true } });
    expect(payments.map((p) => [p.subscriptionPeriod, p.state])).toEqual(ids.map(() => [0, 'confirmed']));
    // each delivered event id is recorded once
    const recorded = await db.stripeEvent.count({ where: { id: { in: invoiceEvents.map((e) => e.id) } } });
    expect(recorded).toBe(invoiceEvents.length);
  });
});
