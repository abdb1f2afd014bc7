import { randomUUID } from 'node:crypto';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { chartAccountId, paymentTransferId, TransferCode, TransferFlag } from '@mp/ledger';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USD = 'stripe/usd';

/** The merchant's books as MCP tools, called by the official MCP client with the merchant's API key. */
describe('ledger MCP tools', () => {
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let a: TestMerchant;
  let b: TestMerchant;
  const clients: Client[] = [];

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', API_KEY_CACHE_MS: '0', AUTH_FAILURES_PER_MINUTE: '0' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url });
    a = createMerchant('MCP merchant A');
    b = createMerchant('MCP merchant B');
  });
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    await ledger?.close();
    await facilitator?.close();
  });

  const connect = async (key: string) => {
    const client = new Client({ name: 'ledger-mcp-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', ledger.url), { requestInit: { headers: { authorization: `Bearer ${key}` } } }));
    clients.push(client);
    return client;
  };

  /** A Stripe payment of 500 booked the way ingestion books it: the hold, its post of 500, Stripe's fee of 45. */
  async function bookPayment(merchantId: string): Promise<string> {
    const paymentId = randomUUID();
    const [clearing, revenue, fees] = [chartAccountId('payerClearing', USD), chartAccountId('revenue', USD), chartAccountId('processorFees', USD)];
    await ledger.ledger.createAccounts(merchantId, [
      { id: clearing, asset: USD, code: 100, flags: 0 },
      { id: revenue, asset: USD, code: 200, flags: 0 },
      { id: fees, asset: USD, code: 320, flags: 0 },
    ]);
    const pending = paymentTransferId(paymentId, 'pending');
    const results = await ledger.ledger.createTransfers(merchantId, [
      { id: pending, debitAccountId: clearing, creditAccountId: revenue, amount: 500n, asset: USD, code: TransferCode.payment, flags: TransferFlag.pending },
    ]);
    expect(results[0].result).toBe('created');
    expect(
      await ledger.ledger.postPending(merchantId, { id: paymentTransferId(paymentId, 'post'), pendingId: pending, amount: 500n, reference: 'pi_mcp' }),
    ).toMatchObject({
      result: 'created',
    });
    const [fee] = await ledger.ledger.createTransfers(merchantId, [
      {
        id: paymentTransferId(paymentId, 'fee'),
        debitAccountId: revenue,
        creditAccountId: fees,
        amount: 45n,
        asset: USD,
        code: TransferCode.fee,
        flags: 0,
        reference: 'txn_1',
      },
    ]);
    expect(fee.result).toBe('created');
    return paymentId;
  }

  it('lists its read-only tools', async () => {
    const client = await connect(a.apiKey);
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['balances', 'subscription_status', 'transaction']);
    expect(tools.every((tool) => tool.annotations?.readOnlyHint === true)).toBe(true);
  });

  it("answers the calling merchant's balances and how a payment was booked, and nothing of another merchant's", async () => {
    const paymentId = await bookPayment(a.merchantId);
    const client = await connect(a.apiKey);

    const balances = (await client.callTool({ name: 'balances', arguments: { asset: USD } })).structuredContent as any;
    const byRole = Object.fromEntries(balances.accounts.map((account: any) => [account.role, account.balances.posted]));
    expect(byRole).toEqual({ payerClearing: '-500', revenue: '455', processorFees: '45' });
    expect(balances.truncated).toBe(false);

    const booked = (await client.callTool({ name: 'transaction', arguments: { paymentId } })).structuredContent as any;
    expect(booked.found).toBe(true);
    expect(booked.transfers.map((t: any) => [t.step, t.amount])).toEqual([
      ['pending', '500'],
      ['post', '500'],
      ['fee', '45'],
    ]);
    const one = (await client.callTool({ name: 'transaction', arguments: { transferId: booked.transfers[1].id } })).structuredContent as any;
    expect(one.transfers).toEqual([expect.objectContaining({ id: booked.transfers[1].id, reference: 'pi_mcp' })]);

    const stranger = await connect(b.apiKey);
    expect((await stranger.callTool({ name: 'transaction', arguments: { paymentId } })).structuredContent).toEqual({ found: false, transfers: [] });
    expect(((await stranger.callTool({ name: 'balances', arguments: { asset: USD } })).structuredContent as any).accounts).toEqual([]);
  });

  it('refuses bad arguments and unknown tools as invalid params', async () => {
    const client = await connect(a.apiKey);
    for (const [name, args] of [
      ['transaction', { paymentId: 'not-a-uuid' }],
      ['transaction', { paymentId: randomUUID(), transferId: randomUUID() }],
      ['transaction', {}],
      ['balances', { asset: 'stripe/usd', extra: 1 }],
      ['refund', {}],
    ] as const) {
      const error = await client.callTool({ name, arguments: args }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(McpError);
      expect((error as McpError).code).toBe(-32602);
    }
  });

  it('requires an API key, and takes only POST', async () => {
    const unauthenticated = await fetch(new URL('/mcp', ledger.url), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers.get('www-authenticate')).toBe('Bearer realm="ledger"');
    const get = await fetch(new URL('/mcp', ledger.url), { headers: { authorization: `Bearer ${a.apiKey}` } });
    expect(get.status).toBe(405);
    expect(get.headers.get('allow')).toBe('POST');
  });
});
