import { randomUUID } from 'node:crypto';
import { getAddress, type Address } from 'viem';
import { spendMessage } from '@mp/chain';
import { buyFromAgent } from '../src/buyer/a2a-buyer';
import { payerAccount, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { rpc, startA2aMerchant, userMessage, type RunningMerchant } from './a2a-merchant';

const TOP_UP = 5_000n;
const UNIT_PRICE = 100n;
const MAX_UNITS = 50n;

/**
 * The metered A2A skill paid from a prepaid balance (issue 14): the buyer tops up once through the x402 `top-up` skill
 * (the official clients, settled on chain by our facilitator, credited in the ledger), then calls `wordcount` with no
 * payment step, each call held, captured at its actual cost and delivered only after.
 */
describe('A2A merchant agent: metered skill from a prepaid balance', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const asset = `${manifest.network}/${usdc.address.toLowerCase()}`;
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchantKeys: TestMerchant;
  let agent: RunningMerchant;
  let ledgerProxy: TcpProxy;
  let lossyAgent: RunningMerchant;

  beforeAll(async () => {
    const payTo = getAddress(manifest.accounts.merchant.address) as Address;
    merchantKeys = createMerchant('Prepaid agent merchant', undefined, { receivingAddresses: [`${manifest.network}:${payTo}`] });
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', API_KEY_CACHE_MS: '0' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url });
    agent = await startA2aMerchant(
      {
        FACILITATOR_URL: facilitator.url,
        FACILITATOR_API_KEY: merchantKeys.apiKey,
        LEDGER_URL: ledger.url,
        MERCHANT_PREPAID_TOP_UP_AMOUNT: String(TOP_UP),
        MERCHANT_METERED_UNIT_PRICE: String(UNIT_PRICE),
      },
      { mcp: true },
    );
    // the same merchant's agent again, reaching the ledger through a proxy that can lose its answers
    ledgerProxy = await startTcpProxy(Number(new URL(ledger.url).port));
    lossyAgent = await startA2aMerchant({
      FACILITATOR_URL: facilitator.url,
      FACILITATOR_API_KEY: merchantKeys.apiKey,
      LEDGER_URL: ledgerProxy.url('http'),
      MERCHANT_PREPAID_TOP_UP_AMOUNT: String(TOP_UP),
      MERCHANT_METERED_UNIT_PRICE: String(UNIT_PRICE),
      MERCHANT_FACILITATOR_TIMEOUT_MS: '1500',
      MERCHANT_A2A_SETTLE_RETRY_MS: '300',
    });
  });
  afterAll(async () => {
    await lossyAgent?.close();
    await ledgerProxy?.close();
    await agent?.close();
    await ledger?.close();
    await facilitator?.close();
  });

  const balanceOf = async (payer: string) =>
    (await call(`${ledger.url}/balances/${payer.toLowerCase()}?asset=${asset}`, { key: merchantKeys.apiKey })).body as Record<string, string>;
  const topUp = (payerIndex: number, on = agent) =>
    buyFromAgent(
      {
        agentUrl: on.url,
        privateKey: manifest.accounts.payers[payerIndex].privateKey,
        network: manifest.network as `${string}:${string}`,
        asset: usdc.address,
        maxAmountPerPayment: String(TOP_UP),
      },
      'top-up',
    );

  /** One metered call, signed by the payer for this message only. */
  const wordcount = async (payerIndex: number, text: string, options: { messageId?: string; sign?: boolean; deadline?: number } = {}) => {
    const account = payerAccount(manifest, payerIndex);
    const message = { ...userMessage(`wordcount on: ${text}`), ...(options.messageId && { messageId: options.messageId }) };
    const deadline = String(options.deadline ?? Math.floor(Date.now() / 1000) + 60);
    const signature = await account.signMessage({ message: spendMessage('a2a:wordcount', message.messageId, deadline) });
    const metadata = options.sign === false ? {} : { 'mp.prepaid.proof': { payer: account.address, deadline, signature } };
    const { body } = await rpc(agent.url, 'SendMessage', { message: { ...message, metadata } }, { 'a2a-extensions': '' });
    return body.result.task as { id: string; status: { state: string; message: { metadata: Record<string, any> } }; artifacts?: any[] };
  };

  it('tops up through x402, then serves metered calls from the balance at their actual cost', async () => {
    const payer = payerAccount(manifest, 2).address;
    const before = await balanceOf(payer);
    const bought = await topUp(2);
    expect(bought.outcome, JSON.stringify(bought)).toBe('TASK_STATE_COMPLETED');
    expect(bought.receipt?.success).toBe(true);
    expect(bought.output[0]).toMatchObject({ payer: payer.toLowerCase(), asset, available: String(BigInt(before.available) + TOP_UP) });

    const task = await wordcount(2, 'the quick brown fox jumps');
    expect(task.status.state).toBe('TASK_STATE_COMPLETED');
    expect(task.artifacts?.[0].parts[0].data).toMatchObject({ words: 5 });
    expect(task.status.message.metadata['mp.prepaid.receipt']).toEqual({
      payer: payer.toLowerCase(),
      units: 5,
      unitPrice: String(UNIT_PRICE),
      charged: String(5n * UNIT_PRICE),
      available: String(BigInt(before.available) + TOP_UP - 5n * UNIT_PRICE),
    });
    const after = await balanceOf(payer);
    expect(after).toMatchObject({ held: '0', spent: String(BigInt(before.spent) + 5n * UNIT_PRICE) });
  });

  it('charges the same message once, however often it is sent', async () => {
    const payer = payerAccount(manifest, 3).address;
    await topUp(3);
    const start = await balanceOf(payer);
    const messageId = randomUUID();
    const first = await wordcount(3, 'one two three', { messageId });
    const again = await wordcount(3, 'one two three', { messageId });
    expect(first.status.state).toBe('TASK_STATE_COMPLETED');
    expect(again.status.state).toBe('TASK_STATE_COMPLETED');
    expect(await balanceOf(payer)).toMatchObject({ spent: String(BigInt(start.spent) + 3n * UNIT_PRICE), held: '0' });
  });

  it('fails a call the balance cannot cover with the top-up it needs, and charges nothing', async () => {
    const broke = payerAccount(manifest, 4).address;
    const start = await balanceOf(broke);
    expect(BigInt(start.available) < UNIT_PRICE * MAX_UNITS).toBe(true);
    const task = await wordcount(4, 'hello there');
    expect(task.status.state).toBe('TASK_STATE_FAILED');
    expect(task.status.message.metadata['mp.prepaid.error']).toBe('insufficient_balance');
    expect(task.status.message.metadata['mp.prepaid.shortfall']).toEqual({
      available: start.available,
      required: String(UNIT_PRICE * MAX_UNITS),
      topUpNeeded: String(UNIT_PRICE * MAX_UNITS - BigInt(start.available)),
      topUpSkill: 'top-up',
    });
    expect(task.artifacts ?? []).toEqual([]);
    expect(await balanceOf(broke)).toEqual(start);
  });

  it('serves no call without a valid proof by the payer of this very message', async () => {
    const payer = payerAccount(manifest, 2).address;
    const start = await balanceOf(payer);
    const unsigned = await wordcount(2, 'no proof', { sign: false });
    expect(unsigned.status.message.metadata['mp.prepaid.error']).toBe('proof_required');
    const expired = await wordcount(2, 'old proof', { deadline: Math.floor(Date.now() / 1000) - 1 });
    expect(expired.status.message.metadata['mp.prepaid.error']).toBe('proof_invalid');
    // a proof signed for another message does not pay for this one
    const account = payerAccount(manifest, 2);
    const deadline = String(Math.floor(Date.now() / 1000) + 60);
    const signature = await account.signMessage({ message: spendMessage('a2a:wordcount', 'another-message', deadline) });
    const { body } = await rpc(
      agent.url,
      'SendMessage',
      { message: { ...userMessage('wordcount on: stolen'), metadata: { 'mp.prepaid.proof': { payer: account.address, deadline, signature } } } },
      { 'a2a-extensions': '' },
    );
    expect(body.result.task.status.message.metadata['mp.prepaid.error']).toBe('proof_invalid');
    // worded for a prepaid balance: no subscription is involved
    const said = JSON.stringify(body.result.task.status.message.parts);
    expect(said).toContain(`is not by the payer ${account.address.toLowerCase()}`);
    expect(said).not.toMatch(/subscription/);
    expect(await balanceOf(payer)).toEqual(start);
  });

  it('never overdraws under concurrent calls: each one served was paid for', async () => {
    const payer = payerAccount(manifest, 5).address;
    await topUp(5);
    const start = await balanceOf(payer);
    // each call holds the most a call may cost (50 units): the balance covers only so many at once
    const tasks = await Promise.all(Array.from({ length: 12 }, (_, i) => wordcount(5, `call ${i} of many`)));
    const served = tasks.filter((t) => t.status.state === 'TASK_STATE_COMPLETED');
    const refused = tasks.filter((t) => t.status.state === 'TASK_STATE_FAILED');
    expect(served.length + refused.length).toBe(12);
    expect(refused.every((t) => t.status.message.metadata['mp.prepaid.error'] === 'insufficient_balance')).toBe(true);
    const end = await balanceOf(payer);
    expect(BigInt(end.spent) - BigInt(start.spent)).toBe(BigInt(served.length) * 4n * UNIT_PRICE);
    expect(BigInt(end.available) >= 0n).toBe(true);
    expect(end.held).toBe('0');
  });

  it('credits a top-up whose ledger answer was lost once, when the agent asks again, and completes the task', async () => {
    const payer = payerAccount(manifest, 6).address;
    const start = await balanceOf(payer);
    ledgerProxy.set('swallow');
    const bought = await topUp(6, lossyAgent);
    // paid on chain, the credit's answer lost: the task waits, nothing is delivered yet
    expect(bought.outcome).toBe('TASK_STATE_WORKING');
    expect(bought.taskId).toBeDefined();
    ledgerProxy.set('pass');
    const completed = await vi.waitFor(
      async () => {
        const { body } = await rpc(lossyAgent.url, 'GetTask', { id: bought.taskId });
        expect(body.result.status.state).toBe('TASK_STATE_COMPLETED');
        return body.result;
      },
      { timeout: 20_000, interval: 300 },
    );
    expect(completed.artifacts[0].parts[0].data).toMatchObject({ deposited: String(BigInt(start.deposited) + TOP_UP) });
    // credited once, though the ledger was asked twice
    expect(await balanceOf(payer)).toMatchObject({ deposited: String(BigInt(start.deposited) + TOP_UP) });
  });

  describe('the metered MCP tool', () => {
    const callTool = async (args: Record<string, unknown>, id = 1) => {
      const response = await fetch(`${agent.url}/mcp`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wordcount', arguments: args } }),
      });
      return (await response.json()) as { result?: any; error?: { code: number; message: string; data?: any } };
    };
    const signedCall = async (payerIndex: number, text: string, callId = randomUUID()) => {
      const account = payerAccount(manifest, payerIndex);
      const deadline = String(Math.floor(Date.now() / 1000) + 60);
      const signature = await account.signMessage({ message: spendMessage('mcp:tools/wordcount', callId, deadline) });
      return { text, payer: account.address, callId, deadline, signature };
    };

    it('draws each signed call from the balance once, and answers a short balance with -32042 and the shortfall', async () => {
      const payer = payerAccount(manifest, 7).address;
      const broke = await callTool(await signedCall(7, 'nothing yet'));
      expect(broke.error).toMatchObject({
        code: -32042,
        data: { httpStatus: 402, shortfall: { available: '0', topUpNeeded: String(UNIT_PRICE * MAX_UNITS) } },
      });

      await topUp(7);
      const args = await signedCall(7, 'metered words over mcp');
      const first = await callTool(args);
      expect(JSON.parse(first.result.content[0].text)).toEqual({ words: 4 });
      expect(first.result._meta['mp/prepaid-receipt']).toEqual({
        payer: payer.toLowerCase(),
        units: 4,
        unitPrice: String(UNIT_PRICE),
        charged: String(4n * UNIT_PRICE),
        available: String(TOP_UP - 4n * UNIT_PRICE),
      });
      const again = await callTool(args, 2);
      expect(again.result._meta['mp/prepaid-receipt'].charged).toBe(String(4n * UNIT_PRICE));
      expect(await balanceOf(payer)).toMatchObject({ spent: String(4n * UNIT_PRICE), held: '0' });

      const forged = { ...(await signedCall(7, 'someone else')), callId: 'not-the-signed-one' };
      expect((await callTool(forged)).error).toMatchObject({ code: -32602 });
      expect(await balanceOf(payer)).toMatchObject({ spent: String(4n * UNIT_PRICE) });
    });
  });
});
