import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getAddress, type Address } from 'viem';
import { Mppx, evm } from 'mppx/client';
import { Receipt } from 'mppx';
import { validate } from 'mppx/discovery';
import { configureHttpApp } from '@mp/platform';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startTestStripe, type TestStripe } from '../../../test/support/stripe';
import { AppModule } from '../src/app.module';
import { loadMerchantConfig } from '../src/merchant.config';
import { createMppPaywall } from '../src/mpp/mpp-paywall';

/** The official mppx client paying the merchant's MPP route, settled through our facilitator: on chain and through Stripe. */
describe('MPP-paid HTTP endpoint (POST /mpp/forecast)', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = getAddress(manifest.accounts.merchant.address) as Address;
  let stripe: TestStripe;
  let facilitator: RunningFacilitator;
  let merchant: INestApplication;
  let base: string;

  beforeAll(async () => {
    stripe = await startTestStripe();
    facilitator = await startFacilitator(stripe.facilitatorEnv);
    stripe.fake.addWebhookEndpoint(`${facilitator.url}/stripe/webhooks`, stripe.facilitatorEnv.STRIPE_WEBHOOK_SECRET!);
    const config = loadMerchantConfig({
      ...process.env,
      FACILITATOR_URL: facilitator.url,
      MERCHANT_PRICE: '20000',
      MERCHANT_STRIPE_NETWORK_ID: 'profile_test_merchant',
      MERCHANT_STRIPE_PRICE: '75',
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile();
    merchant = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureHttpApp(merchant);
    merchant.use(createMppPaywall(config));
    await merchant.listen(0, '127.0.0.1');
    base = `http://127.0.0.1:${(merchant.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await merchant?.close();
    await facilitator?.close();
    await stripe?.fake.stop();
  });

  const post = (fetcher: typeof fetch, body: object = { city: 'Porto' }) =>
    fetcher(`${base}/mpp/forecast`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  it('answers an unpaid request with 402, problem+json and one challenge per method, bound to the body', async () => {
    const response = await post(fetch);
    expect(response.status).toBe(402);
    expect(response.headers.get('cache-control')).toBe('no-store');
    expect(response.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    expect(await response.json()).toMatchObject({ type: 'https://paymentauth.org/problems/payment-required', status: 402 });
    const challenges = response.headers.get('www-authenticate')!;
    expect(challenges.match(/Payment id=/g)).toHaveLength(2);
    expect(challenges).toContain('method="evm"');
    expect(challenges).toContain('method="stripe"');
    expect(challenges).toMatch(/digest="sha-256=:[A-Za-z0-9+/]+=*:"/);
  });

  it('is paid with the evm method by mppx: settled on chain, Payment-Receipt returned', async () => {
    const mppx = Mppx.create({
      methods: [evm.charge({ account: payerAccount(manifest, 8), authorization: { name: usdc.name, version: usdc.version } })],
      polyfill: false,
    });
    const before = await balanceOf(client, usdc, merchantAddress);
    const response = await post(mppx.fetch as typeof fetch);
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ location: 'Porto', hours: expect.any(Array) });
    expect(response.headers.get('cache-control')).toBe('private');
    const receipt = Receipt.deserialize(response.headers.get('payment-receipt')!);
    expect(receipt).toMatchObject({ status: 'success', method: 'evm', reference: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect((await client.getTransactionReceipt({ hash: receipt.reference as `0x${string}` })).status).toBe('success');
    expect(await balanceOf(client, usdc, merchantAddress)).toBe(before + 20_000n);
  });

  it('is paid with the stripe method by mppx: a confirmed PaymentIntent on the fake Stripe, pi_ reference in the receipt', async () => {
    const mppx = Mppx.create({ methods: [stripe.mppxMethod()], polyfill: false });
    const response = await post(mppx.fetch as typeof fetch, { city: 'Faro' });
    expect(response.status).toBe(200);
    const receipt = Receipt.deserialize(response.headers.get('payment-receipt')!);
    expect(receipt).toMatchObject({ status: 'success', method: 'stripe', reference: expect.stringMatching(/^pi_/) });
    const intent = await stripe.buyer.paymentIntents.retrieve(receipt.reference);
    expect(intent).toMatchObject({ status: 'succeeded', amount: 75, currency: 'usd', metadata: expect.objectContaining({ challenge_id: expect.any(String) }) });
  });

  it('refuses a credential for another body (digest) and two credentials at once', async () => {
    const unpaid = await post(fetch, { city: 'Porto' });
    const mppx = Mppx.create({
      methods: [evm.charge({ account: payerAccount(manifest, 9), authorization: { name: usdc.name, version: usdc.version } })],
      polyfill: false,
    });
    const credential = await mppx.createCredential(unpaid);
    const otherBody = await fetch(`${base}/mpp/forecast`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: credential },
      body: JSON.stringify({ city: 'Braga' }),
    });
    expect(otherBody.status).toBe(402);
    expect(await otherBody.json()).toMatchObject({ type: 'https://paymentauth.org/problems/invalid-challenge' });
    const twice = await fetch(`${base}/mpp/forecast`, {
      method: 'POST',
      headers: [
        ['content-type', 'application/json'],
        ['authorization', credential],
        ['payment-authorization', credential],
      ],
      body: JSON.stringify({ city: 'Porto' }),
    });
    expect(twice.status).toBe(400);
    expect(await twice.json()).toMatchObject({ type: 'https://paymentauth.org/problems/bad-request' });
    // The credential is still good for the body it was made for.
    const paid = await fetch(`${base}/mpp/forecast`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: credential },
      body: JSON.stringify({ city: 'Porto' }),
    });
    expect(paid.status).toBe(200);
  });

  it('publishes a discovery document that mppx validates, with both offers on the paid operation', async () => {
    const response = await fetch(`${base}/openapi.json`);
    expect(response.headers.get('cache-control')).toBe('max-age=300');
    const document = (await response.json()) as any;
    expect(validate(document).filter((e) => e.severity === 'error')).toEqual([]);
    expect(document['x-service-info'].categories).toContain('weather');
    expect(document.paths['/mpp/forecast'].post['x-payment-info'].offers).toEqual([
      expect.objectContaining({ intent: 'charge', method: 'evm', amount: '20000', currency: usdc.address }),
      expect.objectContaining({ intent: 'charge', method: 'stripe', amount: '75', currency: 'usd' }),
    ]);
  });
});
