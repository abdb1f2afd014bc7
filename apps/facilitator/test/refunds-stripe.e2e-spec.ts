import { randomUUID } from 'node:crypto';
import { Mppx } from 'mppx/client';
import { PrismaService } from '@mp/db';
import { RefundSweep } from '../src/refunds/refund-sweep';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { call } from '../../../test/support/http';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { paymentRequiredResponse } from '../../../test/support/mpp';
import { postStripeWebhook, startTestStripe, TEST_STRIPE_WEBHOOK_SECRET, type TestStripe } from '../../../test/support/stripe';
import { until } from '../../../test/support/webhook-receiver';

/**
 * Refunds of Stripe payments through the official SDK against the fake Stripe: full and partial, a refund Stripe
 * answers pending and finishes by webhook (a duplicate webhook changes nothing), and answers that are lost or late,
 * which the refund sweep resolves by asking Stripe, never by making a second refund.
 */
describe('Stripe refunds', () => {
  let stripe: TestStripe;
  let f: RunningFacilitator;
  let db: PrismaService;
  let m: TestMerchant;

  beforeAll(async () => {
    stripe = await startTestStripe();
    m = createMerchant('stripe refunds');
    // No sweep on a timer (RECOVERY_INTERVAL_MS): the tests run it when they mean to.
    f = await startFacilitator({ ...stripe.facilitatorEnv, STRIPE_TIMEOUT_MS: '800', RECOVERY_INTERVAL_MS: '600000' });
    db = f.app.get(PrismaService);
    stripe.fake.addWebhookEndpoint(`${f.url}/stripe/webhooks`, TEST_STRIPE_WEBHOOK_SECRET);
  });
  afterAll(async () => {
    await f?.close();
    await stripe?.fake.stop();
  });

  const { pay, refundBody, refund, stripeRefundsOf, refundEvents } = helpers(() => ({ f, stripe, m, db }));

  it('refunds a payment in full through the SDK: executed, named by its re_ id, with Stripe reason and metadata', async () => {
    const payment = await pay(500);
    const answer = await refund(refundBody(payment.paymentId, 500));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ status: 'executed', amount: '500', rail: 'stripe', network: 'stripe', asset: 'usd', refundTo: null });
    expect(answer.body.reference).toMatch(/^re_/);
    expect(answer.body.refundTxHash).toBeUndefined();
    const [stripeRefund, ...others] = await stripeRefundsOf(payment.paymentIntent);
    expect(others).toEqual([]);
    expect(stripeRefund).toMatchObject({
      id: answer.body.reference,
      amount: 500,
      status: 'succeeded',
      reason: 'requested_by_customer',
      metadata: { refund_id: answer.body.id, payment_id: payment.paymentId, merchant_id: m.merchantId },
    });
    expect(await refundEvents(payment.paymentId)).toEqual(['payment.refund_pending', 'payment.refunded']);
  });

  it('partial refunds add up to the charge, by payment id or PaymentIntent; more is denied and Stripe is not asked', async () => {
    const payment = await pay(1000);
    expect((await refund(refundBody(payment.paymentId, 300))).body).toMatchObject({ status: 'executed', amount: '300' });
    expect((await refund(refundBody(payment.paymentIntent, 701))).body).toMatchObject({ status: 'denied', denialReason: 'amount_exceeds_settled' });
    expect((await refund(refundBody(payment.paymentIntent, 700))).body).toMatchObject({ status: 'executed', amount: '700' });
    expect((await refund(refundBody(payment.paymentId, 1))).body).toMatchObject({ status: 'denied', denialReason: 'already_refunded' });
    expect((await stripeRefundsOf(payment.paymentIntent)).map((r) => r.amount).sort()).toEqual([300, 700]);
    const charge = await stripe.buyer.charges.list({ payment_intent: payment.paymentIntent });
    expect(charge.data[0]).toMatchObject({ amount_refunded: 1000, refunded: true });
  });

  it('refundTo and txHash mean nothing for a Stripe payment: 400, nothing written', async () => {
    const payment = await pay(200);
    const rows = await db.refund.count();
    const withAddress = await refund(refundBody(payment.paymentId, 100, { refundTo: '0x976EA74026E726554dB657fA54763abd0C3a0aa9' }));
    expect(withAddress.status).toBe(400);
    expect(withAddress.body.invalidParams).toEqual([expect.objectContaining({ name: 'refundTo' })]);
    const withHash = await refund(refundBody(payment.paymentId, 100, { paymentReference: { network: 'stripe', txHash: `0x${'1'.repeat(64)}` } }));
    expect(withHash.status).toBe(400);
    expect(await db.refund.count()).toBe(rows);
    expect(await stripeRefundsOf(payment.paymentIntent)).toEqual([]);
  });

  it('a refund Stripe answers pending is executed by its webhook; the same webhook again changes nothing', async () => {
    const payment = await pay(800);
    stripe.fake.pendRefunds(payment.paymentIntent);
    const answer = await refund(refundBody(payment.paymentId, 800));
    expect(answer.body).toMatchObject({ status: 'pending', amount: '800' });
    expect(answer.body.reference).toMatch(/^re_/);
    await stripe.fake.drainWebhooks();
    expect((await call(`${f.url}/refunds/${answer.body.id}`, { key: m.apiKey })).body.status).toBe('pending');

    stripe.fake.finishRefund(answer.body.reference, 'succeeded');
    await stripe.fake.drainWebhooks();
    const done = await call(`${f.url}/refunds/${answer.body.id}`, { key: m.apiKey });
    expect(done.body).toMatchObject({ status: 'executed', reference: answer.body.reference });
    expect(await refundEvents(payment.paymentId)).toEqual(['payment.refund_pending', 'payment.refunded']);

    // Stripe delivers the refund.updated again: recognised by its event id, nothing new happens
    const updated = stripe.fake.events().find((e) => e.type === 'refund.updated' && (e.data.object as { id: string }).id === answer.body.reference)!;
    const payload = JSON.stringify(updated);
    const redelivered = await postStripeWebhook(f.url, payload);
    expect(await redelivered.json()).toEqual({ received: true, duplicate: true });
    expect(await refundEvents(payment.paymentId)).toEqual(['payment.refund_pending', 'payment.refunded']);
  });

  it('a pending refund Stripe fails ends failed with payment.refund_failed, and its amount is refundable again', async () => {
    const payment = await pay(600);
    stripe.fake.pendRefunds(payment.paymentIntent);
    const answer = await refund(refundBody(payment.paymentId, 600));
    expect(answer.body.status).toBe('pending');
    stripe.fake.finishRefund(answer.body.reference, 'failed');
    await stripe.fake.drainWebhooks();
    expect((await call(`${f.url}/refunds/${answer.body.id}`, { key: m.apiKey })).body).toMatchObject({
      status: 'failed',
      failureReason: 'expired_or_canceled_card',
      reference: answer.body.reference,
    });
    expect(await refundEvents(payment.paymentId)).toEqual(['payment.refund_pending', 'payment.refund_failed']);
    expect((await db.paymentEvent.findFirstOrThrow({ where: { paymentId: payment.paymentId, type: 'payment.refund_failed' } })).data).toMatchObject({
      refundId: answer.body.id,
      reference: answer.body.reference,
      failureReason: 'expired_or_canceled_card',
      refundTo: null,
    });
    // accepted again (Stripe keeps this PaymentIntent's refunds pending), not denied: the failed one moved nothing
    expect((await refund(refundBody(payment.paymentId, 600))).body).toMatchObject({ status: 'pending', amount: '600' });
  });
});

