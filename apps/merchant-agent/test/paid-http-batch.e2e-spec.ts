import { randomBytes } from 'node:crypto';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { x402Client } from '@x402/core/client';
import { toClientEvmSigner } from '@x402/evm';
import { BatchSettlementEvmScheme as BatchClientScheme } from '@x402/evm/batch-settlement/client';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import { toHex, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { batchSettlementAbi } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { configureHttpApp } from '@mp/platform';
import { BATCH_SETTLEMENT_ADDRESS, channelIdOf, decodeHeader } from '@mp/x402';
import { balanceOf, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { AppModule } from '../src/app.module';
import { loadMerchantConfig } from '../src/merchant.config';
import { createBatchPaywall, type BatchPaywall } from '../src/paid-http/batch-paywall';

/**
 * The merchant agent's x402 batch-settlement route, as a buyer and a merchant meet it: the official @x402/fetch
 * client pays N calls from one deposit, the merchant's channel manager claims and settles them through our
 * facilitator on chain, and the payer's refund returns the rest.
 */
describe('paid HTTP endpoint with x402 batch-settlement', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const network = manifest.network as `${string}:${string}`;
  // a receiver of this file alone: claims other suites leave unsettled for the manifest's merchant are not swept in here
  const receiver = privateKeyToAccount(generatePrivateKey()).address;
  const payer = privateKeyToAccount(manifest.accounts.payers[5].privateKey as Hex);
  const PRICE = 1_000n;
  const CALLS = 5;
  // batch-settlement's wallets of this file alone: no other suite's transactions move their nonces
  const [senderKey, authorizerKey] = [generatePrivateKey(), generatePrivateKey()];
  const authorizer = privateKeyToAccount(authorizerKey);
  let facilitator: RunningFacilitator;
  let merchant: INestApplication;
  let paywall: BatchPaywall;
  let url: string;

  beforeAll(async () => {
    await client.request({ method: 'anvil_setBalance' as never, params: [privateKeyToAccount(senderKey).address, toHex(10n ** 20n)] as never });
    facilitator = await startFacilitator({ BATCH_SETTLEMENT_SENDER_KEY: senderKey, BATCH_SETTLEMENT_AUTHORIZER_KEY: authorizerKey });
    const config = loadMerchantConfig({
      ...process.env,
      FACILITATOR_URL: facilitator.url,
      MERCHANT_BATCH_PRICE: PRICE.toString(),
      MERCHANT_BATCH_MIN_DEPOSIT: '50000',
      MERCHANT_BATCH_STORAGE_DIR: mkdtempSync(join(tmpdir(), 'merchant-batch-')),
      MERCHANT_BATCH_SETTLE_EVERY_SECONDS: '0',
      MERCHANT_PAY_TO: receiver,
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile();
    merchant = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureHttpApp(merchant);
    paywall = createBatchPaywall({ ...config, batchSettlement: config.batchSettlement! });
    merchant.use(paywall.middleware);
    await merchant.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(merchant.getHttpServer().address() as { port: number }).port}/paid/metered-forecast`;
  });
  afterAll(async () => {
    await paywall?.close();
    await merchant?.close();
    await facilitator?.close();
  });

  it('offers batch-settlement terms in its 402: the price per call, the deposit, and the facilitator as receiverAuthorizer', async () => {
    const response = await fetch(url);
    expect(response.status).toBe(402);
    const required = decodeHeader(response.headers.get('PAYMENT-REQUIRED')!) as { accepts: Record<string, unknown>[] };
    expect(required.accepts).toEqual([
      expect.objectContaining({
        scheme: 'batch-settlement',
        network,
        amount: PRICE.toString(),
        asset: usdc.address,
        payTo: receiver,
        extra: expect.objectContaining({ receiverAuthorizer: authorizer.address, withdrawDelay: 900, minDeposit: '50000' }),
      }),
    ]);
  });

  it('serves N calls on one deposit, claims and settles exactly N × the price to the merchant, and refunds the payer the rest', async () => {
    const salt = toHex(randomBytes(32));
    const scheme = new BatchClientScheme(toClientEvmSigner(payer, client as never), { salt } as never);
    const paying = new x402Client()
      .register(network, scheme)
      .setSpendControls({ allowedAssets: [{ network, asset: usdc.address, maxAmountPerPayment: '100000' }] });
    const pay = wrapFetchWithPayment(fetch, paying);
    const [payerBefore, merchantBefore] = [await balanceOf(client, usdc, payer.address), await balanceOf(client, usdc, receiver)];

    const transactions: string[] = [];
    for (let i = 0; i < CALLS; i++) {
      const response = await pay(url);
      expect(response.status).toBe(200);
      expect(await response.json()).toMatchObject({ location: 'Lisbon' });
      transactions.push(decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE')!).transaction);
    }
    // one deposit on chain, then vouchers only
    expect(transactions[0]).toMatch(/^0x[0-9a-f]{64}$/);
    expect(transactions.slice(1)).toEqual(Array(CALLS - 1).fill(''));
    expect(await balanceOf(client, usdc, payer.address)).toBe(payerBefore - 50_000n);
    expect(await balanceOf(client, usdc, receiver)).toBe(merchantBefore);

    const { claims, settle } = await paywall.channels.claimAndSettle();
    expect(claims).toEqual([{ vouchers: 1, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) }]);
    expect(settle?.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    expect(await balanceOf(client, usdc, receiver)).toBe(merchantBefore + BigInt(CALLS) * PRICE);
    // the settle is the facilitator's payment for the books: once, confirmed, with its outbox events
    const db = facilitator.app.get(PrismaService);
    const payments = await db.payment.findMany({ where: { txHash: settle!.transaction }, include: { events: { orderBy: { id: 'asc' } } } });
    expect(payments).toHaveLength(1);
    expect(payments[0]).toMatchObject({
      scheme: 'batch-settlement',
      state: 'confirmed',
      payTo: receiver.toLowerCase(),
      payer: BATCH_SETTLEMENT_ADDRESS.toLowerCase(),
    });
    expect(payments[0].amount.toString()).toBe((BigInt(CALLS) * PRICE).toString());
    expect(payments[0].events.map((e) => e.type)).toEqual(['payment.verified', 'payment.confirmed']);
    expect(payments[0].events[1].data).toMatchObject({ txHash: settle!.transaction });

    const refund = await scheme.refund(url);
    expect(refund).toMatchObject({ success: true });
    const channelId = channelIdOf(
      { payer: payer.address, payerAuthorizer: payer.address, receiver, receiverAuthorizer: authorizer.address, token: usdc.address, withdrawDelay: 900, salt },
      manifest.chainId,
    );
    const [balance, totalClaimed] = await client.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'channels',
      args: [channelId],
    });
    expect(totalClaimed).toBe(BigInt(CALLS) * PRICE);
    expect(balance).toBe(totalClaimed);
    expect(await balanceOf(client, usdc, payer.address)).toBe(payerBefore - BigInt(CALLS) * PRICE);
  });
});
