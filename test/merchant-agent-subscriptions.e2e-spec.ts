import { randomBytes, randomUUID } from 'node:crypto';
import { Role, TaskState, type Message, type Task } from '@a2a-js/sdk';
import { ClientFactory, type Client } from '@a2a-js/sdk/client';
import type { INestApplication } from '@nestjs/common';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Test } from '@nestjs/testing';
import { getAddress, type Address } from 'viem';
import { validate } from 'mppx/discovery';
import { ManualClock } from '@mp/billing';
import { decodeReceipt } from '@mp/mpp';
import { configureHttpApp } from '@mp/platform';
import { RenewalScheduler } from '../apps/ledger/src/billing/renewal.scheduler';
import { Clock } from '../apps/facilitator/src/x402/clock';
import { mountA2a } from '../apps/merchant-agent/src/a2a/mount-a2a';
import { AppModule as MerchantModule } from '../apps/merchant-agent/src/app.module';
import {
  evmSubscriptionChallenge,
  payerProofHeaderValue,
  subscribeCredential,
  subscriberProof,
  subscriptionStatusArgs,
} from '../apps/merchant-agent/src/buyer/subscription-buyer';
import { createMcpHandler } from '../apps/merchant-agent/src/mcp/mcp-handler';
import { loadMerchantConfig, type MerchantConfig } from '../apps/merchant-agent/src/merchant.config';
import { MPP_BRIEFING_RESOURCE, createSubscriptionPaywall } from '../apps/merchant-agent/src/subscriptions/subscription-paywall';
import { balanceOf, payerAccount } from './support/chain';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';
import { call } from './support/http';
import { until } from './support/webhook-receiver';
import { startLedger } from './support/ledger-app';
import { createMerchant } from './support/merchants';
import { freePort } from './support/net';
import { startOwnChain, type OwnChain } from './support/own-chain';

const DAY = 86_400;
const AMOUNT = 30_000n;
const PRODUCT = 'briefing';

/**
 * The merchant agent selling a subscription (issue 13): over MPP on GET /mpp/briefing and through the A2A `subscribe`
 * skill. Everything real: a chain of the spec's own (its clock moves), the facilitator activating and renewing, the
 * ledger learning of it from the facilitator's outbox and answering GET /entitlements, the queues between them.
 */
