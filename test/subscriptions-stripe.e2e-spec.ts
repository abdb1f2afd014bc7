import { randomBytes, randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Challenge as MppxChallenge, Credential as MppxCredential } from 'mppx';
import Stripe from 'stripe';
import { ManualClock } from '@mp/billing';
import { PrismaService } from '@mp/db';
import { decodeReceipt } from '@mp/mpp';
import { configureHttpApp } from '@mp/platform';
import { stripeClientOptions } from '@mp/stripe';
import { AppModule as LedgerModule } from '../apps/ledger/src/app.module';
import { BILLING_CLOCK } from '../apps/ledger/src/billing/billing.clock';
import { RenewalScheduler } from '../apps/ledger/src/billing/renewal.scheduler';
import { loadLedgerConfig } from '../apps/ledger/src/ledger.config';
import { Clock } from '../apps/facilitator/src/x402/clock';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';
import { call } from './support/http';
import { TEST_DATABASE_URL } from './support/ledger-app';
import { createMerchant } from './support/merchants';
import { postStripeWebhook, startTestStripe, TEST_STRIPE_WEBHOOK_SECRET, type TestStripe } from './support/stripe';

const HOUR = 3600;
const DAY = 86_400;
const AMOUNT = '500';

/**
 * The MPP subscription intent's Stripe profile across the split, nothing of ours stood in for: the buyer subscribes
 * over MPP at the facilitator, which makes the Stripe subscription (the fake Stripe, through the real SDK); Stripe
 * Billing renews it as a test clock advances and reports through signed webhooks; the ledger, in the loop through the
 * outbox and the `subscription-commands` queue, counts a period only from the validated paid invoice the facilitator
 * recorded, runs dunning, and cancels and refunds through the facilitator.
 */
