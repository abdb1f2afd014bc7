import type { Server } from 'node:http';
import { randomBytes, randomUUID } from 'node:crypto';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { toClientEvmSigner } from '@x402/evm';
import { BatchSettlementEvmScheme as BatchClientScheme } from '@x402/evm/batch-settlement/client';
import { BatchSettlementEvmScheme as BatchServerScheme } from '@x402/evm/batch-settlement/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { createWalletClient, defineChain, http, toHex, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { batchSettlementAbi } from '@mp/chain';
import { channelAccountId } from '@mp/ledger';
import type { ReconRowJson } from '@mp/reconciliation';
import { BATCH_SETTLEMENT_ADDRESS, channelIdOf } from '@mp/x402';
import { channelEventMessageOf, type ChannelEventRow } from '../apps/facilitator/src/sessions/channel-events.relay';
import { ChannelEventsPublisher } from '../apps/ledger/test/support/channel-world';
import { deriveAccounts } from '../scripts/lib/deploy.mjs';
import { testChain } from './support/chain';
import { startFacilitator, postJson, type RunningFacilitator } from './support/facilitator';
import { call } from './support/http';
import { startLedger, type RunningLedger } from './support/ledger-app';
import { createMerchant, type TestMerchant } from './support/merchants';
import { until } from './support/webhook-receiver';

/**
 * x402 batch-settlement channels in the one channel ledger model, over the real pipeline: the official @x402/evm
 * client and server against our facilitator (with the merchant's key) and contracts on anvil; each operation's outcome
 * writes its channel events into the facilitator's outbox in the same transaction, the relay publishes them on
 * BullMQ, the ledger books them on the channel's seven accounts and `GET /channels/{id}` reads them back; a replay books
 * nothing twice; reconciliation matches the books against the contract's channels and receivers, clean, and then
 * shows the breaks of a refund made on chain without the books, a tampered book, and a channel the books never had.
 */