describe('Stripe refunds whose answers are lost (no webhooks: only the sweep can tell)', () => {
  let stripe: TestStripe;
  let f: RunningFacilitator;
  let db: PrismaService;
  let m: TestMerchant;

  beforeAll(async () => {
    stripe = await startTestStripe();
    m = createMerchant('stripe refunds, lost answers');
    f = await startFacilitator({ ...stripe.facilitatorEnv, STRIPE_TIMEOUT_MS: '800', RECOVERY_INTERVAL_MS: '600000' });
    db = f.app.get(PrismaService);
  });
  afterAll(async () => {
    await f?.close();
    await stripe?.fake.stop();
  });

  const { pay, refundBody, refund, stripeRefundsOf } = helpers(() => ({ f, stripe, m, db }));

  it('a refund Stripe made but answered with a 500 stays pending, and the sweep finds it: one Stripe refund', async () => {
    const payment = await pay(900);
    stripe.fake.failAfterRunning('POST', '/v1/refunds');
    const answer = await refund(refundBody(payment.paymentId, 900));
    expect(answer.body).toMatchObject({ status: 'pending', reference: null });
    expect(await stripeRefundsOf(payment.paymentIntent)).toHaveLength(1);
    await f.app.get(RefundSweep).runOnce(0);
    const done = await call(`${f.url}/refunds/${answer.body.id}`, { key: m.apiKey });
    expect(done.body).toMatchObject({ status: 'executed' });
    const refunds = await stripeRefundsOf(payment.paymentIntent);
    expect(refunds.map((r) => r.id)).toEqual([done.body.reference]);
  });

  it('a refund call still running at Stripe when we gave up is not made twice: the sweep waits for it, then finds it', async () => {
    const payment = await pay(400);
    const held = stripe.fake.hold('POST', '/v1/refunds');
    const answer = await refund(refundBody(payment.paymentId, 400));
    expect(answer.body).toMatchObject({ status: 'pending', reference: null });
    await held.reached;
    // Stripe has nothing yet and our first call is still running there: asking again meets idempotency_key_in_use
    await f.app.get(RefundSweep).runOnce(0);
    expect((await call(`${f.url}/refunds/${answer.body.id}`, { key: m.apiKey })).body.status).toBe('pending');
    held.release();
    const done = await until('the refund is executed', async () => {
      await f.app.get(RefundSweep).runOnce(0);
      const current = await call(`${f.url}/refunds/${answer.body.id}`, { key: m.apiKey });
      return current.body.status === 'executed' ? current.body : undefined;
    });
    expect((await stripeRefundsOf(payment.paymentIntent)).map((r) => r.id)).toEqual([done.reference]);
  });
});

