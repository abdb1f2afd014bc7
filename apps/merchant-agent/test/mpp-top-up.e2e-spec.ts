import { getAddress, type Address } from 'viem';
import { Mppx, evm } from 'mppx/client';
import { Receipt } from 'mppx';
import { balanceOf as tokenBalanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { freePort } from '../../../test/support/net';
import { startA2aMerchant, type RunningMerchant } from './a2a-merchant';

const TOP_UP = 7_000n;

/**
 * A prepaid balance topped up with MPP (issue 14: "a payer tops up through any x402 or MPP payment"): the official
 * mppx evm client pays POST /mpp/balance/top-up, our facilitator settles it on chain, the ledger credits it once per
 * payment. Bad bodies are refused before anything is charged; a credit lost to a ledger outage is recovered by sending
 * the same credential again, without a second charge.
 */
describe('MPP top-up of a prepaid balance (POST /mpp/balance/top-up)', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const asset = `${manifest.network}/${usdc.address.toLowerCase()}`;
  const payTo = getAddress(manifest.accounts.merchant.address) as Address;
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchantKeys: TestMerchant;
  let agent: RunningMerchant;
  let ledgerDown: RunningMerchant;

  beforeAll(async () => {
    merchantKeys = createMerchant('MPP top-up merchant', undefined, { receivingAddresses: [`${manifest.network}:${payTo}`] });
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', API_KEY_CACHE_MS: '0' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url });
    const env = { FACILITATOR_URL: facilitator.url, FACILITATOR_API_KEY: merchantKeys.apiKey, MERCHANT_PREPAID_TOP_UP_AMOUNT: String(TOP_UP) };
    agent = await startA2aMerchant({ ...env, LEDGER_URL: ledger.url }, { mpp: true });
    // the same merchant, with its ledger out of reach
    ledgerDown = await startA2aMerchant({ ...env, LEDGER_URL: `http://127.0.0.1:${await freePort()}`, MERCHANT_FACILITATOR_TIMEOUT_MS: '1500' }, { mpp: true });
  });
  afterAll(async () => {
    await ledgerDown?.close();
    await agent?.close();
    await ledger?.close();
    await facilitator?.close();
  });

  const balance = async (payer: string) =>
    (await call(`${ledger.url}/balances/${payer.toLowerCase()}?asset=${asset}`, { key: merchantKeys.apiKey })).body as Record<string, string>;
  const available = async (payer: string) => {
    const found = await balance(payer);
    return BigInt(found.available ?? '0');
  };
  const mppx = (payerIndex: number) =>
    Mppx.create({
      methods: [evm.charge({ account: payerAccount(manifest, payerIndex), authorization: { name: usdc.name, version: usdc.version } })],
      polyfill: false,
    });
  const post = (on: RunningMerchant, body: unknown, headers: Record<string, string> = {}, fetcher: typeof fetch = fetch) =>
    fetcher(`${on.url}/mpp/balance/top-up`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });

  it('answers an unpaid request with one evm challenge for the top-up amount', async () => {
    const response = await post(agent, {});
    expect(response.status).toBe(402);
    const challenges = response.headers.get('www-authenticate')!;
    expect(challenges.match(/Payment id=/g)).toHaveLength(1);
    expect(challenges).toContain('method="evm"');
    expect(challenges).toContain('intent="charge"');
    const request = JSON.parse(Buffer.from(/request="([^"]+)"/.exec(challenges)![1]!, 'base64url').toString());
    expect(request).toMatchObject({ amount: String(TOP_UP), currency: usdc.address, recipient: payTo });
  });

  it('is paid by mppx, settled on chain and credited to the payer once', async () => {
    const payer = payerAccount(manifest, 5).address;
    const [before, merchantBefore] = [await available(payer), await tokenBalanceOf(client, usdc, payTo)];
    const response = await post(agent, {}, {}, mppx(5).fetch as typeof fetch);
    const body = await response.json();
    expect(response.status, JSON.stringify(body)).toBe(200);
    const receipt = Receipt.deserialize(response.headers.get('payment-receipt')!);
    expect(receipt).toMatchObject({ status: 'success', method: 'evm' });
    expect(body).toMatchObject({
      credited: String(TOP_UP),
      paymentReference: receipt.reference,
      balance: { payer: payer.toLowerCase(), asset, available: String(before + TOP_UP) },
    });
    expect((await client.getTransactionReceipt({ hash: receipt.reference as `0x${string}` })).status).toBe('success');
    expect(await tokenBalanceOf(client, usdc, payTo)).toBe(merchantBefore + TOP_UP);
    expect(await available(payer)).toBe(before + TOP_UP);
  });

  it('refuses a bad body before any challenge or charge', async () => {
    for (const body of [{ payer: payerAccount(manifest, 7).address }, { amount: '1' }, ['x'], 'text']) {
      const response = await post(agent, body);
      expect(response.status, JSON.stringify(body)).toBe(400);
      expect(response.headers.get('www-authenticate')).toBeNull();
      expect(await response.json()).toMatchObject({ code: 'validation_failed' });
    }
    // with a credential too: the paying client is refused and nothing moves
    const merchantBefore = await tokenBalanceOf(client, usdc, payTo);
    const response = await post(agent, { payer: payerAccount(manifest, 7).address }, {}, mppx(5).fetch as typeof fetch);
    expect(response.status).toBe(400);
    expect(await tokenBalanceOf(client, usdc, payTo)).toBe(merchantBefore);
  });

  it('recovers a credit lost to a ledger outage with the same credential, charging once', async () => {
    const payer = payerAccount(manifest, 8).address;
    const [before, merchantBefore] = [await available(payer), await tokenBalanceOf(client, usdc, payTo)];
    const unpaid = await post(ledgerDown, {});
    const credential = await mppx(8).createCredential(unpaid);
    const authorization = credential.startsWith('Payment ') ? credential : `Payment ${credential}`;

    const lost = await post(ledgerDown, {}, { authorization });
    expect(lost.status).toBe(503);
    expect(lost.headers.get('payment-receipt')).toBeTruthy();
    expect(await lost.json()).toMatchObject({ code: 'upstream_unavailable' });
    expect(await tokenBalanceOf(client, usdc, payTo)).toBe(merchantBefore + TOP_UP);
    expect(await available(payer)).toBe(before);

    for (let i = 0; i < 2; i++) {
      const again = await post(agent, {}, { authorization });
      expect(again.status).toBe(200);
      expect(((await again.json()) as { balance: { available: string } }).balance.available).toBe(String(before + TOP_UP));
    }
    expect(await available(payer)).toBe(before + TOP_UP);
    expect(await tokenBalanceOf(client, usdc, payTo)).toBe(merchantBefore + TOP_UP);
  });
});
