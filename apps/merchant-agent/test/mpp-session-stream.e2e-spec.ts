import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { createWalletClient, http as viemHttp, type Address, type PrivateKeyAccount } from 'viem';
import { EvmSessionChannelClient, streamWithSession } from '@mp/clients/evm-session';
import { parseWwwAuthenticateLines, serializeCredential } from '@mp/mpp';
import { configureHttpApp } from '@mp/platform';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { AppModule } from '../src/app.module';
import { loadMerchantConfig } from '../src/merchant.config';

const PRICE = 1_000n; // per forecast hour
const DEPOSIT = 5_000n;

/**
 * The merchant agent's metered forecast stream paid through an MPP evm session: our buyer (@mp/clients/evm-session,
 * mppx's session transport on EVM) against the merchant agent, whose facilitator opens, books and closes the channel on
 * the escrow on anvil.
 */
describe('MPP session: the metered SSE forecast (GET/POST /mpp/forecast/stream)', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const payee = manifest.accounts.merchant.address as Address;
  let facilitator: RunningFacilitator;
  let merchant: INestApplication;
  let url: string;

  beforeAll(async () => {
    facilitator = await startFacilitator({ SESSION_SETTLE_MIN_AMOUNT: '1000000000' });
    const config = loadMerchantConfig({
      ...process.env,
      FACILITATOR_URL: facilitator.url,
      MERCHANT_SESSION_UNIT_PRICE: PRICE.toString(),
      MERCHANT_SESSION_SUGGESTED_DEPOSIT: DEPOSIT.toString(),
      MERCHANT_SESSION_VOUCHER_WAIT_MS: '1500',
    });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile();
    merchant = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureHttpApp(merchant);
    await merchant.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(merchant.getHttpServer().address() as { port: number }).port}/mpp/forecast/stream`;
  });
  afterAll(async () => {
    await merchant?.close();
    await facilitator?.close();
  });

  const buyer = (account: PrivateKeyAccount) =>
    new EvmSessionChannelClient(client, {
      address: account.address,
      signer: account,
      wallet: createWalletClient({ account, chain: client.chain!, transport: viemHttp(manifest.rpcUrl) }),
    });

  it('answers without a credential with 402 and an evm session challenge', async () => {
    const response = await fetch(url, { headers: { accept: 'text/event-stream' } });
    expect(response.status).toBe(402);
    const challenge = response.headers.get('www-authenticate')!;
    expect(challenge).toContain('method="evm"');
    expect(challenge).toContain('intent="session"');
    expect(await response.json()).toMatchObject({ type: 'https://paymentauth.org/problems/payment-required' });
  });

  it('refuses hours out of range before any payment', async () => {
    const response = await fetch(`${url}?hours=0`, { headers: { accept: 'text/event-stream' } });
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ code: 'validation_failed' });
  });

  it.each([
    ['authorization', 6],
    ['hash', 7],
  ] as const)('opens by %s, streams 12 hours on a 5-hour deposit (vouchers and top-ups), closes at spent on chain', async (open, payerIndex) => {
    const account = payerAccount(manifest, payerIndex);
    const [payerStart, payeeStart] = [await balanceOf(client, usdc, account.address), await balanceOf(client, usdc, payee)];
    const hours: { in: number }[] = [];
    const kinds: string[] = [];
    const result = await streamWithSession(`${url}?hours=12&city=Porto`, {
      client: buyer(account),
      open,
      onMessage: (m) => hours.push(JSON.parse(m) as { in: number }),
      onEvent: (e) => kinds.push(e.kind),
    });
    expect(hours.map((h) => h.in)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    expect(kinds.filter((k) => k === 'topUp').length).toBeGreaterThanOrEqual(2);
    expect(result.receipt).toMatchObject({ method: 'evm', intent: 'session', spent: '12000', channelId: result.channel.channelId });
    expect(BigInt(result.receipt!.acceptedCumulative)).toBeGreaterThanOrEqual(12_000n);
    expect(result.closeReceipt).toMatchObject({ spent: '12000' });
    expect(result.closeReceipt?.txHash).toMatch(/^0x[0-9a-f]{64}$/);
    expect((await client.getTransactionReceipt({ hash: result.closeReceipt!.txHash as `0x${string}` })).status).toBe('success');
    // what was delivered was paid, and the rest of the deposit went back
    expect(await balanceOf(client, usdc, payee)).toBe(payeeStart + 12_000n);
    expect(await balanceOf(client, usdc, account.address)).toBe(payerStart - 12_000n);
  });

  it('stops delivering when the payer stops paying: nothing beyond the accepted vouchers, then the final receipt', async () => {
    const account = payerAccount(manifest, 8);
    const hours: string[] = [];
    // the buyer signs up to 3 hours' worth; the stream asks for the 4th, waits 1.5 s and ends
    const result = await streamWithSession(`${url}?hours=10`, {
      client: buyer(account),
      open: 'authorization',
      maxCumulative: 3n * PRICE,
      onMessage: (m) => hours.push(m),
      close: false,
    });
    expect(hours).toHaveLength(3);
    // the buyer stopped reading at the 4th hour's need-voucher; the facilitator's book is the truth
    expect(result.receipt).toMatchObject({ acceptedCumulative: '3000' });
    const channel = await (await fetch(`${facilitator.url}/mpp/sessions/${result.channel.channelId}`)).json();
    expect(channel).toMatchObject({ spent: '3000', acceptedCumulative: '3000' });
  });

  it('relays a refused voucher with the facilitator problem (a voucher signed by someone else)', async () => {
    const account = payerAccount(manifest, 9);
    const opened = await streamWithSession(`${url}?hours=1`, { client: buyer(account), open: 'authorization', close: false });
    const intruder = buyer(payerAccount(manifest, 6));
    const first = await fetch(url, { headers: { accept: 'text/event-stream' } });
    const challenge = first.headers.get('www-authenticate')!;
    await first.body?.cancel();
    const voucher = await intruder.voucher(opened.channel, 4_000n);
    const parsed = parseWwwAuthenticateLines([challenge]);
    if (!parsed.ok) throw new Error(parsed.error.detail);
    const response = await fetch(url, { method: 'POST', headers: { authorization: serializeCredential({ challenge: parsed.value[0]!, payload: voucher }) } });
    expect(response.status).toBe(402);
    expect(await response.json()).toMatchObject({ type: expect.stringMatching(/session\/(signer-mismatch|invalid-signature)$/) });
  });
});
