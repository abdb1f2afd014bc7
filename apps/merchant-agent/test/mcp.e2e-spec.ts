import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { Credential } from 'mppx';
import { evm } from 'mppx/client';
import { McpClient } from 'mppx/mcp/client';
import { getAddress, type Address, type Hex } from 'viem';
import { decodeOpaque } from '@mp/mpp';
import { configureHttpApp } from '@mp/platform';
import { balanceOf, payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { freePort } from '../../../test/support/net';
import { AppModule } from '../src/app.module';
import { createMcpHandler } from '../src/mcp/mcp-handler';
import { loadMerchantConfig } from '../src/merchant.config';

const PRICE = 17_000n;
const CREDENTIAL = 'org.paymentauth/credential';
const RECEIPT = 'org.paymentauth/receipt';

/** The paid MCP tools, paid by the official mppx MCP client (and by hand-made credentials), settled by our facilitator. */
describe('paid MCP tools', () => {
  const { manifest, client: chain } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = getAddress(manifest.accounts.merchant.address) as Address;
  const clients: Client[] = [];
  let facilitator: RunningFacilitator;
  let merchant: INestApplication;
  let baseUrl: string;

  beforeAll(async () => {
    facilitator = await startFacilitator();
    const config = loadMerchantConfig({ ...process.env, FACILITATOR_URL: facilitator.url, MERCHANT_PRICE: String(PRICE) });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile();
    merchant = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureHttpApp(merchant);
    merchant.use('/mcp', createMcpHandler(config));
    // The same tools in front of a facilitator that is not there.
    merchant.use('/mcp-unreachable', createMcpHandler({ ...config, facilitatorUrl: `http://127.0.0.1:${await freePort()}` }));
    await merchant.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(merchant.getHttpServer().address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await Promise.all(clients.map((c) => c.close()));
    await merchant?.close();
    await facilitator?.close();
  });

  const connect = async (path = '/mcp') => {
    const client = new Client({ name: 'mcp-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(path, baseUrl)));
    clients.push(client);
    return client;
  };

  /** One JSON-RPC message as it goes over the wire, to see exactly what the server answers. */
  const rpc = async (message: object, path = '/mcp') => {
    const response = await fetch(new URL(path, baseUrl), {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', ...message }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? JSON.parse(text) : undefined, text };
  };

  const callForecast = (id: number, extra: object = {}) =>
    rpc({ id, method: 'tools/call', params: { name: 'forecast', arguments: { city: 'Porto' } }, ...extra });

  const evmCharge = (payerIndex: number) =>
    evm.charge({ account: payerAccount(manifest, payerIndex), authorization: { name: usdc.name, version: usdc.version } });

  /** The credential object mppx's McpClient would put in `_meta`, made from a challenge the server issued. */
  const credentialFor = async (challenge: any, payerIndex: number) =>
    Credential.deserialize(await evmCharge(payerIndex).createCredential({ challenge } as never));

  const rpcErrorOf = async (promise: Promise<unknown>): Promise<McpError> => {
    const error = await promise.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(McpError);
    return error as McpError;
  };

  const balances = async (payerIndex: number) => ({
    payer: await balanceOf(chain, usdc, payerAccount(manifest, payerIndex).address),
    merchant: await balanceOf(chain, usdc, merchantAddress),
  });

  it('lists its tools, advertises MPP in its capabilities and answers ping free', async () => {
    const client = await connect();
    expect(client.getServerCapabilities()?.experimental).toEqual({ payment: { methods: { evm: { intents: ['charge'] } } } });
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual(['forecast', 'ping']);
    expect(tools.find((t) => t.name === 'forecast')?.inputSchema).toMatchObject({ type: 'object', properties: { city: { type: 'string' } } });

    const pong = await client.callTool({ name: 'ping', arguments: {} });
    expect(pong.content).toEqual([{ type: 'text', text: 'pong' }]);
    expect(pong._meta?.[RECEIPT]).toBeUndefined();
  });

  it('answers an unpaid forecast with -32042 carrying the facilitator challenges, bound to the tool', async () => {
    const { status, body } = await callForecast(1);
    expect(status).toBe(200);
    expect(body.error).toMatchObject({
      code: -32042,
      message: 'Payment Required',
      data: { httpStatus: 402, problem: { type: 'https://paymentauth.org/problems/payment-required', status: 402 } },
    });
    const [challenge] = body.error.data.challenges;
    expect(body.error.data.challenges).toHaveLength(1);
    expect(challenge).toMatchObject({
      realm: 'merchant-agent.local',
      method: 'evm',
      intent: 'charge',
      request: { amount: String(PRICE), currency: getAddress(usdc.address), recipient: merchantAddress, methodDetails: { chainId: manifest.chainId } },
    });
    expect(decodeOpaque(challenge.opaque)).toMatchObject({ ok: true, value: { resource: 'mcp:tools/forecast' } });

    // The SDK client sees the same error, data included.
    const error = await rpcErrorOf((await connect()).callTool({ name: 'forecast', arguments: {} }));
    expect(error.code).toBe(-32042);
    expect(error.data).toMatchObject({ httpStatus: 402, challenges: [expect.objectContaining({ method: 'evm' })] });
  });

  it('is paid end to end by mppx McpClient.wrap: the result carries the receipt of a real transfer of exactly the price', async () => {
    const before = await balances(7);
    const client = McpClient.wrap(await connect(), { methods: [evmCharge(7)] });

    const result = await client.callTool({ name: 'forecast', arguments: { city: 'Lisbon' } });

    expect(JSON.parse((result.content as { text: string }[])[0]!.text)).toMatchObject({ location: 'Lisbon', hours: expect.any(Array) });
    expect(result.receipt).toMatchObject({
      status: 'success',
      method: 'evm',
      reference: expect.stringMatching(/^0x[0-9a-f]{64}$/),
      challengeId: expect.any(String),
    });
    const transaction = await chain.getTransactionReceipt({ hash: result.receipt!.reference as Hex });
    expect(transaction.status).toBe('success');
    expect(await balances(7)).toEqual({ payer: before.payer - PRICE, merchant: before.merchant + PRICE });
  });

  it('answers a credential sent again with its original receipt (same reference), moving no money', async () => {
    const { body } = await callForecast(2);
    const [challenge] = body.error.data.challenges;
    const credential = await credentialFor(challenge, 8);
    const client = await connect();

    const paid = await client.callTool({ name: 'forecast', arguments: { city: 'Faro' }, _meta: { [CREDENTIAL]: credential } });
    expect(paid._meta?.[RECEIPT]).toMatchObject({ status: 'success', method: 'evm', challengeId: challenge.id });
    const afterFirst = await balances(8);

    const again = await client.callTool({ name: 'forecast', arguments: { city: 'Faro' }, _meta: { [CREDENTIAL]: credential } });
    expect(again.isError).toBeFalsy();
    expect(again._meta?.[RECEIPT]).toEqual(paid._meta?.[RECEIPT]);
    expect(await balances(8)).toEqual(afterFirst);
  });

  it('answers a malformed credential with -32602', async () => {
    const error = await rpcErrorOf((await connect()).callTool({ name: 'forecast', arguments: {}, _meta: { [CREDENTIAL]: { challenge: 1 } } }));
    expect(error.code).toBe(-32602);
    expect(error.data).toMatchObject({ problem: { type: 'https://paymentauth.org/problems/malformed-credential' } });
  });

  it('takes the credential from a root _meta too (the generic JSON-RPC binding)', async () => {
    const { body } = await callForecast(3);
    const credential = await credentialFor(body.error.data.challenges[0], 9);
    const before = await balances(9);

    const paid = await callForecast(4, { _meta: { [CREDENTIAL]: credential } });

    expect(paid.body.result._meta[RECEIPT]).toMatchObject({ status: 'success', method: 'evm' });
    expect(await balances(9)).toEqual({ payer: before.payer - PRICE, merchant: before.merchant + PRICE });
  });

  it('answers -32603 without internals when the facilitator is unreachable, and still serves the free tool', async () => {
    const { body, text } = await rpc({ id: 5, method: 'tools/call', params: { name: 'forecast', arguments: {} } }, '/mcp-unreachable');
    expect(body.error).toMatchObject({
      code: -32603,
      message: 'Internal Payment Error',
      data: { problem: { type: 'https://paymentauth.org/problems/internal-payment-error' } },
    });
    expect(text).not.toMatch(/ECONNREFUSED|fetch failed|\bat .+:\d+:\d+/);
    const pong = await rpc({ id: 6, method: 'tools/call', params: { name: 'ping' } }, '/mcp-unreachable');
    expect(pong.body.result.content).toEqual([{ type: 'text', text: 'pong' }]);
  });

  it('accepts notifications without charging, and refuses GET and DELETE with 405', async () => {
    expect((await rpc({ method: 'notifications/initialized' })).status).toBe(202);
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(new URL('/mcp', baseUrl), { method, headers: { accept: 'application/json, text/event-stream' } });
      expect(response.status).toBe(405);
      expect(await response.json()).toMatchObject({ jsonrpc: '2.0', error: { code: -32000 }, id: null });
    }
  });
});