describe('merchant agent subscriptions: MPP route and A2A skill, entitlements from the ledger', () => {
  let chain: OwnChain;
  let facilitator: RunningFacilitator;
  let ledger: INestApplication;
  let ledgerUrl: string;
  let clock: ManualClock;
  let merchantKey: string;
  let agent: INestApplication;
  let agentUrl: string;
  let config: MerchantConfig;
  const planId = randomUUID();

  const syncClocks = async () => {
    const chainMs = (await chain.now()) * 1000;
    const offset = chainMs - Date.now();
    facilitator.app.get(Clock, { strict: false }).nowMs = () => Date.now() + offset;
    clock.set(new Date(chainMs));
  };

  const fromLedger = (path: string, body?: unknown) => call(`${ledgerUrl}${path}`, { key: merchantKey, ...(body !== undefined && { body }) });

  /** A proof signed now, good for a minute. */
  const proofOf = (payer: ReturnType<typeof payerAccount>, resource: string) => payerProofHeaderValue(payer, PRODUCT, resource);
  /** The buyer anchors its grant at the facilitator's clock (the chain's, which this spec moves). */
  const anchor = () => facilitator.app.get(Clock, { strict: false }).nowSeconds() - 2n;

  const briefing = (headers: Record<string, string> = {}) => fetch(`${agentUrl}/mpp/briefing`, { headers });

  beforeAll(async () => {
    chain = await startOwnChain(31_612);
    const recipient = getAddress(chain.manifest.accounts.merchant.address) as Address;
    const prefix = `mp:test-agentsub-${randomUUID().slice(0, 8)}`;
    const merchant = createMerchant('Merchant agent subscriptions', undefined, { receivingAddresses: [`${chain.manifest.network}:${recipient}`] });
    merchantKey = merchant.apiKey;
    facilitator = await startFacilitator({
      CHAIN_MANIFEST: chain.manifestPath,
      QUEUE_PREFIX: prefix,
      FACILITATOR_OPEN_MODE: 'false',
      SUBSCRIPTION_SEALING_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      OUTBOX_POLL_MS: '20',
      REVOCATION_POLL_MS: '600000',
      API_KEY_CACHE_MS: '0',
    });
    clock = new ManualClock(new Date());
    const running = await startLedger(
      { CHAIN_MANIFEST: chain.manifestPath, LEDGER_INGEST: 'true', FACILITATOR_URL: facilitator.url, QUEUE_PREFIX: prefix },
      { clock },
    );
    ledger = running.app;
    ledgerUrl = running.url;
    await syncClocks();

    const usdc = chain.manifest.tokens.usdc;
    const plan = await fromLedger('/plans', {
      id: planId,
      name: 'Daily briefing',
      product: PRODUCT,
      amount: String(AMOUNT),
      asset: `${chain.manifest.network}/${usdc.address.toLowerCase()}`,
      periodUnit: 'day',
      periodCount: 1,
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);

    const port = await freePort();
    config = loadMerchantConfig({
      ...process.env,
      MERCHANT_PORT: String(port),
      CHAIN_MANIFEST: chain.manifestPath,
      FACILITATOR_URL: facilitator.url,
      FACILITATOR_API_KEY: merchantKey,
      LEDGER_URL: ledgerUrl,
      MERCHANT_SUBSCRIPTION_PLAN_ID: planId,
      MERCHANT_SUBSCRIPTION_PRODUCT: PRODUCT,
      MERCHANT_SUBSCRIPTION_AMOUNT: String(AMOUNT),
      MERCHANT_SUBSCRIPTION_PERIOD_UNIT: 'day',
      MERCHANT_SUBSCRIPTION_PERIOD_COUNT: '1',
      MERCHANT_SUBSCRIPTION_TERM_PERIODS: '3',
      MERCHANT_SUBSCRIPTION_SKILLS: 'forecast',
    });
    const agentRef = await Test.createTestingModule({ imports: [MerchantModule.forConfig(config)] }).compile();
    agent = agentRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    mountA2a(agent);
    configureHttpApp(agent);
    agent.use('/mcp', createMcpHandler(config));
    agent.use(createSubscriptionPaywall(config));
    await agent.listen(port, '127.0.0.1');
    agentUrl = `http://127.0.0.1:${port}`;
  });

  /** A proof deadline by the ledger's clock (the chain's, a day ahead of the wall clock once the spec moves it). */
  const ledgerDeadline = () => String(Math.floor(clock.now().getTime() / 1000) + 60);
  const mcpClients: McpClient[] = [];
  /** An MCP client of the merchant agent (the buyer's: no key) or of the ledger (the merchant's API key). */
  const mcp = async (url: string, key?: string) => {
    const client = new McpClient({ name: 'agentsub-e2e', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL('/mcp', url), key ? { requestInit: { headers: { authorization: `Bearer ${key}` } } } : {}));
    mcpClients.push(client);
    return client;
  };
  const toolJson = async (client: McpClient, name: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name, arguments: args });
    return JSON.parse((result.content as { text: string }[])[0]!.text);
  };

  afterAll(async () => {
    await Promise.all(mcpClients.map((c) => c.close()));
    await agent?.close();
    await ledger?.close();
    await facilitator?.close();
    await chain?.stop();
  });

  it('publishes the subscription offer in the discovery document, and a subscription without a ledger is a config error', async () => {
    const document = (await (await fetch(`${agentUrl}/openapi.json`)).json()) as any;
    expect(validate(document).filter((e) => e.severity === 'error')).toEqual([]);
    expect(document.paths['/mpp/briefing'].get['x-payment-info'].offers).toEqual([
      expect.objectContaining({ intent: 'subscription', method: 'evm', amount: String(AMOUNT), currency: chain.manifest.tokens.usdc.address }),
    ]);
    expect(() => loadMerchantConfig({ CHAIN_MANIFEST: chain.manifestPath, MERCHANT_SUBSCRIPTION_PLAN_ID: planId })).toThrow(
      /LEDGER_URL: required[\s\S]*FACILITATOR_API_KEY: required/,
    );
    expect(() => loadMerchantConfig({ CHAIN_MANIFEST: chain.manifestPath, MERCHANT_SUBSCRIPTION_PLAN_ID: 'plan-1' })).toThrow(/MERCHANT_SUBSCRIPTION_PLAN_ID/);
  });

  it('A2A: subscribes through input-required with the official client, then the covered skill completes without per-call payment', async () => {
    const usdc = chain.manifest.tokens.usdc;
    const recipient = getAddress(chain.manifest.accounts.merchant.address) as Address;
    const payer = payerAccount(chain.manifest, 3);
    const client: Client = await new ClientFactory().createFromUrl(agentUrl);
    const message = (text: string, fields: Partial<Message> = {}): Message => ({
      messageId: randomUUID(),
      taskId: '',
      contextId: '',
      role: Role.ROLE_USER,
      parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
      ...fields,
    });
    // no x402 extension activated: a subscriber needs none
    const send = (m: Message) => client.sendMessage({ tenant: '', message: m, configuration: undefined, metadata: undefined }) as Promise<Task>;
    const forecastAsSubscriber = async () =>
      send(message('forecast Porto', { metadata: { 'mpp.subscription.proof': await subscriberProof(payer, PRODUCT, 'a2a:forecast') } }));
    const statusText = (task: Task) => (task.status?.message?.parts[0]?.content as { value: string } | undefined)?.value ?? '';

    // The card lists the subscribe skill; not yet a subscriber, the covered skill is refused (no x402 to pay per call).
    const card = await client.getAgentCard();
    expect(card.skills.map((skill) => skill.id)).toContain('subscribe');
    const early = await forecastAsSubscriber();
    expect(early.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(early)).toMatch(/not entitled to briefing \(no_subscription\)/);

    // subscribe: input-required with the subscription challenge, bound to the task.
    const offered = await send(message('subscribe'));
    expect(offered.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    const required = offered.status?.message?.metadata?.['mpp.payment.required'] as { challenges: any[] };
    expect(required.challenges).toHaveLength(1);
    const [challenge] = required.challenges;
    expect(challenge).toMatchObject({ method: 'evm', intent: 'subscription', request: { amount: String(AMOUNT), periodUnit: 'day' } });
    const credential = await subscribeCredential(challenge, payer, { anchorSeconds: anchor() });

    // The buyer answers on the task; it completes with the receipt carrying the subscriptionId.
    const before = await balanceOf(chain.client, usdc, recipient);
    const answer = (task: Task, value: string) =>
      send(message('Here is the credential.', { taskId: task.id, contextId: task.contextId, metadata: { 'mpp.payment.credential': value } }));
    const done = await answer(offered, credential);
    expect(done.status?.state, statusText(done)).toBe(TaskState.TASK_STATE_COMPLETED);
    const receipt = done.status?.message?.metadata?.['mpp.payment.receipt'] as { subscriptionId: string; method: string };
    expect(receipt).toMatchObject({ method: 'evm', subscriptionId: expect.any(String) });
    expect(done.artifacts[0]?.parts[0]?.content).toMatchObject({ $case: 'data', value: { subscriptionId: receipt.subscriptionId, product: PRODUCT } });
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + AMOUNT);
    await syncClocks(); // the ledger's clock to the block of period 0

    // The same credential on another subscribe task is refused (the challenge is bound to its task): no second subscription.
    const other = await send(message('subscribe'));
    const refused = await answer(other, credential);
    expect(refused.status?.state).toBe(TaskState.TASK_STATE_INPUT_REQUIRED);
    expect(refused.status?.message?.metadata?.['mpp.payment.error']).toBe('https://paymentauth.org/problems/invalid-challenge');

    // Once the ledger has period 0 paid, forecast completes for the proven subscriber without payment.
    const served = await until('the ledger to entitle the subscriber', async () => {
      const task = await forecastAsSubscriber();
      return task.status?.state === TaskState.TASK_STATE_COMPLETED ? task : undefined;
    });
    expect(served.status?.message?.metadata?.['mpp.subscription']).toMatchObject({
      subscriptionId: receipt.subscriptionId,
      payer: payer.address.toLowerCase(),
    });
    expect(served.artifacts[0]?.parts[0]?.content).toMatchObject({ $case: 'data', value: { location: 'Porto' } });
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + AMOUNT);

    // Another signer claiming this payer is not served; after the merchant cancels, neither is the payer.
    const stranger = payerAccount(chain.manifest, 4);
    const forged = { ...(await subscriberProof(stranger, PRODUCT, 'a2a:forecast')), payer: payer.address };
    const forgedTask = await send(message('forecast Porto', { metadata: { 'mpp.subscription.proof': forged } }));
    expect(forgedTask.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    const canceled = await fromLedger(`/subscriptions/${receipt.subscriptionId}/cancel`, { at: 'immediately' });
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    const after = await forecastAsSubscriber();
    expect(after.status?.state).toBe(TaskState.TASK_STATE_FAILED);
    expect(statusText(after)).toMatch(/\(canceled\)/);
  });

  it('subscribes over MPP, serves the proven payer free while entitled, 409 while a renewal is unpaid, 402 after the cancel', async () => {
    const usdc = chain.manifest.tokens.usdc;
    const payer = payerAccount(chain.manifest, 1);
    const recipient = getAddress(chain.manifest.accounts.merchant.address) as Address;
    const before = await balanceOf(chain.client, usdc, recipient);

    // No credential: 402 with one subscription challenge carrying the plan's terms.
    const unpaid = await briefing();
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get('cache-control')).toBe('no-store');
    const challenge = evmSubscriptionChallenge([unpaid.headers.get('www-authenticate')!]);
    expect(challenge).toMatchObject({ intent: 'subscription', method: 'evm' });
    expect(challenge.request).toMatchObject({ amount: String(AMOUNT), currency: usdc.address, periodUnit: 'day', periodCount: '1', recipient });

    // The credential activates it: period 0 settled on chain, the receipt names the subscription.
    const subscribed = await briefing({ authorization: await subscribeCredential(challenge, payer, { anchorSeconds: anchor() }) });
    expect(subscribed.status, await subscribed.clone().text()).toBe(200);
    const receipt = decodeReceipt(subscribed.headers.get('payment-receipt')!);
    expect(receipt.ok && receipt.value).toMatchObject({ status: 'success', method: 'evm', subscriptionId: expect.any(String) });
    const subscriptionId = (receipt.ok && (receipt.value as { subscriptionId: string }).subscriptionId) as string;
    expect(await subscribed.json()).toMatchObject({ subscriptionId, items: expect.any(Array) });
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + AMOUNT);
    await syncClocks(); // the ledger's clock to the block of period 0

    // Later requests: the payer proves itself and is served without paying, once the ledger has the period paid.
    const served = await until('the ledger to entitle the payer', async () => {
      const response = await briefing({ 'payer-proof': await proofOf(payer, MPP_BRIEFING_RESOURCE) });
      return response.status === 200 ? response : undefined;
    });
    expect(served.headers.get('payment-receipt')).toBeNull();
    expect(await served.json()).toMatchObject({ subscriptionId, payer: payer.address.toLowerCase() });
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + AMOUNT);

    // A proof is no claim: another signer's signature, another resource, or a payer with no subscription get a challenge.
    const stranger = payerAccount(chain.manifest, 2);
    const forged = (await proofOf(stranger, MPP_BRIEFING_RESOURCE)).replace(/payer="0x[0-9a-fA-F]+"/, `payer="${payer.address}"`);
    const refused = await briefing({ 'payer-proof': forged });
    expect(refused.status).toBe(402);
    expect(refused.headers.get('www-authenticate')).toContain('intent="subscription"');
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/not the subscription's payer's/);
    expect((await briefing({ 'payer-proof': await proofOf(payer, 'GET /mpp/elsewhere') })).status).toBe(402);
    const notSubscribed = await briefing({ 'payer-proof': await proofOf(stranger, MPP_BRIEFING_RESOURCE) });
    expect(notSubscribed.status).toBe(402);
    expect(((await notSubscribed.json()) as { detail: string }).detail).toMatch(/not entitled to briefing \(no_subscription\)/);
    expect((await briefing({ 'payer-proof': 'payer="nope"' })).status).toBe(402);

    // A day later by the chain, period 1 is due and not yet paid: 409 Retry-After: 1; once renewed, served again.
    await chain.increaseTime(DAY);
    await syncClocks();
    const inFlight = await briefing({ 'payer-proof': await proofOf(payer, MPP_BRIEFING_RESOURCE) });
    expect(inFlight.status).toBe(409);
    expect(inFlight.headers.get('retry-after')).toBe('1');
    await ledger.get(RenewalScheduler).runDue(clock.now());
    await until('the renewal to be booked', async () => {
      const response = await briefing({ 'payer-proof': await proofOf(payer, MPP_BRIEFING_RESOURCE) });
      return response.status === 200 ? true : undefined;
    });
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 2n * AMOUNT);

    // MCP subscription_status: the buyer's (on the merchant agent, with its payer signature) and the merchant's (ledger).
    const buyerMcp = await mcp(agentUrl);
    expect((await buyerMcp.listTools()).tools.map((t) => t.name)).toContain('subscription_status');
    expect(await toolJson(buyerMcp, 'subscription_status', await subscriptionStatusArgs(payer, subscriptionId, ledgerDeadline()))).toMatchObject({
      id: subscriptionId,
      state: 'active',
      lastPaidIndex: 1,
      entitled: true,
    });
    await expect(
      buyerMcp.callTool({ name: 'subscription_status', arguments: await subscriptionStatusArgs(stranger, subscriptionId, ledgerDeadline()) }),
    ).rejects.toThrow(/payer's/);
    const merchantMcp = await mcp(ledgerUrl, merchantKey);
    expect(await toolJson(merchantMcp, 'subscription_status', { subscriptionId })).toMatchObject({
      found: true,
      entitled: true,
      subscription: { id: subscriptionId, product: PRODUCT, state: 'active' },
    });
    expect(await toolJson(merchantMcp, 'subscription_status', { payer: payer.address, product: PRODUCT })).toMatchObject({
      entitled: true,
      subscriptionId,
      reason: 'paid_period',
      subscriptions: [{ id: subscriptionId }],
    });
    await expect(merchantMcp.callTool({ name: 'subscription_status', arguments: { payer: payer.address } })).rejects.toThrow(
      /subscriptionId, or payer and product/,
    );

    // The merchant cancels at once: the next request is 402 with a fresh challenge.
    const canceled = await fromLedger(`/subscriptions/${subscriptionId}/cancel`, { at: 'immediately' });
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    const after = await briefing({ 'payer-proof': await proofOf(payer, MPP_BRIEFING_RESOURCE) });
    expect(after.status).toBe(402);
    expect(after.headers.get('cache-control')).toBe('no-store');
    expect(after.headers.get('www-authenticate')).toContain('intent="subscription"');
    expect(((await after.json()) as { detail: string }).detail).toMatch(/canceled/);
    expect(await toolJson(buyerMcp, 'subscription_status', await subscriptionStatusArgs(payer, subscriptionId, ledgerDeadline()))).toMatchObject({
      state: 'canceled',
      entitled: false,
    });
    expect(await toolJson(merchantMcp, 'subscription_status', { subscriptionId })).toMatchObject({
      found: true,
      entitled: false,
      subscription: { state: 'canceled' },
    });
  });
});
