import { Mppx } from 'mppx/client';
import { PrismaService } from '@mp/db';
import { parseCredential, serializeCredential } from '@mp/mpp';
import { paymentRequiredResponse } from '../../../test/support/mpp';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startTestStripe, TEST_STRIPE_WEBHOOK_SECRET, type TestStripe } from '../../../test/support/stripe';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { createMerchant } from '../../../test/support/merchants';
import { startWebhookReceiver, until } from '../../../test/support/webhook-receiver';
import { Clock } from '../src/x402/clock';

/**
 * Stripe answers that do not tell whether money moved (409 idempotency_key_in_use, idempotency_error, a 5xx after the
 * charge, no answer), and answers Stripe corrects later: the payment is judged by its PaymentIntent, found by
 * `metadata.challenge_id`, through the real SDK against the fake Stripe, with real PostgreSQL.
 */
describe('MPP stripe: unknown outcomes resolved from the PaymentIntent', () => {
  let stripe: TestStripe;
  let proxy: TcpProxy;
  /** a worker too: its sweep asks Stripe every 300 ms; no Stripe webhook is configured */
  let sweeping: RunningFacilitator;
  /**
   * API role only (no sweep of its own), straight to the fake. Where a test needs nothing but its own doing to change
   * a payment, it cuts the sweeping facilitator off Stripe (`withoutSweep`): both share the database.
   */
  let apiOnly: RunningFacilitator;
  let db: PrismaService;

  const terms = (amount: string, extra: Record<string, unknown> = {}) => ({
    realm: 'shop.example',
    offers: [
      {
        method: 'stripe',
        intent: 'charge',
        request: { amount, currency: 'usd', methodDetails: { networkId: 'profile_test_merchant', paymentMethodTypes: ['card'] } },
      },
    ],
    ...extra,
  });
  /** POST as a keyed merchant (`apiKey`), or in open mode. */
  const post = async (url: string, body: object, apiKey?: string) => {
    if (!apiKey) return postJson(url, body);
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${apiKey}` },
      body: JSON.stringify(body),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const credentialFor = async (facilitator: RunningFacilitator, routeTerms: object, paymentMethod = 'pm_card_visa', apiKey?: string) => {
    const issued = await post(`${facilitator.url}/mpp/challenges`, routeTerms, apiKey);
    expect(issued.status).toBe(201);
    const credential = await Mppx.create({ methods: [stripe.mppxMethod(paymentMethod)], polyfill: false }).createCredential(
      paymentRequiredResponse(issued.body.wwwAuthenticate),
    );
    return { credential, challengeId: issued.body.challenges[0].id as string };
  };
  const settle = (facilitator: RunningFacilitator, credential: string, routeTerms: object, apiKey?: string) =>
    post(`${facilitator.url}/mpp/settle`, { credential, terms: routeTerms }, apiKey);
  const intentsOf = async (challengeId: string) => (await stripe.buyer.paymentIntents.search({ query: `metadata['challenge_id']:'${challengeId}'` })).data;
  const paymentOf = async (challengeId: string) =>
    (
      await db.$queryRawUnsafe<{ state: string; reference: string | null; error_reason: string | null }[]>(
        `SELECT state::text, reference, error_reason FROM facilitator.payments WHERE challenge_id = $1`,
        challengeId,
      )
    )[0];
  const claimOf = async (challengeId: string) =>
    (await db.$queryRawUnsafe<{ state: string }[]>(`SELECT state FROM facilitator.mpp_claims WHERE challenge_id = $1`, challengeId))[0]?.state;
  const eventsOf = async (challengeId: string) =>
    db.$queryRawUnsafe<{ type: string; data: Record<string, unknown> }[]>(
      `SELECT e.type, e.data FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE p.challenge_id = $1 ORDER BY e.id`,
      challengeId,
    );
  const stateIs = (challengeId: string, state: string) =>
    until(`payment of ${challengeId} ${state}`, async () => ((await paymentOf(challengeId))?.state === state ? true : undefined));
  const createCalls = (challengeId: string) =>
    stripe.fake.requests().filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents' && r.idempotencyKey?.startsWith(`mpp_${challengeId}_`));
  /** The sweeping facilitator cannot reach Stripe while `run` runs, so its sweep changes nothing. */
  const withoutSweep = async <T>(run: () => Promise<T>): Promise<T> => {
    proxy.set('refuse');
    try {
      return await run();
    } finally {
      proxy.set('pass');
    }
  };
  /** Moves a facilitator's clock `ms` ahead while `run` runs. */
  const later = async <T>(facilitator: RunningFacilitator, ms: number, run: () => Promise<T>): Promise<T> => {
    const clock = facilitator.app.get(Clock);
    const real = clock.nowMs.bind(clock);
    clock.nowMs = () => real() + ms;
    try {
      return await run();
    } finally {
      clock.nowMs = real;
    }
  };

  beforeAll(async () => {
    stripe = await startTestStripe();
    proxy = await startTcpProxy(Number(new URL(stripe.fake.url).port));
    const { STRIPE_WEBHOOK_SECRET: _noWebhooks, ...withoutWebhooks } = stripe.facilitatorEnv;
    // STRIPE_TIMEOUT_MS: long enough for a slow machine's answers, short enough that a held call times out soon.
    sweeping = await startFacilitator({ ...withoutWebhooks, STRIPE_API_BASE: proxy.url('http'), STRIPE_TIMEOUT_MS: '1500', RECOVERY_INTERVAL_MS: '300' });
    apiOnly = await startFacilitator({ ...stripe.facilitatorEnv, FACILITATOR_ROLE: 'api', STRIPE_TIMEOUT_MS: '2000' });
    db = sweeping.app.get(PrismaService);
  });
  afterAll(async () => {
    await sweeping?.close();
    await apiOnly?.close();
    await proxy?.close();
    await stripe?.fake.stop();
  });

  it('409 idempotency_key_in_use (the first call still running at Stripe) leaves the payment verified; the sweep confirms it once it ran, without a webhook', async () => {
    const { credential, challengeId } = await credentialFor(sweeping, terms('510'));
    const held = stripe.fake.hold('POST', '/v1/payment_intents');
    // The SDK times out on the held call and retries with the same key: Stripe answers 409.
    const answer = await settle(sweeping, credential, terms('510'));
    expect(answer).toMatchObject({ status: 500, body: { type: 'https://paymentauth.org/problems/internal-payment-error', challengeId } });
    expect(answer.body.detail).toMatch(/idempotency_key_in_use/);
    expect(createCalls(challengeId)).toHaveLength(2);
    expect(await paymentOf(challengeId)).toMatchObject({ state: 'verified', reference: null });
    expect(await claimOf(challengeId)).toBe('retryable');
    expect(await intentsOf(challengeId)).toEqual([]);

    held.release();
    await stateIs(challengeId, 'confirmed');
    const [intent, ...others] = await intentsOf(challengeId);
    expect(others).toEqual([]);
    expect(intent).toMatchObject({ status: 'succeeded', amount: 510 });
    expect(await paymentOf(challengeId)).toMatchObject({ state: 'confirmed', reference: intent!.id });
    expect((await eventsOf(challengeId)).map((e) => [e.type, e.data.via])).toEqual([
      ['payment.verified', undefined],
      ['payment.confirmed', 'sweep'],
    ]);

    // The same credential now gets the receipt, the same one each time, and Stripe is not asked to charge again.
    const receipt = await settle(sweeping, credential, terms('510'));
    expect(receipt).toMatchObject({
      status: 200,
      body: { success: true, receipt: { status: 'success', method: 'stripe', reference: intent!.id, challengeId } },
    });
    expect((await settle(sweeping, credential, terms('510'))).body).toEqual(receipt.body);
    expect(createCalls(challengeId)).toHaveLength(2);
  });

  it('a 500 after the charge was made: confirmed at once from the PaymentIntent, one charge', async () => {
    const { credential, challengeId } = await credentialFor(apiOnly, terms('520'));
    // The SDK retries the 500 with the same key, and Stripe replays the 500.
    stripe.fake.failAfterRunning('POST', '/v1/payment_intents');
    const answer = await settle(apiOnly, credential, terms('520'));
    expect(createCalls(challengeId)).toHaveLength(2);
    const [intent, ...others] = await intentsOf(challengeId);
    expect(others).toEqual([]);
    expect(intent).toMatchObject({ status: 'succeeded', amount: 520, amount_received: 520 });
    expect(answer).toMatchObject({ status: 200, body: { receipt: { reference: intent!.id, challengeId } } });
    expect(await paymentOf(challengeId)).toMatchObject({ state: 'confirmed', reference: intent!.id });
    expect((await eventsOf(challengeId)).map((e) => e.type)).toEqual(['payment.verified', 'payment.confirmed']);
    expect(await claimOf(challengeId)).toBe('settled');
  });

  it('an idempotency_error (the key first used with other parameters) is no decline: the PaymentIntent of the first call decides', () =>
    withoutSweep(async () => {
      const { credential, challengeId } = await credentialFor(apiOnly, terms('530'));
      const held = stripe.fake.hold('POST', '/v1/payment_intents');
      const unknown = await settle(apiOnly, credential, terms('530'));
      expect(unknown.status).toBe(500);
      held.release();
      await until('the held PaymentIntent', async () => ((await intentsOf(challengeId))[0]?.status === 'succeeded' ? true : undefined));

      // Another replica, configured to put the token elsewhere: same idempotency key, other parameters.
      const other = await startFacilitator({ ...stripe.facilitatorEnv, FACILITATOR_ROLE: 'api', STRIPE_SPT_PLACEMENT: 'payment_method_data' });
      try {
        const retried = await settle(other, credential, terms('530'));
        const [intent, ...others] = await intentsOf(challengeId);
        expect(others).toEqual([]);
        expect(retried).toMatchObject({ status: 200, body: { receipt: { reference: intent!.id } } });
        const [, , third] = createCalls(challengeId);
        expect(third?.params).toMatchObject({ payment_method_data: { shared_payment_granted_token: expect.stringMatching(/^spt_/) } });
        expect(await paymentOf(challengeId)).toMatchObject({ state: 'confirmed', reference: intent!.id });
      } finally {
        await other.close();
      }
    }));

  it('a payment answered failed whose PaymentIntent later succeeded is corrected by the sweep: payment.confirmed corrects payment.failed, and the merchant is told', async () => {
    const receiver = await startWebhookReceiver();
    const merchant = createMerchant('stripe corrections', receiver.url);
    receiver.verifyWith(merchant.webhookSecret);
    const webhookTypes = (challengeId: string) =>
      receiver.received
        .map((r) => JSON.parse(r.body) as { type: string; data: { payment: { challengeId?: string; state: string } } })
        .filter((e) => e.data.payment.challengeId === challengeId)
        .map((e) => `${e.type}:${e.data.payment.state}`);
    const { credential, challengeId } = await credentialFor(sweeping, terms('540'), 'pm_card_authenticationRequired', merchant.apiKey);
    const failed = await settle(sweeping, credential, terms('540'), merchant.apiKey);
    expect(failed).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/payment-action-required' } });
    const [intent] = await intentsOf(challengeId);
    expect(await paymentOf(challengeId)).toEqual({ state: 'failed', reference: intent!.id, error_reason: 'requires_action' });
    // The same credential again gets the same failure while that is what Stripe says.
    expect((await settle(sweeping, credential, terms('540'), merchant.apiKey)).body).toMatchObject({
      type: 'https://paymentauth.org/problems/payment-action-required',
      detail: failed.body.detail,
    });
    await until('the merchant told of the failure', () => (webhookTypes(challengeId).length ? true : undefined));

    // The buyer completes the payment on Stripe's side.
    expect((await stripe.buyer.paymentIntents.confirm(intent!.id, { payment_method: 'pm_card_visa' })).status).toBe('succeeded');
    await stateIs(challengeId, 'confirmed');
    const events = await eventsOf(challengeId);
    expect(events.map((e) => e.type)).toEqual(['payment.verified', 'payment.failed', 'payment.confirmed']);
    expect(events[2]!.data).toMatchObject({ reference: intent!.id, corrects: 'payment.failed', via: 'sweep', amountReceived: '540' });
    expect(await claimOf(challengeId)).toBe('settled');
    expect(await settle(sweeping, credential, terms('540'), merchant.apiKey)).toMatchObject({
      status: 200,
      body: { receipt: { reference: intent!.id, challengeId } },
    });
    // The merchant's webhook gets the correcting event after the failed one.
    await until('the merchant told of the correction', () => (webhookTypes(challengeId).length === 2 ? true : undefined));
    expect(webhookTypes(challengeId)).toEqual(['payment.failed:failed', 'payment.confirmed:confirmed']);
    receiver.close();
  });

  it('a payment Stripe never saw fails once its challenge expired and no call can still be running; another credential for the challenge stays refused', async () => {
    const { credential, challengeId } = await credentialFor(sweeping, terms('550', { expiresIn: 10 }));
    proxy.set('refuse');
    const unknown = await settle(sweeping, credential, terms('550', { expiresIn: 10 }));
    proxy.set('pass');
    expect(unknown.status).toBe(500);
    expect(await paymentOf(challengeId)).toMatchObject({ state: 'verified' });

    // Another payload for the same challenge: refused, whatever the state.
    const parsed = parseCredential(credential);
    if (!parsed.ok) throw new Error('unparseable credential');
    const forged = serializeCredential({ challenge: parsed.value.challenge, payload: { spt: 'spt_someone_else' } });
    expect((await settle(sweeping, forged, terms('550', { expiresIn: 10 }))).body.type).toBe('https://paymentauth.org/problems/invalid-challenge');

    await later(sweeping, 60_000, () => stateIs(challengeId, 'failed'));
    expect(await paymentOf(challengeId)).toMatchObject({ state: 'failed', reference: null, error_reason: 'no_payment_intent' });
    expect(await intentsOf(challengeId)).toEqual([]);
    expect((await eventsOf(challengeId)).map((e) => e.type)).toEqual(['payment.verified', 'payment.failed']);
    // After expiry, the same credential is told the outcome, and nothing is charged for it.
    const told = await later(sweeping, 60_000, () => settle(sweeping, credential, terms('550', { expiresIn: 10 })));
    expect(told.body).toMatchObject({ type: 'https://paymentauth.org/problems/verification-failed', detail: expect.stringMatching(/no PaymentIntent/) });
    expect(createCalls(challengeId)).toEqual([]);
  });

  it('a Stripe webhook arriving after the challenge expired still settles the payment, and the expired credential gets its receipt', () =>
    withoutSweep(async () => {
      stripe.fake.addWebhookEndpoint(`${apiOnly.url}/stripe/webhooks`, TEST_STRIPE_WEBHOOK_SECRET);
      const { credential, challengeId } = await credentialFor(apiOnly, terms('560', { expiresIn: 10 }));
      const held = stripe.fake.hold('POST', '/v1/payment_intents');
      expect((await settle(apiOnly, credential, terms('560', { expiresIn: 10 }))).status).toBe(500);

      await later(apiOnly, 60_000, async () => {
        // Expired: a new settlement of this challenge would be refused; the charge already under way is not.
        held.release();
        await stripe.fake.drainWebhooks();
        await stateIs(challengeId, 'confirmed');
        const [intent] = await intentsOf(challengeId);
        expect((await eventsOf(challengeId)).map((e) => [e.type, e.data.via])).toEqual([
          ['payment.verified', undefined],
          ['payment.confirmed', 'webhook'],
        ]);
        const receipt = await settle(apiOnly, credential, terms('560', { expiresIn: 10 }));
        expect(receipt).toMatchObject({ status: 200, body: { receipt: { status: 'success', method: 'stripe', reference: intent!.id, challengeId } } });
      });
      expect(createCalls(challengeId)).toHaveLength(2);
    }));
});
