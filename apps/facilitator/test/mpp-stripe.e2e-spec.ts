import { getAddress } from 'viem';
import { Mppx, evm } from 'mppx/client';
import { PrismaService } from '@mp/db';
import { serializeCredential } from '@mp/mpp';
import { payerAccount, testChain } from '../../../test/support/chain';
import { paymentRequiredResponse } from '../../../test/support/mpp';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { postStripeWebhook, startTestStripe, TEST_STRIPE_WEBHOOK_SECRET, type TestStripe } from '../../../test/support/stripe';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { Clock } from '../src/x402/clock';

/** MPP method stripe through the facilitator, against the local fake Stripe, credentials from the official mppx client. */
describe('MPP method stripe (charge)', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  let stripe: TestStripe;
  let proxy: TcpProxy;
  let facilitator: RunningFacilitator;
  let db: PrismaService;

  const stripeOffer = (amount = '500') => ({
    method: 'stripe',
    intent: 'charge',
    request: { amount, currency: 'usd', methodDetails: { networkId: 'profile_test_merchant', paymentMethodTypes: ['card'] } },
  });
  const evmOffer = {
    method: 'evm',
    intent: 'charge',
    request: {
      amount: '1000',
      currency: usdc.address,
      recipient: getAddress(manifest.accounts.merchant.address),
      methodDetails: { chainId: manifest.chainId },
    },
  };
  const terms = (amount = '500') => ({ realm: 'shop.example', offers: [stripeOffer(amount)] });

  const credentialFor = async (routeTerms: object, paymentMethod = 'pm_card_visa') => {
    const issued = await postJson(`${facilitator.url}/mpp/challenges`, routeTerms);
    expect(issued.status).toBe(201);
    const mppx = Mppx.create({ methods: [stripe.mppxMethod(paymentMethod)], polyfill: false });
    return mppx.createCredential(paymentRequiredResponse(issued.body.wwwAuthenticate));
  };
  const settle = (credential: string, routeTerms: object = terms()) => postJson(`${facilitator.url}/mpp/settle`, { credential, terms: routeTerms });
  const intentsOf = async (challengeId: string) =>
    (await stripe.buyer.paymentIntents.list({ limit: 100 })).data.filter((pi) => pi.metadata.challenge_id === challengeId);
  const paymentOf = async (challengeId: string) =>
    (
      await db.$queryRawUnsafe<{ state: string; reference: string | null; rail: string; amount: string }[]>(
        `SELECT state::text, reference, rail, amount::text FROM facilitator.payments WHERE challenge_id = $1`,
        challengeId,
      )
    )[0];
  const eventsOf = async (challengeId: string) =>
    (
      await db.$queryRawUnsafe<{ type: string }[]>(
        `SELECT e.type FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE p.challenge_id = $1 ORDER BY e.id`,
        challengeId,
      )
    ).map((e) => e.type);

  beforeAll(async () => {
    stripe = await startTestStripe();
    proxy = await startTcpProxy(Number(new URL(stripe.fake.url).port));
    // No Stripe sweep in this spec (RECOVERY_INTERVAL_MS): what resolves a payment here is a retry or a webhook.
    facilitator = await startFacilitator({
      ...stripe.facilitatorEnv,
      STRIPE_API_BASE: proxy.url('http'),
      STRIPE_TIMEOUT_MS: '800',
      SETTLE_BUDGET_MS: '1500',
      RECOVERY_INTERVAL_MS: '600000',
    });
    db = facilitator.app.get(PrismaService);
  });
  afterAll(async () => {
    await facilitator?.close();
    await proxy?.close();
    await stripe?.fake.stop();
  });

  it('redeems the Shared Payment Token with one confirmed PaymentIntent, keyed mpp_<challengeId>_<spt>', async () => {
    const credential = await credentialFor(terms());
    const answer = await settle(credential);
    expect(answer.status).toBe(200);
    const { receipt } = answer.body;
    expect(receipt).toMatchObject({ status: 'success', method: 'stripe', reference: expect.stringMatching(/^pi_/), challengeId: expect.any(String) });
    const [intent, ...others] = await intentsOf(receipt.challengeId);
    expect(others).toEqual([]);
    expect(intent).toMatchObject({ id: receipt.reference, status: 'succeeded', amount: 500, currency: 'usd' });
    expect(await paymentOf(receipt.challengeId)).toEqual({ state: 'confirmed', reference: receipt.reference, rail: 'stripe', amount: '500' });
    expect(await eventsOf(receipt.challengeId)).toEqual(['payment.verified', 'payment.confirmed']);

    // The same credential again: the same receipt, no second PaymentIntent.
    const replay = await settle(credential);
    expect(replay.status).toBe(200);
    expect(replay.body).toEqual(answer.body);
    expect(await intentsOf(receipt.challengeId)).toHaveLength(1);
  });

  it('settles one credential sent 6 times at once exactly once, and answers all 6 with its receipt', async () => {
    const credential = await credentialFor(terms('650'));
    const answers = await Promise.all(Array.from({ length: 6 }, () => settle(credential, terms('650'))));
    expect(answers.map((a) => a.status)).toEqual(Array(6).fill(200));
    expect(new Set(answers.map((a) => a.body.paymentReceipt)).size).toBe(1);
    expect(await intentsOf(answers[0]!.body.receipt.challengeId)).toHaveLength(1);
  });

  it('maps a decline to verification-failed and requires_action to payment-action-required, each with a fresh challenge', async () => {
    const declined = await settle(await credentialFor(terms(), 'pm_card_chargeDeclined'));
    expect(declined).toMatchObject({
      status: 402,
      body: { type: 'https://paymentauth.org/problems/verification-failed', challenges: [expect.objectContaining({ method: 'stripe' })] },
    });
    expect(declined.body.detail).toMatch(/declined/);
    expect(await paymentOf(declined.body.challengeId)).toMatchObject({ state: 'failed' });

    const action = await settle(await credentialFor(terms(), 'pm_card_authenticationRequired'));
    expect(action).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/payment-action-required' } });
    expect(await paymentOf(action.body.challengeId)).toMatchObject({ state: 'failed' });
  });

  it('answers payment-insufficient for a token limited below the price, and method-unsupported for a method the route does not take', async () => {
    // A token whose limit is below the price, presented for a challenge asking 900.
    const issued = await postJson(`${facilitator.url}/mpp/challenges`, terms('900'));
    const token = (await stripe.buyer.rawRequest('POST', '/v1/test_helpers/shared_payment/granted_tokens', {
      payment_method: 'pm_card_visa',
      usage_limits: { currency: 'usd', max_amount: 100, expires_at: Math.floor(Date.now() / 1000) + 600 },
      seller_details: { network_id: 'profile_test_merchant' },
    })) as unknown as { id: string };
    const lowToken = serializeCredential({ challenge: issued.body.challenges[0], payload: { spt: token.id } });
    // /mpp/verify looks the token up first; /mpp/settle leaves that to the PaymentIntent, which Stripe refuses.
    const insufficient = await postJson(`${facilitator.url}/mpp/verify`, { credential: lowToken, terms: terms('900') });
    expect(insufficient).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/payment-insufficient' } });
    const refused = await settle(lowToken, terms('900'));
    expect(refused).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/verification-failed' } });
    expect((await intentsOf(issued.body.challenges[0].id)).filter((pi) => pi.status === 'succeeded')).toEqual([]);

    const evmOnly = { realm: 'shop.example', offers: [evmOffer] };
    const unsupported = await settle(await credentialFor(terms()), evmOnly);
    expect(unsupported).toMatchObject({ status: 400, body: { type: 'https://paymentauth.org/problems/method-unsupported' } });
    expect(unsupported.body.challenges[0].method).toBe('evm');
  });

  it('answers payment-expired once the challenge has expired', async () => {
    const credential = await credentialFor({ ...terms(), expiresIn: 30 });
    const clock = facilitator.app.get(Clock);
    const real = clock.nowMs.bind(clock);
    clock.nowMs = () => real() + 60_000;
    try {
      const answer = await settle(credential, { ...terms(), expiresIn: 30 });
      expect(answer.body.type).toBe('https://paymentauth.org/problems/payment-expired');
    } finally {
      clock.nowMs = real;
    }
  });

  it('when Stripe charged but the answer was lost: internal-payment-error, then a retry of the same credential gets the same PaymentIntent', async () => {
    const credential = await credentialFor(terms('700'));
    proxy.set('swallow');
    const lost = await settle(credential, terms('700'));
    proxy.set('pass');
    expect(lost).toMatchObject({ status: 500, body: { type: 'https://paymentauth.org/problems/internal-payment-error' } });
    const challengeId = lost.body.challengeId;
    expect(await paymentOf(challengeId)).toMatchObject({ state: 'verified' });
    const [charged] = await intentsOf(challengeId);
    expect(charged?.status).toBe('succeeded');

    // Another credential for the same challenge cannot take it over; the same one may retry at once.
    const claimRow = await db.$queryRawUnsafe<{ state: string }[]>(`SELECT state FROM facilitator.mpp_claims WHERE challenge_id = $1`, challengeId);
    expect(claimRow).toEqual([{ state: 'retryable' }]);
    const retried = await settle(credential, terms('700'));
    expect(retried.status).toBe(200);
    expect(retried.body.receipt.reference).toBe(charged!.id);
    expect(await intentsOf(challengeId)).toHaveLength(1);
    expect(await paymentOf(challengeId)).toMatchObject({ state: 'confirmed', reference: charged!.id });
  });

  it('takes Stripe webhooks verified on the raw body, once per event id, and settles a payment whose answer was lost', async () => {
    stripe.fake.addWebhookEndpoint(`${facilitator.url}/stripe/webhooks`, TEST_STRIPE_WEBHOOK_SECRET);
    const credential = await credentialFor(terms('800'));
    proxy.set('swallow');
    const lost = await settle(credential, terms('800'));
    proxy.set('pass');
    expect(lost.status).toBe(500);
    await stripe.fake.drainWebhooks();
    const challengeId = lost.body.challengeId;
    const [charged] = await intentsOf(challengeId);
    expect(await paymentOf(challengeId)).toEqual({ state: 'confirmed', reference: charged!.id, rail: 'stripe', amount: '800' });
    expect(await eventsOf(challengeId)).toEqual(['payment.verified', 'payment.confirmed']);

    // The same event again: recognised, nothing changes.
    const [event] = stripe.fake.events().filter((e) => e.type === 'payment_intent.succeeded' && (e.data.object as { id: string }).id === charged!.id);
    const body = JSON.stringify(event);
    const again = await postStripeWebhook(facilitator.url, body);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(await eventsOf(challengeId)).toEqual(['payment.verified', 'payment.confirmed']);

    // A forged or altered body: 400, nothing recorded.
    const forged = await postStripeWebhook(facilitator.url, body.replace('"succeeded"', '"canceled"'), body);
    expect(forged.status).toBe(400);
    expect(await forged.json()).toMatchObject({ code: 'webhook_signature_invalid' });
  });

  it('puts the token in payment_method_data when STRIPE_SPT_PLACEMENT says so (newer API versions)', async () => {
    const other = await startFacilitator({ ...stripe.facilitatorEnv, STRIPE_SPT_PLACEMENT: 'payment_method_data', STRIPE_API_VERSION: '2026-04-22.preview' });
    try {
      const issued = await postJson(`${other.url}/mpp/challenges`, terms('550'));
      const credential = await Mppx.create({ methods: [stripe.mppxMethod()], polyfill: false }).createCredential(
        paymentRequiredResponse(issued.body.wwwAuthenticate),
      );
      const answer = await postJson(`${other.url}/mpp/settle`, { credential, terms: terms('550') });
      expect(answer.status).toBe(200);
      const intent = await stripe.buyer.paymentIntents.retrieve(answer.body.receipt.reference);
      expect(intent.status).toBe('succeeded');
      const [request] = stripe.fake
        .requests()
        .filter((r) => r.method === 'POST' && r.path === '/v1/payment_intents' && r.idempotencyKey?.startsWith(`mpp_${answer.body.receipt.challengeId}_`));
      expect(request).toMatchObject({
        stripeVersion: '2026-04-22.preview',
        params: { payment_method_data: { shared_payment_granted_token: expect.stringMatching(/^spt_/) } },
      });
      expect(request!.params).not.toHaveProperty('shared_payment_granted_token');
    } finally {
      await other.close();
    }
  });

  it('still settles evm credentials alongside (both rails in one facilitator)', async () => {
    const issued = await postJson(`${facilitator.url}/mpp/challenges`, { realm: 'shop.example', offers: [evmOffer, stripeOffer()] });
    expect(issued.body.challenges.map((c: { method: string }) => c.method)).toEqual(['evm', 'stripe']);
    const mppx = Mppx.create({
      methods: [evm.charge({ account: payerAccount(manifest, 7), authorization: { name: usdc.name, version: usdc.version } })],
      polyfill: false,
    });
    const credential = await mppx.createCredential(paymentRequiredResponse(issued.body.wwwAuthenticate));
    const answer = await settle(credential, { realm: 'shop.example', offers: [evmOffer, stripeOffer()] });
    expect(answer.body.receipt).toMatchObject({ method: 'evm', reference: expect.stringMatching(/^0x/) });
  });
});