describe('MPP subscriptions on Stripe: facilitator, ledger, queues and Stripe Billing', () => {
  let stripe: TestStripe;
  let api: Stripe;
  let facilitator: RunningFacilitator;
  let ledger: INestApplication;
  let ledgerUrl: string;
  let clock: ManualClock;
  let merchant: { merchantId: string; apiKey: string };
  let db: PrismaService;

  const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  /** Stripe's test clock is the time: the facilitator's Clock and the ledger's ManualClock follow it. */
  const followClock = (frozenSeconds: number) => {
    const offset = frozenSeconds * 1000 - Date.now();
    facilitator.app.get(Clock, { strict: false }).nowMs = () => Date.now() + offset;
    clock.set(new Date(frozenSeconds * 1000));
  };

  /** A buyer on their own test clock: the Customer lives at its time, and so do both services from now on. */
  const newBuyer = async () => {
    const start = Math.floor(Date.now() / 1000);
    const testClock = await api.testHelpers.testClocks.create({ frozen_time: start });
    const customer = await api.customers.create({ test_clock: testClock.id } as Stripe.CustomerCreateParams);
    followClock(start);
    let now = start;
    return {
      customer: customer.id,
      start,
      now: () => now,
      /** advances Stripe's clock (it renews, collects, ends), waits for its webhooks, and moves both services along */
      advanceTo: async (seconds: number) => {
        await api.testHelpers.testClocks.advance(testClock.id, { frozen_time: seconds });
        now = seconds;
        followClock(seconds);
        await stripe.fake.drainWebhooks();
      },
    };
  };

  const fromLedger = (path: string, body?: unknown) => call(`${ledgerUrl}${path}`, { key: merchant.apiKey, ...(body !== undefined && { body }) });
  const subscriptionOf = (id: string) => fromLedger(`/subscriptions/${id}`).then((r) => r.body);
  const asMerchant = (path: string, body: unknown) => call(`${facilitator.url}${path}`, { key: merchant.apiKey, body });
  const runDue = () => ledger.get(RenewalScheduler).runDue(clock.now());

  const termsFor = (opaque?: Record<string, string>) => ({
    realm: 'news.example',
    ...(opaque && { opaque }),
    offers: [
      {
        method: 'stripe',
        intent: 'subscription',
        request: {
          amount: AMOUNT,
          currency: 'usd',
          periodUnit: 'day',
          periodCount: '1',
          methodDetails: { networkId: 'profile_test_merchant', paymentMethodTypes: ['card'] },
        },
      },
    ],
  });

  /** A credential for a fresh challenge of these terms, paying with `paymentMethod` as `customer`. */
  const credentialFor = async (terms: ReturnType<typeof termsFor>, payload: { paymentMethod: string; customer?: string }) => {
    const issued = await asMerchant('/mpp/challenges', terms);
    expect(issued.status, JSON.stringify(issued.body)).toBe(201);
    const challenge = MppxChallenge.deserialize(issued.body.wwwAuthenticate[0]);
    return { challengeId: challenge.id, credential: MppxCredential.serialize(MppxCredential.from({ challenge, payload })) };
  };

  const subscribe = async (customer: string, opaque?: Record<string, string>) => {
    const terms = termsFor(opaque);
    const { credential, challengeId } = await credentialFor(terms, { paymentMethod: 'pm_card_visa', customer });
    const settled = await asMerchant('/mpp/settle', { credential, terms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    return { settled, credential, terms, challengeId, subscriptionId: settled.body.receipt.subscriptionId as string };
  };

  const paymentsOf = (subscriptionId: string) =>
    db.$queryRawUnsafe<{ period: number; attempt: number; state: string; rail: string; reference: string | null }[]>(
      `SELECT subscription_period AS period, subscription_attempt AS attempt, state::text, rail, reference
         FROM facilitator.payments WHERE subscription_id = $1 ORDER BY subscription_period, subscription_attempt`,
      subscriptionId,
    );
  const invoicesOf = (subscriptionId: string) =>
    db.stripeSubscriptionInvoice.findMany({
      where: { subscriptionId },
      orderBy: { periodIndex: 'asc' },
      select: { periodIndex: true, outcome: true, invoiceId: true },
    });
  const stripeIdOf = async (subscriptionId: string) => (await db.stripeSubscription.findUniqueOrThrow({ where: { subscriptionId } })).stripeSubscriptionId;
  const paidPeriods = async (id: string) => {
    const s = await subscriptionOf(id);
    return (s.charges as { state: string; periodIndex: number }[]).filter((c) => c.state === 'paid').map((c) => c.periodIndex);
  };

  /** Delivers a Stripe event again under a new id, signed as Stripe signs: what a redelivery or a replayed copy looks like. */
  const redeliver = async (event: { type: string; data: unknown }) => {
    const body = JSON.stringify({ ...event, id: `evt_copy_${randomBytes(8).toString('hex')}` });
    const response = await postStripeWebhook(facilitator.url, body);
    expect(response.status).toBe(200);
  };

  beforeAll(async () => {
    stripe = await startTestStripe();
    api = new Stripe('sk_test_facilitator', stripeClientOptions(stripe.fake));
    const prefix = `mp:test-stripesub-${randomUUID().slice(0, 8)}`;
    merchant = createMerchant('Stripe subscriptions');
    facilitator = await startFacilitator({
      ...stripe.facilitatorEnv,
      QUEUE_PREFIX: prefix,
      FACILITATOR_OPEN_MODE: 'false',
      SUBSCRIPTION_SEALING_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      OUTBOX_POLL_MS: '20',
      REVOCATION_POLL_MS: '600000',
      RECOVERY_INTERVAL_MS: '600000',
      API_KEY_CACHE_MS: '0',
    });
    db = facilitator.app.get(PrismaService);
    stripe.fake.addWebhookEndpoint(`${facilitator.url}/stripe/webhooks`, TEST_STRIPE_WEBHOOK_SECRET);
    const config = loadLedgerConfig({
      ...process.env,
      DATABASE_URL: TEST_DATABASE_URL,
      LOG_LEVEL: 'error',
      DATABASE_POOL_SIZE: '4',
      LEDGER_INGEST: 'true',
      RECON_SCHEDULE: 'off',
      RENEWAL_SCAN_EVERY_MS: '0',
      FACILITATOR_URL: facilitator.url,
      QUEUE_PREFIX: prefix,
    });
    clock = new ManualClock(new Date());
    const moduleRef = await Test.createTestingModule({ imports: [LedgerModule.forConfig(config)] })
      .overrideProvider(BILLING_CLOCK)
      .useValue(clock)
      .compile();
    ledger = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureHttpApp(ledger, { bodyLimitBytes: config.bodyLimitBytes, trustProxy: config.trustProxy });
    await ledger.listen(0, '127.0.0.1');
    ledgerUrl = `http://127.0.0.1:${(ledger.getHttpServer().address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
    await stripe?.fake.stop();
  });

  it('activates over MPP (Customer, Price, Subscription, paid first invoice), answers a replay with the same receipt, and renews period by period', async () => {
    const buyer = await newBuyer();
    const { settled, credential, terms, subscriptionId } = await subscribe(buyer.customer);

    // The receipt: reference = the paid invoice, the Stripe subscription named, on the header too.
    const receipt = settled.body.receipt;
    const stripeSubscription = await stripeIdOf(subscriptionId);
    expect(receipt).toMatchObject({ status: 'success', method: 'stripe', reference: expect.stringMatching(/^in_/), stripeSubscription });
    const header = decodeReceipt(settled.body.paymentReceipt);
    expect(header.ok && header.value).toMatchObject({ subscriptionId, stripeSubscription, reference: receipt.reference });

    // What Stripe was asked: one subscription, as the profile says.
    const created = stripe.fake.requests().filter((r) => r.method === 'POST' && r.path === '/v1/subscriptions');
    expect(created.at(-1)?.params).toMatchObject({
      customer: buyer.customer,
      collection_method: 'charge_automatically',
      payment_behavior: 'error_if_incomplete',
      proration_behavior: 'none',
      items: [{ quantity: '1' }],
    });
    const sub = await api.subscriptions.retrieve(stripeSubscription);
    expect(sub).toMatchObject({ status: 'active', customer: buyer.customer, latest_invoice: receipt.reference });

    // The same credential again: the original answer, and nothing more at Stripe.
    const replay = await asMerchant('/mpp/settle', { credential, terms });
    expect(replay.status).toBe(200);
    expect(replay.body.receipt).toEqual(receipt);
    expect((await api.subscriptions.list({ customer: buyer.customer })).data).toHaveLength(1);

    // The ledger has it from the outbox: period 0 paid, the Stripe ids kept.
    const active = await until('the ledger to record period 0 paid', async () => {
      const s = await subscriptionOf(subscriptionId);
      return s?.lastPaidIndex === 0 ? s : undefined;
    });
    expect(active).toMatchObject({ state: 'active', method: 'stripe' });

    // Period 1: Stripe renews and collects an hour into it; the ledger's charge then finds the paid invoice.
    await buyer.advanceTo(buyer.start + DAY + HOUR + 60);
    await runDue();
    await until('period 1 paid', async () => ((await paidPeriods(subscriptionId)).includes(1) ? true : undefined));

    // Period 2, the other order: the ledger asks while the invoice is still a draft; invoice.paid confirms it later.
    await buyer.advanceTo(buyer.start + 2 * DAY + 60);
    await runDue();
    await until('the period 2 charge in flight', async () => ((await paymentsOf(subscriptionId)).some((p) => p.period === 2) ? true : undefined));
    expect((await paymentsOf(subscriptionId)).find((p) => p.period === 2)).toMatchObject({ state: 'verified', rail: 'stripe' });
    await buyer.advanceTo(buyer.start + 2 * DAY + HOUR + 60);
    await until('period 2 paid', async () => ((await paidPeriods(subscriptionId)).includes(2) ? true : undefined));

    // Duplicate and reordered deliveries change nothing: every event of this subscription's invoices again, newest first.
    const invoiceEvents = stripe.fake
      .events()
      .filter((e) => e.type.startsWith('invoice.') && (e.data.object as any).parent?.subscription_details?.subscription === stripeSubscription);
    for (const event of invoiceEvents.reverse()) await redeliver(event as never);
    const payments = await paymentsOf(subscriptionId);
    expect(payments.map((p) => [p.period, p.attempt, p.state])).toEqual([
      [0, 0, 'confirmed'],
      [1, 0, 'confirmed'],
      [2, 0, 'confirmed'],
    ]);
    expect(payments.every((p) => p.reference?.startsWith('pi_'))).toBe(true);
    expect((await invoicesOf(subscriptionId)).map((i) => [i.periodIndex, i.outcome])).toEqual([
      [0, 'counted'],
      [1, 'counted'],
      [2, 'counted'],
    ]);
    expect(await paidPeriods(subscriptionId)).toEqual([0, 1, 2]);

    // Cancel at period end: Stripe is told to stop at the end of period 2; its deletion then is ours, no revocation.
    const canceled = await fromLedger(`/subscriptions/${subscriptionId}/cancel`, { at: 'period_end' });
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    await until('Stripe told to cancel at period end', async () =>
      (await api.subscriptions.retrieve(stripeSubscription)).cancel_at_period_end ? true : undefined,
    );
    await until('the facilitator to confirm the cancel', async () => ((await subscriptionOf(subscriptionId)).cancel?.confirmedAt ? true : undefined));
    await buyer.advanceTo(buyer.start + 3 * DAY + HOUR + 60);
    expect(await api.subscriptions.retrieve(stripeSubscription)).toMatchObject({ status: 'canceled' });
    await runDue();
    const ended = await subscriptionOf(subscriptionId);
    expect(ended).toMatchObject({ state: 'canceled', lastPaidIndex: 2 });
    expect((await db.subscription.findUniqueOrThrow({ where: { id: subscriptionId } })).state).not.toBe('revoked');
    expect((await paymentsOf(subscriptionId)).map((p) => p.period)).toEqual([0, 1, 2]);
  });

  it('a first invoice Stripe cannot collect answers 402 with a fresh challenge, and nothing is kept', async () => {
    const buyer = await newBuyer();
    const terms = termsFor();
    const { credential, challengeId } = await credentialFor(terms, { paymentMethod: 'pm_card_chargeDeclined', customer: buyer.customer });
    const refused = await asMerchant('/mpp/settle', { credential, terms });
    expect(refused.status, JSON.stringify(refused.body)).toBe(402);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Payment /);
    expect(refused.body.detail).toMatch(/first period/);
    expect(await db.subscription.count({ where: { challengeId } })).toBe(0);
    expect(await db.payment.count({ where: { challengeId } })).toBe(0);
    expect((await api.subscriptions.list({ customer: buyer.customer, status: 'all' })).data).toHaveLength(0);
  });

  it('a failed renewal goes through the ledger’s dunning: the retry pays the open invoice; a stale invoice paid late never counts', async () => {
    const buyer = await newBuyer();
    const { subscriptionId } = await subscribe(buyer.customer);
    const stripeSubscription = await stripeIdOf(subscriptionId);
    await until('period 0 at the ledger', async () => ((await subscriptionOf(subscriptionId))?.lastPaidIndex === 0 ? true : undefined));

    // Period 1's collection is declined once: invoice.payment_failed, past_due; the ledger's attempt 0 fails.
    stripe.fake.declineCharges(buyer.customer, { times: 1 });
    await buyer.advanceTo(buyer.start + DAY + HOUR + 60);
    expect(await api.subscriptions.retrieve(stripeSubscription)).toMatchObject({ status: 'past_due' });
    await runDue();
    await until('attempt 0 failed, as the ledger knows', async () => ((await subscriptionOf(subscriptionId)).dunning?.periodIndex === 1 ? true : undefined));
    expect((await paymentsOf(subscriptionId)).filter((p) => p.period === 1).map((p) => p.state)).toEqual(['failed']);

    // Dunning retries within the period (half an hour on a daily plan): attempt 1 pays the open invoice.
    await buyer.advanceTo(buyer.start + DAY + 3 * HOUR);
    await runDue();
    await until('period 1 paid by the retry', async () => ((await paidPeriods(subscriptionId)).includes(1) ? true : undefined));
    expect((await paymentsOf(subscriptionId)).filter((p) => p.period === 1).map((p) => [p.attempt, p.state])).toEqual([
      [0, 'failed'],
      [1, 'confirmed'],
    ]);
    expect(await api.subscriptions.retrieve(stripeSubscription)).toMatchObject({ status: 'active' });

    // Period 2 fails and the ledger is not asked in time; once period 3 has started, that invoice is paid by hand.
    stripe.fake.declineCharges(buyer.customer, { times: 1 });
    await buyer.advanceTo(buyer.start + 2 * DAY + HOUR + 60);
    const stale = (await api.invoices.list({ subscription: stripeSubscription, status: 'open' })).data[0]!;
    await buyer.advanceTo(buyer.start + 3 * DAY + HOUR + 60);
    await api.invoices.pay(stale.id);
    await stripe.fake.drainWebhooks();
    await until('the late invoice recorded', async () => ((await invoicesOf(subscriptionId)).some((i) => i.invoiceId === stale.id) ? true : undefined));
    expect((await invoicesOf(subscriptionId)).find((i) => i.invoiceId === stale.id)).toMatchObject({ periodIndex: 2, outcome: 'late' });
    expect((await paymentsOf(subscriptionId)).filter((p) => p.period === 2 && p.state === 'confirmed')).toEqual([]);
    await runDue();
    await until('period 3 paid', async () => ((await paidPeriods(subscriptionId)).includes(3) ? true : undefined));
    expect(await paidPeriods(subscriptionId)).toEqual([0, 1, 3]);
  });

  it('once a new period is charged, the open invoice of an earlier period is voided: it can never be collected late', async () => {
    const buyer = await newBuyer();
    const { subscriptionId } = await subscribe(buyer.customer);
    const stripeSubscription = await stripeIdOf(subscriptionId);
    await until('period 0 at the ledger', async () => ((await subscriptionOf(subscriptionId))?.lastPaidIndex === 0 ? true : undefined));

    // Period 1's collection fails and the ledger is not asked during it; period 2's succeeds.
    stripe.fake.declineCharges(buyer.customer, { times: 1 });
    await buyer.advanceTo(buyer.start + DAY + HOUR + 60);
    const [stale] = (await api.invoices.list({ subscription: stripeSubscription, status: 'open' })).data;
    expect(stale).toBeDefined();
    await buyer.advanceTo(buyer.start + 2 * DAY + HOUR + 60);

    // The ledger charges the current period only; the facilitator voids the older open invoice on the way.
    await runDue();
    await until('period 2 paid', async () => ((await paidPeriods(subscriptionId)).includes(2) ? true : undefined));
    expect(await api.invoices.retrieve(stale!.id)).toMatchObject({ status: 'void' });
    await expect(api.invoices.pay(stale!.id)).rejects.toMatchObject({ code: 'invoice_unexpected_status' });
    expect(await paidPeriods(subscriptionId)).toEqual([0, 2]);
  });

  it('a renewal that keeps failing: past_due at Stripe, the ledger’s retries each fail, and when dunning runs out it is canceled and Stripe stops', async () => {
    const buyer = await newBuyer();
    const { subscriptionId } = await subscribe(buyer.customer);
    const stripeSubscription = await stripeIdOf(subscriptionId);
    await until('period 0 at the ledger', async () => ((await subscriptionOf(subscriptionId))?.lastPaidIndex === 0 ? true : undefined));
    const settled = () => until('no charge in flight', async () => ((await subscriptionOf(subscriptionId)).inFlight === null ? true : undefined));

    // The ledger asks while period 1's invoice is a draft; Stripe's declined collection (invoice.payment_failed) fails it.
    stripe.fake.declineCharges(buyer.customer);
    await buyer.advanceTo(buyer.start + DAY + 60);
    await runDue();
    await until('attempt 0 in flight', async () =>
      (await paymentsOf(subscriptionId)).some((p) => p.period === 1 && p.state === 'verified') ? true : undefined,
    );
    await buyer.advanceTo(buyer.start + DAY + HOUR + 60);
    expect(await api.subscriptions.retrieve(stripeSubscription)).toMatchObject({ status: 'past_due' });
    await settled();
    expect((await paymentsOf(subscriptionId)).filter((p) => p.period === 1).map((p) => [p.attempt, p.state])).toEqual([[0, 'failed']]);
    // the first attempt, then every retry the ledger's dunning schedules inside the period, each declined by Stripe
    for (const at of [DAY + HOUR + 120, DAY + 3 * HOUR, DAY + 5 * HOUR, DAY + 8 * HOUR, DAY + 14 * HOUR, 2 * DAY - 1800]) {
      if (buyer.start + at > buyer.now()) await buyer.advanceTo(buyer.start + at);
      await runDue();
      await settled();
    }
    const attempts = (await paymentsOf(subscriptionId)).filter((p) => p.period === 1);
    expect(attempts.length).toBeGreaterThan(1);
    expect(attempts.every((p) => p.state === 'failed')).toBe(true);
    expect(await subscriptionOf(subscriptionId)).toMatchObject({ state: 'past_due', lastPaidIndex: 0 });

    // The period ends unpaid: dunning is exhausted, the ledger cancels (the plan's default), and Stripe is told to stop.
    await buyer.advanceTo(buyer.start + 2 * DAY + 60);
    await runDue();
    await until('canceled at the ledger', async () => ((await subscriptionOf(subscriptionId)).state === 'canceled' ? true : undefined));
    await until('the Stripe subscription ended', async () => ((await api.subscriptions.retrieve(stripeSubscription)).status === 'canceled' ? true : undefined));
    // its open invoices can no longer be collected
    const open = await api.invoices.list({ subscription: stripeSubscription, status: 'open' });
    expect(open.data.filter((i) => i.next_payment_attempt !== null)).toEqual([]);
    expect(await paidPeriods(subscriptionId)).toEqual([0]);
  });

  it('a Stripe subscription deleted outside our cancel command revokes the subscription: nothing is charged after its paid period', async () => {
    const buyer = await newBuyer();
    const { subscriptionId } = await subscribe(buyer.customer);
    await until('period 0 at the ledger', async () => ((await subscriptionOf(subscriptionId))?.lastPaidIndex === 0 ? true : undefined));
    await api.subscriptions.cancel(await stripeIdOf(subscriptionId));
    await stripe.fake.drainWebhooks();
    await until('revoked at the facilitator', async () =>
      (await db.subscription.findUniqueOrThrow({ where: { id: subscriptionId } })).state === 'revoked' ? true : undefined,
    );
    // The ledger ends it where the paid period ends (its rule for a grant withdrawn on the rail), and charges nothing more.
    const revoked = await until('the revocation at the ledger', async () => {
      const s = await subscriptionOf(subscriptionId);
      return s.cancel ? s : undefined;
    });
    expect(revoked.cancel).toMatchObject({ by: 'rail', reason: 'stripe_subscription_deleted' });
    await buyer.advanceTo(buyer.start + DAY + HOUR);
    await runDue();
    expect(await subscriptionOf(subscriptionId)).toMatchObject({ state: 'canceled', lastPaidIndex: 0 });
    expect((await paymentsOf(subscriptionId)).map((p) => p.period)).toEqual([0]);
  });

  it("an immediate cancel ends the Stripe subscription now and refunds the unused part of the period's invoice", async () => {
    const planId = randomUUID();
    const plan = await fromLedger('/plans', {
      id: planId,
      name: 'Daily news on Stripe, refundable',
      product: 'news-stripe',
      amount: AMOUNT,
      asset: 'stripe/usd',
      periodUnit: 'day',
      periodCount: 1,
      cancelRefund: 'unused_part',
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);
    const buyer = await newBuyer();
    const { subscriptionId } = await subscribe(buyer.customer, { plan: planId });
    const stripeSubscription = await stripeIdOf(subscriptionId);
    await until('period 0 at the ledger', async () => ((await subscriptionOf(subscriptionId))?.lastPaidIndex === 0 ? true : undefined));

    await buyer.advanceTo(buyer.start + DAY / 4);
    const canceled = await fromLedger(`/subscriptions/${subscriptionId}/cancel`, { at: 'immediately' });
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    const unused = canceled.body.cancel.refund.amount as string;
    expect(BigInt(unused) > 0n && BigInt(unused) < BigInt(AMOUNT)).toBe(true);

    await until('Stripe subscription deleted', async () => ((await api.subscriptions.retrieve(stripeSubscription)).status === 'canceled' ? true : undefined));
    const refunded = await until('the ledger to record the refund', async () => {
      const s = await subscriptionOf(subscriptionId);
      return s?.cancel?.refund?.state === 'refunded' ? s : undefined;
    });
    expect(refunded.state).toBe('canceled');
    const [period0] = await paymentsOf(subscriptionId);
    const refunds = await api.refunds.list({ payment_intent: period0!.reference! });
    expect(refunds.data.map((r) => [r.amount, r.status])).toEqual([[Number(unused), 'succeeded']]);
    // our own cancel: no revocation
    expect((await db.subscription.findUniqueOrThrow({ where: { id: subscriptionId } })).state).toBe('canceled');
  });
});
