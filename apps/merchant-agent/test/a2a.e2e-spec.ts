import { x402Client } from '@x402/core/client';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import { getAddress, type Address, type Hex } from 'viem';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { buyFromAgent, type A2aBuyerOptions } from '../src/buyer/a2a-buyer';
import { X402_EXTENSION_URIS } from '../src/a2a/x402/extension';
import { chartAccountId, paymentTransferId } from '@mp/ledger';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { rpc, startA2aMerchant, type RunningMerchant } from './a2a-merchant';

const X402_V01 = X402_EXTENSION_URIS.v01;

const FORECAST_PRICE = 12_000n;
const HAIKU_PRICE = 7_000n;

/**
 * The official @a2a-js/sdk client (through our buyer agent) buying the merchant's skills on anvil, settled by our
 * facilitator under the merchant's API key, and booked by the ledger.
 */
describe('A2A merchant agent: buying skills', () => {
  const { manifest, client: chain } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = getAddress(manifest.accounts.merchant.address) as Address;
  let facilitator: RunningFacilitator;
  let merchant: RunningMerchant;
  let ledger: RunningLedger;
  let account: TestMerchant;

  beforeAll(async () => {
    account = createMerchant('A2A forecasts');
    facilitator = await startFacilitator({ OUTBOX_POLL_MS: '20' });
    ledger = await startLedger({ LEDGER_INGEST: 'true', FACILITATOR_URL: facilitator.url, QUEUE_PREFIX: facilitator.config.queuePrefix });
    merchant = await startA2aMerchant({
      FACILITATOR_URL: facilitator.url,
      FACILITATOR_API_KEY: account.apiKey,
      MERCHANT_PRICE: String(FORECAST_PRICE),
      MERCHANT_HAIKU_PRICE: String(HAIKU_PRICE),
    });
  });
  afterAll(async () => {
    await merchant?.close();
    await ledger?.close();
    await facilitator?.close();
  });

  const buyer = (payerIndex: number, options: Partial<A2aBuyerOptions> = {}): A2aBuyerOptions => ({
    agentUrl: merchant.url,
    privateKey: manifest.accounts.payers[payerIndex].privateKey as Hex,
    network: manifest.network as `${string}:${string}`,
    asset: usdc.address,
    maxAmountPerPayment: '100000',
    ...options,
  });
  const x402Wallet = (payerIndex: number) =>
    new x402Client()
      .register(manifest.network as `${string}:${string}`, new ExactEvmScheme(toClientEvmSigner(payerAccount(manifest, payerIndex))))
      .setSpendControls(false);
  const balances = async (payerIndex: number) => ({
    payer: await balanceOf(chain, usdc, payerAccount(manifest, payerIndex).address),
    merchant: await balanceOf(chain, usdc, merchantAddress),
  });

  it('sells a forecast over JSON-RPC (A2A 1.0): a transaction on chain moves exactly the price, and the completed task holds the receipt', async () => {
    const before = await balances(0);
    const lines: string[] = [];

    const purchase = await buyFromAgent(buyer(0, { log: (l) => lines.push(l) }), 'forecast Porto');

    expect(purchase).toMatchObject({
      outcome: 'TASK_STATE_COMPLETED',
      price: { amount: String(FORECAST_PRICE), asset: usdc.address, network: manifest.network },
    });
    expect(purchase.output).toEqual([expect.objectContaining({ location: 'Porto' })]);
    expect(purchase.receipt).toMatchObject({ success: true, network: manifest.network, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const receipt = await chain.getTransactionReceipt({ hash: purchase.receipt!.transaction as Hex });
    expect(receipt.status).toBe('success');
    expect(await balances(0)).toEqual({ payer: before.payer - FORECAST_PRICE, merchant: before.merchant + FORECAST_PRICE });
    expect(lines.join('\n')).toMatch(/payment required: 12000 atomic units/);

    const { body } = await rpc(merchant.url, 'GetTask', { id: purchase.taskId });
    expect(body.result.status).toMatchObject({
      state: 'TASK_STATE_COMPLETED',
      message: { metadata: { 'x402.payment.status': 'payment-completed', 'x402.payment.receipts': [purchase.receipt] } },
    });

    // the ledger books it for the merchant: the hold posted under the settlement transaction, into its revenue
    const [{ id: paymentId }] = await ledger.db.$queryRawUnsafe<{ id: string }[]>(
      `SELECT id::text FROM facilitator.payments WHERE tx_hash = $1 AND merchant_id = $2::uuid`,
      purchase.receipt!.transaction.toLowerCase(),
      account.merchantId,
    );
    let post;
    for (const deadline = Date.now() + 15_000; !post && Date.now() < deadline; await new Promise((r) => setTimeout(r, 50))) {
      [post] = await ledger.ledger.lookupTransfers(account.merchantId, [paymentTransferId(paymentId, 'post')]);
    }
    expect(post).toMatchObject({ amount: FORECAST_PRICE, reference: purchase.receipt!.transaction.toLowerCase() });
    const [revenue] = await ledger.ledger.lookupAccounts(account.merchantId, [chartAccountId('revenue', `${manifest.network}/${usdc.address.toLowerCase()}`)]);
    expect(revenue.creditsPosted).toBeGreaterThanOrEqual(FORECAST_PRICE);
  });

  it('sells a haiku over HTTP+JSON at its own price, settled after the work', async () => {
    const before = await balances(1);

    const purchase = await buyFromAgent(buyer(1, { binding: 'HTTP+JSON' }), 'haiku autumn rain');

    expect(purchase).toMatchObject({ outcome: 'TASK_STATE_COMPLETED', price: { amount: String(HAIKU_PRICE) }, receipt: { success: true } });
    expect(purchase.output).toEqual([expect.stringMatching(/^autumn rain, once more/)]);
    expect(await balances(1)).toEqual({ payer: before.payer - HAIKU_PRICE, merchant: before.merchant + HAIKU_PRICE });
  });

  it('sells through the v0.3 compatibility binding, as an a2a-x402 v0.3 client speaks', async () => {
    const before = await balances(2);
    const lines: string[] = [];

    const purchase = await buyFromAgent(buyer(2, { protocolVersion: '0.3', log: (l) => lines.push(l) }), 'forecast Faro');

    expect(lines[0]).toMatch(/over JSONRPC \(A2A 0\.3\)$/);
    expect(purchase).toMatchObject({ outcome: 'TASK_STATE_COMPLETED', output: [expect.objectContaining({ location: 'Faro' })], receipt: { success: true } });
    expect(await balances(2)).toEqual({ payer: before.payer - FORECAST_PRICE, merchant: before.merchant + FORECAST_PRICE });
  });

  it('speaks the v0.3 shapes of the a2a-x402 spec on the wire: message/send, X-A2A-Extensions, kind, input-required', async () => {
    const before = await balances(2);
    const v03 = async (params: unknown) => {
      const response = await fetch(`${merchant.url}/a2a/jsonrpc`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-a2a-extensions': X402_V01 },
        body: JSON.stringify({ jsonrpc: '2.0', id: 'req-001', method: 'message/send', params }),
      });
      expect(response.headers.get('x-a2a-extensions')).toBe(X402_V01);
      return ((await response.json()) as { result: any }).result;
    };
    const ask = await v03({ message: { kind: 'message', messageId: crypto.randomUUID(), role: 'user', parts: [{ kind: 'text', text: 'forecast Evora' }] } });
    expect(ask).toMatchObject({
      kind: 'task',
      status: { state: 'input-required', message: { kind: 'message', role: 'agent', metadata: { 'x402.payment.status': 'payment-required' } } },
    });
    const required = ask.status.message.metadata['x402.payment.required'];
    expect(required).toMatchObject({
      x402Version: 2,
      accepts: [
        {
          scheme: 'exact',
          network: manifest.network,
          amount: String(FORECAST_PRICE),
          asset: usdc.address,
          payTo: manifest.accounts.merchant.address,
          extra: { name: usdc.name, version: usdc.version },
        },
      ],
    });

    const payload = await x402Wallet(2).createPaymentPayload(required);
    const paid = await v03({
      message: {
        kind: 'message',
        messageId: crypto.randomUUID(),
        taskId: ask.id,
        contextId: ask.contextId,
        role: 'user',
        parts: [{ kind: 'text', text: 'Here is the payment authorization.' }],
        metadata: { 'x402.payment.status': 'payment-submitted', 'x402.payment.payload': payload },
      },
    });

    expect(paid).toMatchObject({
      kind: 'task',
      id: ask.id,
      status: {
        state: 'completed',
        message: { metadata: { 'x402.payment.status': 'payment-completed', 'x402.payment.receipts': [{ success: true, network: manifest.network }] } },
      },
      artifacts: [{ parts: [{ kind: 'data', data: expect.objectContaining({ location: 'Evora' }) }] }],
    });
    expect(await balances(2)).toEqual({ payer: before.payer - FORECAST_PRICE, merchant: before.merchant + FORECAST_PRICE });
  });

  it('answers the free ping with a message, no task and no payment, without the x402 extension', async () => {
    const purchase = await buyFromAgent(buyer(0), 'ping');
    expect(purchase).toEqual({ outcome: 'message', output: ['pong'], payer: payerAccount(manifest, 0).address });

    const { body } = await rpc(
      merchant.url,
      'SendMessage',
      { message: { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text: 'ping' }] } },
      { 'a2a-extensions': '' },
    );
    expect(body.result.message).toMatchObject({ role: 'ROLE_AGENT', parts: [{ text: 'pong' }] });
  });

  it('lets a buyer decline an offer beyond its spend controls: the task fails as payment-rejected and nothing moves', async () => {
    const before = await balances(0);

    const purchase = await buyFromAgent(buyer(0, { maxAmountPerPayment: String(FORECAST_PRICE - 1n) }), 'forecast Braga');

    expect(purchase).toMatchObject({ outcome: 'TASK_STATE_FAILED', output: [] });
    expect(purchase.receipt).toBeUndefined();
    expect(await balances(0)).toEqual(before);
    const { body } = await rpc(merchant.url, 'GetTask', { id: purchase.taskId });
    expect(body.result.status.message.metadata).toEqual({ 'x402.payment.status': 'payment-rejected' });
  });
});