describe('x402 batch-settlement channels booked and reconciled', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const network = manifest.network as `${string}:${string}`;
  const PRICE = 1000n;
  const [sender, authorizer] = deriveAccounts(18).slice(16);
  const payer = privateKeyToAccount(manifest.accounts.payers[6].privateKey as Hex);
  // a receiver of this spec alone: no other spec's channels are its
  const receiver = privateKeyToAccount(generatePrivateKey()).address;
  const salt = toHex(randomBytes(32));
  const queuePrefix = `mp:test-batch-books-${randomUUID().slice(0, 8)}`;
  const period = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 10 * 60_000) };
  const config = {
    payer: payer.address,
    payerAuthorizer: payer.address,
    receiver,
    receiverAuthorizer: authorizer.address,
    token: usdc.address as Address,
    withdrawDelay: 900,
    salt,
  };
  const channelId = channelIdOf(config, manifest.chainId).toLowerCase();

  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchant: TestMerchant;
  let server: Server;
  let url: string;
  let serverScheme: BatchServerScheme;
  let facilitatorClient: HTTPFacilitatorClient;

  const onChain = async (id: string = channelId) => {
    const [balance, totalClaimed] = await client.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'channels',
      args: [id as Hex],
    });
    return { balance, totalClaimed };
  };
  const api = (method: 'GET' | 'POST', path: string, body?: unknown) =>
    call(`${ledger.url}${path}`, { method, key: merchant.apiKey, ...(body !== undefined && { body }) });
  const booked = (expected: Record<string, string>) =>
    until(
      'the batch channel booked',
      async () => {
        const answer = await api('GET', `/channels/${channelId}`);
        return answer.status === 200 && Object.entries(expected).every(([k, v]) => answer.body[k] === v) ? answer.body : undefined;
      },
      30_000,
    );
  const reconcile = async () => {
    const started = await api('POST', '/reconciliations', { from: period.from.toISOString(), to: period.to.toISOString() });
    expect(started.status).toBe(202);
    return until(
      'the run finished',
      async () => {
        const run = await api('GET', `/reconciliations/${started.body.id}`);
        return run.body.status === 'completed' || run.body.status === 'failed' ? run.body : undefined;
      },
      60_000,
    );
  };
  const breaksOf = async (runId: string): Promise<ReconRowJson[]> => (await api('GET', `/reconciliations/${runId}/rows?kind=breaks`)).body.data;
  const channelTransfers = async () =>
    (
      await ledger.db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM ledger.transfers WHERE merchant_id = $1::uuid AND code BETWEEN 10 AND 14`,
        merchant.merchantId,
      )
    )[0].n;
  const outbox = (id: string = channelId) =>
    ledger.db.$queryRawUnsafe<ChannelEventRow[]>(
      `SELECT id::text AS "eventId", channel_id AS "channelId", type, data, snapshot, created_at AS "occurredAt"
         FROM facilitator.channel_events WHERE channel_id = $1 ORDER BY id`,
      id,
    );

  beforeAll(async () => {
    merchant = createMerchant('batch channel books', undefined, { receivingAddresses: [`${network}:${receiver}`] });
    facilitator = await startFacilitator({
      BATCH_SETTLEMENT_SENDER_KEY: sender.privateKey,
      BATCH_SETTLEMENT_AUTHORIZER_KEY: authorizer.privateKey,
      OUTBOX_POLL_MS: '20',
      QUEUE_PREFIX: queuePrefix,
    });
    ledger = await startLedger({
      LEDGER_INGEST: 'true',
      FACILITATOR_URL: facilitator.url,
      QUEUE_PREFIX: queuePrefix,
      RECON_CHAIN_RPC_URLS: `${network}=${manifest.rpcUrl}`,
      RECON_PENDING_WINDOW_MS: '0',
      RECON_BATCH_SETTLEMENT_CONTRACTS: `${network}=${BATCH_SETTLEMENT_ADDRESS}`,
    });
    const auth = { authorization: `Bearer ${merchant.apiKey}` };
    facilitatorClient = new HTTPFacilitatorClient({ url: facilitator.url, createAuthHeaders: async () => ({ verify: auth, settle: auth, supported: {} }) });
    serverScheme = new BatchServerScheme(receiver, { withdrawDelay: 900 });
    const resourceServer = new x402ResourceServer(facilitatorClient).register(network, serverScheme);
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /metered': {
            accepts: {
              scheme: 'batch-settlement',
              network,
              payTo: receiver,
              price: { amount: PRICE.toString(), asset: usdc.address, extra: { name: usdc.name, version: usdc.version } },
              maxTimeoutSeconds: 120,
            },
            description: 'one metered call',
          },
        },
        resourceServer,
      ),
    );
    app.get('/metered', (_req, res) => {
      res.json({ ok: true });
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/metered`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await ledger?.close();
    await facilitator?.close();
  });

  it('books deposit, claims, settle and a partial refund on the channel, once, and reconciles clean', async () => {
    const scheme = new BatchClientScheme(toClientEvmSigner(payer, client as never), { salt } as never);
    const buyer = wrapFetchWithPayment(
      fetch,
      new x402Client().register(network, scheme).setSpendControls({ allowedAssets: [{ network, asset: usdc.address, maxAmountPerPayment: '100000' }] }),
    );
    // a deposit, then vouchers; the server's manager claims them all and settles to the receiver
    for (let i = 0; i < 4; i++) expect((await buyer(url)).status).toBe(200);
    const deposit = (await onChain()).balance;
    expect(deposit).toBeGreaterThanOrEqual(10n * PRICE);
    await serverScheme.createChannelManager(facilitatorClient, network, usdc.address).claimAndSettle();
    expect(await onChain()).toEqual({ balance: deposit, totalClaimed: 4n * PRICE });
    // one more paid call, then a partial refund: the server claims what is unclaimed in the same transaction
    expect((await buyer(url)).status).toBe(200);
    expect(await scheme.refund(url, { amount: '3000' })).toMatchObject({ success: true });
    const after = await onChain();
    expect(after.balance).toBe(deposit - 3000n);
    const claimed = after.totalClaimed;
    expect(claimed).toBeGreaterThanOrEqual(4n * PRICE);

    // the outbox holds every event once the refund is answered (written with its outcome); booked once the last one is
    const events = await outbox();
    const books = await booked({ lastEventId: events.at(-1)!.eventId });
    expect(books).toMatchObject({
      scheme: 'x402-batch',
      network,
      escrow: BATCH_SETTLEMENT_ADDRESS.toLowerCase(),
      asset: `${network}/${usdc.address.toLowerCase()}`,
      payer: payer.address.toLowerCase(),
      payee: receiver.toLowerCase(),
      state: 'open',
      deposit: deposit.toString(),
      accepted: claimed.toString(),
      spent: claimed.toString(),
      settled: (4n * PRICE).toString(),
      refunded: '3000',
      held: (deposit - 4n * PRICE - 3000n).toString(),
      unspent: '0',
    });
    // the outbox: every change an event, in order, from the receipts
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['channel.opened', 'channel.voucher_accepted', 'channel.spent', 'channel.settled']);
    expect(types.at(-1)).toBe('channel.refunded');
    expect(events.at(-1)!.data).toMatchObject({ by: 'refund', amount: '3000', refunded: '3000' });
    expect(events.at(-1)!.snapshot).toMatchObject({ scheme: 'x402-batch', refunded: '3000', settled: '4000', deposit: deposit.toString() });
    const row = await ledger.db.batchChannel.findUniqueOrThrow({ where: { channelId } });
    expect(row).toMatchObject({ merchantId: merchant.merchantId, receiver: receiver.toLowerCase() });
    expect(row.claimed.toString()).toBe(claimed.toString());

    // a replay of every event under new job ids books nothing twice
    const transfers = await channelTransfers();
    const publisher = new ChannelEventsPublisher(ledger.config.redisUrl, queuePrefix);
    try {
      const replayIds: string[] = [];
      for (const event of events) {
        const parsed = channelEventMessageOf(event);
        if (!parsed.ok) throw new Error(parsed.reason);
        const jobId = `replay-${randomUUID()}`;
        replayIds.push(jobId);
        await publisher.publishRaw(jobId, parsed.message);
      }
      await until('the replays consumed', async () => {
        const states = await Promise.all(replayIds.map(async (id) => (await publisher.queue.getJob(id))?.getState()));
        return states.every((s) => s === 'completed') ? true : undefined;
      });
    } finally {
      await publisher.close();
    }
    expect(await channelTransfers()).toBe(transfers);
    expect((await api('GET', `/channels/${channelId}`)).body).toEqual(books);

    const run = await reconcile();
    expect(run).toMatchObject({ status: 'completed', error: null });
    expect(await breaksOf(run.id)).toEqual([]);
    expect(run.summary).toMatchObject({ breaks: 0, checked: { channels: 1 } });
  });

  it('shows a refund made on chain without the books, a tampered book, and a batch channel the books never had', async () => {
    // the receiverAuthorizer refunds 1000 of the unclaimed deposit directly on the contract
    const chain = defineChain({
      id: manifest.chainId,
      name: 'anvil',
      nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
      rpcUrls: { default: { http: [manifest.rpcUrl] } },
    });
    const wallet = createWalletClient({ account: privateKeyToAccount(authorizer.privateKey as Hex), chain, transport: http(manifest.rpcUrl) });
    const before = await onChain();
    const hash = await wallet.writeContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'refund',
      args: [{ ...config, payer: config.payer, token: config.token }, 1000n],
    });
    expect((await client.waitForTransactionReceipt({ hash })).status).toBe('success');
    // the books' claimed raised by 7 outside any transfer
    await ledger.db.$executeRawUnsafe(
      `UPDATE ledger.accounts SET debits_posted = debits_posted + 7 WHERE merchant_id = $1::uuid AND id = $2::uuid`,
      merchant.merchantId,
      channelAccountId(channelId, 'channelAccepted'),
    );
    // a channel to the merchant's receiver deposited through the facilitator in open mode (no merchant's key): no books
    const stranger = new BatchClientScheme(toClientEvmSigner(payer, client as never), { salt: toHex(randomBytes(32)) } as never);
    const requirements = {
      scheme: 'batch-settlement',
      network,
      amount: PRICE.toString(),
      asset: usdc.address,
      payTo: receiver,
      maxTimeoutSeconds: 120,
      extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: usdc.name, version: usdc.version, minDeposit: '5000' },
    };
    const created = await stranger.createPaymentPayload(2, requirements as never);
    const opened = await postJson(`${facilitator.url}/settle`, {
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: requirements, payload: created.payload },
      paymentRequirements: requirements,
    });
    expect(opened.body).toMatchObject({ success: true });
    const unknownId = (created.payload as { voucher: { channelId: string } }).voucher.channelId.toLowerCase();
    // written to the outbox all the same, for no merchant's books
    expect((await outbox(unknownId)).map((e) => [e.type, (e.snapshot as { merchantId: string | null }).merchantId])).toEqual([['channel.opened', null]]);

    const run = await reconcile();
    expect(run).toMatchObject({ status: 'completed', error: null });
    const found = (await breaksOf(run.id)).map((b) => ({ kind: b.kind, reference: b.reference, expected: b.expected, actual: b.actual }));
    expect(found).toHaveLength(3);
    expect(found).toEqual(
      expect.arrayContaining([
        {
          kind: 'channel_deposit_mismatch',
          reference: channelId,
          expected: before.balance.toString(),
          actual: (before.balance - 1000n).toString(),
        },
        { kind: 'channel_claimed_mismatch', reference: channelId, expected: (before.totalClaimed + 7n).toString(), actual: before.totalClaimed.toString() },
        { kind: 'channel_unknown_to_books', reference: unknownId, expected: '0', actual: '5000' },
      ]),
    );
  });
});
