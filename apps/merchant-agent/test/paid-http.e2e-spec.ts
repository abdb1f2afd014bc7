import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Address, Hex } from 'viem';
import { configureHttpApp } from '@mp/platform';
import { decodeHeader } from '@mp/x402';
import { balanceOf, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { AppModule } from '../src/app.module';
import { buy } from '../src/buyer/buyer';
import { loadMerchantConfig } from '../src/merchant.config';
import { createPaywall } from '../src/paid-http/paywall';

/** The official @x402/fetch client paying a route behind the official @x402/express middleware, settled by our facilitator. */
describe('paid HTTP endpoint', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  let facilitator: RunningFacilitator;
  let merchant: INestApplication;
  let url: string;

  beforeAll(async () => {
    facilitator = await startFacilitator();
    const config = loadMerchantConfig({ ...process.env, FACILITATOR_URL: facilitator.url, MERCHANT_PRICE: '25000' });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile();
    merchant = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureHttpApp(merchant);
    merchant.use(createPaywall(config));
    await merchant.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(merchant.getHttpServer().address() as { port: number }).port}/paid/forecast`;
  });
  afterAll(async () => {
    await merchant?.close();
    await facilitator?.close();
  });

  it('answers an unpaid request with 402 and x402 v2 requirements', async () => {
    const response = await fetch(url);
    expect(response.status).toBe(402);
    const required = decodeHeader(response.headers.get('PAYMENT-REQUIRED')!) as { x402Version: number; accepts: Record<string, unknown>[] };
    expect(required.x402Version).toBe(2);
    expect(required.accepts[0]).toMatchObject({
      scheme: 'exact',
      network: manifest.network,
      amount: '25000',
      asset: usdc.address,
      payTo: manifest.accounts.merchant.address,
    });
  });

  it('serves the resource once paid, with a PAYMENT-RESPONSE naming a real transaction that moved exactly the price', async () => {
    const payer = manifest.accounts.payers[1];
    const merchantAddress = manifest.accounts.merchant.address as Address;
    const [payerBefore, merchantBefore] = [await balanceOf(client, usdc, payer.address as Address), await balanceOf(client, usdc, merchantAddress)];

    const purchase = await buy({
      url,
      privateKey: payer.privateKey as Hex,
      network: manifest.network as `${string}:${string}`,
      asset: usdc.address,
      maxAmountPerPayment: '100000',
    });

    expect(purchase.status).toBe(200);
    expect(purchase.body).toMatchObject({ location: 'Lisbon' });
    expect(purchase.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(purchase.network).toBe(manifest.network);
    const receipt = await client.getTransactionReceipt({ hash: purchase.transaction as Hex });
    expect(receipt.status).toBe('success');
    expect(await balanceOf(client, usdc, payer.address as Address)).toBe(payerBefore - 25_000n);
    expect(await balanceOf(client, usdc, merchantAddress)).toBe(merchantBefore + 25_000n);
  });
});