interface World {
  f: RunningFacilitator;
  stripe: TestStripe;
  m: TestMerchant;
  db: PrismaService;
}

function helpers(world: () => World) {
  /** A confirmed MPP stripe charge of `amount` cents, settled with the merchant's key. */
  async function pay(amount: number): Promise<{ paymentId: string; paymentIntent: string }> {
    const terms = {
      realm: 'shop.example',
      offers: [
        {
          method: 'stripe',
          intent: 'charge',
          request: { amount: String(amount), currency: 'usd', methodDetails: { networkId: 'profile_test_merchant', paymentMethodTypes: ['card'] } },
        },
      ],
    };
    const issued = await call(`${world().f.url}/mpp/challenges`, { key: world().m.apiKey, body: terms });
    expect(issued.status).toBe(201);
    const credential = await Mppx.create({ methods: [world().stripe.mppxMethod()], polyfill: false }).createCredential(
      paymentRequiredResponse(issued.body.wwwAuthenticate),
    );
    const settled = await call(`${world().f.url}/mpp/settle`, { key: world().m.apiKey, body: { credential, terms } });
    expect(settled.body.receipt).toMatchObject({ status: 'success', reference: expect.stringMatching(/^pi_/) });
    const payment = await world().db.payment.findFirstOrThrow({ where: { challengeId: settled.body.receipt.challengeId }, select: { id: true } });
    return { paymentId: payment.id, paymentIntent: settled.body.receipt.reference };
  }

  const refundBody = (paymentId: string, amount: number, extra: Record<string, unknown> = {}) => ({
    x402Version: 2,
    paymentReference: { network: 'stripe', paymentId },
    amount: String(amount),
    reason: 'customer_request',
    idempotencyKey: randomUUID(),
    ...extra,
  });
  const refund = (body: object) => call(`${world().f.url}/refunds`, { key: world().m.apiKey, body });
  const stripeRefundsOf = async (paymentIntent: string) => (await world().stripe.buyer.refunds.list({ payment_intent: paymentIntent, limit: 100 })).data;
  const refundEvents = async (paymentId: string) =>
    (await world().db.paymentEvent.findMany({ where: { paymentId, type: { startsWith: 'payment.refund' } }, orderBy: { id: 'asc' } })).map((e) => e.type);

  return { pay, refundBody, refund, stripeRefundsOf, refundEvents };
}
