// MPP evm sessions after the credentials: the worker's scheduled settlement (by amount, by age), the escrow watch
// (requestClose → closing and settled within the grace, withdraw after it → closed), idle channels closed by us, and a
// close whose answer was lost settled once. Own chain: the grace period moves the chain's clock.
import { createWalletClient, erc20Abi, getAddress, http, type Address, type Hex, type PrivateKeyAccount } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { sessionEscrowAbi } from '@mp/chain';
import { EvmSessionChannelClient, type BuyerChannel } from '@mp/clients/evm-session';
import { PrismaService } from '@mp/db';
import { serializeCredential, type Challenge, type EvmSessionPayload } from '@mp/mpp';
import { postJson, proxiedNetworksFile, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startOwnChain, type OwnChain } from '../../../test/support/own-chain';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';
import { SessionSettlement } from '../src/sessions/session-settlement';
import { Clock } from '../src/x402/clock';

let chain: OwnChain;
let facilitator: RunningFacilitator;
let db: PrismaService;
let usdc: Address;
let escrow: Address;
let payee: Address;

const terms = () => ({
  realm: 'stream.example',
  offers: [
    { method: 'evm', intent: 'session', request: { amount: '10', currency: usdc, recipient: payee, methodDetails: { chainId: chain.manifest.chainId } } },
  ],
});

async function present(payload: EvmSessionPayload, source?: string, via: RunningFacilitator = facilitator) {
  const issued = await postJson(`${via.url}/mpp/challenges`, terms());
  const challenge: Challenge = issued.body.challenges[0];
  const credential = serializeCredential({ challenge, payload: payload as unknown as Record<string, unknown>, ...(source && { source }) });
  return postJson(`${via.url}/mpp/settle`, { credential, terms: terms() });
}

const wallet = (account: PrivateKeyAccount) => createWalletClient({ account, chain: chain.client.chain!, transport: http(chain.manifest.rpcUrl) });
const buyerOf = (index: number) => {
  const account = privateKeyToAccount(chain.manifest.accounts.payers[index]!.privateKey as Hex);
  return { account, client: new EvmSessionChannelClient(chain.client, { address: account.address, signer: account, wallet: wallet(account) }) };
};
const balance = (who: Address) => chain.client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [who] });
const onChain = (channelId: Hex) => chain.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channelId] });
const row = async (channelId: Hex) =>
  (
    await db.$queryRawUnsafe<{ state: string; settled: string; accepted: string }[]>(
      `SELECT state, settled_on_chain::text AS settled, accepted_cumulative::text AS accepted FROM facilitator.session_channels WHERE channel_id = $1`,
      channelId,
    )
  )[0]!;
const events = async (channelId: Hex) =>
  db.$queryRawUnsafe<{ type: string; data: Record<string, string> }[]>(
    `SELECT type, data FROM facilitator.channel_events WHERE channel_id = $1 ORDER BY id`,
    channelId,
  );

/**
 * Moves the chain's time and waits until the facilitator's clock (CLOCK_RPC_URL, refreshed every 250 ms) has followed:
 * a challenge issued on the old time and checked on the new one would be expired.
 */
async function increaseTime(seconds: number): Promise<void> {
  await chain.increaseTime(seconds);
  const chainNowMs = (await chain.now()) * 1000;
  await vi.waitFor(() => expect(facilitator.app.get(Clock, { strict: false }).nowMs()).toBeGreaterThanOrEqual(chainNowMs), { timeout: 5_000, interval: 25 });
}

/** One tick of the worker, as the schedule runs it (the schedule itself is off here, so each test decides when). */
const tick = () => facilitator.app.get(SessionSettlement).tick();

async function openWithVoucher(
  payerIndex: number,
  deposit: bigint,
  cumulative: bigint,
): Promise<{ client: EvmSessionChannelClient; channel: BuyerChannel; account: PrivateKeyAccount }> {
  const { account, client } = buyerOf(payerIndex);
  const issued = await postJson(`${facilitator.url}/mpp/challenges`, terms());
  const { channel, payload, source } = await client.openRelayed(EvmSessionChannelClient.parseRequest(issued.body.challenges[0].request), { deposit });
  expect((await present(payload, source)).status).toBe(200);
  if (cumulative > 0n) expect((await present(await client.voucher(channel, cumulative))).status).toBe(200);
  return { client, channel, account };
}

beforeAll(async () => {
  chain = await startOwnChain(31_718);
  usdc = getAddress(chain.manifest.tokens.usdc.address);
  escrow = getAddress(chain.manifest.contracts.sessionEscrow);
  payee = getAddress(chain.manifest.accounts.merchant.address);
  facilitator = await startFacilitator({
    CHAIN_MANIFEST: chain.manifestPath,
    CLOCK_RPC_URL: chain.manifest.rpcUrl,
    SESSION_SETTLE_MIN_AMOUNT: '500',
    SESSION_SETTLE_MAX_AGE_MS: '3600000',
    SESSION_SETTLE_POLL_MS: '0',
  });
  db = facilitator.app.get(PrismaService);
});

afterAll(async () => {
  await facilitator?.close();
  await chain?.stop();
});

describe('MPP evm session settlement, watch and idle close', () => {
  it('settles a channel once SESSION_SETTLE_MIN_AMOUNT is unsettled, and not before', async () => {
    const { client, channel } = await openWithVoucher(3, 1_000n, 400n);
    await tick();
    expect(await row(channel.channelId)).toMatchObject({ settled: '0', accepted: '400' });
    expect((await present(await client.voucher(channel, 600n))).status).toBe(200);
    const payeeBefore = await balance(payee);
    await tick();
    expect(await row(channel.channelId)).toMatchObject({ state: 'open', settled: '600' });
    expect(await onChain(channel.channelId)).toMatchObject({ settled: 600n, finalized: false });
    expect(await balance(payee)).toBe(payeeBefore + 600n);
    // settled once: another tick sends nothing
    await tick();
    expect(await db.sessionOperation.count({ where: { channelId: channel.channelId, kind: 'settle' } })).toBe(1);
    expect((await events(channel.channelId)).filter((e) => e.type === 'channel.settled')).toEqual([
      { type: 'channel.settled', data: expect.objectContaining({ delta: '600', settled: '600' }) },
    ]);
  });

  it('settles a channel whose oldest unsettled acceptance is older than SESSION_SETTLE_MAX_AGE_MS', async () => {
    const { channel } = await openWithVoucher(4, 1_000n, 100n);
    await tick();
    expect((await row(channel.channelId)).settled).toBe('0');
    // as if the voucher had been accepted two hours ago
    await db.$executeRawUnsafe(`UPDATE facilitator.session_channels SET unsettled_since = now() - interval '2 hours' WHERE channel_id = $1`, channel.channelId);
    await tick();
    expect((await row(channel.channelId)).settled).toBe('100');
    expect(await onChain(channel.channelId)).toMatchObject({ settled: 100n });
  });

  it('requestClose → closing and settled at once within the grace; withdraw after the grace → closed by withdraw', async () => {
    const { client, channel, account } = await openWithVoucher(5, 1_000n, 300n);
    expect((await postJson(`${facilitator.url}/mpp/sessions/charges`, { channelId: channel.channelId, amount: '200', chargeId: 'a' })).status).toBe(200);
    const { closeGraceEnd } = await client.requestClose(channel);
    await tick();
    expect(await row(channel.channelId)).toMatchObject({ state: 'closing', settled: '300' });
    expect(await onChain(channel.channelId)).toMatchObject({ settled: 300n, finalized: false });
    // no more charges or vouchers once the payer asked to close
    expect((await postJson(`${facilitator.url}/mpp/sessions/charges`, { channelId: channel.channelId, amount: '10', chargeId: 'b' })).status).toBe(410);
    expect((await present(await client.voucher(channel, 400n))).status).toBe(410);

    await increaseTime(Number(closeGraceEnd - BigInt(await chain.now())) + 1);
    const payerBefore = await balance(account.address);
    const withdrawn = await client.withdraw(channel);
    expect(withdrawn).toMatchObject({ settledToPayee: 300n, refundedToPayer: 700n });
    expect(await balance(account.address)).toBe(payerBefore + 700n);
    await tick();
    expect((await row(channel.channelId)).state).toBe('closed');
    const types = (await events(channel.channelId)).map((e) => e.type);
    expect(types).toEqual(['channel.opened', 'channel.voucher_accepted', 'channel.spent', 'channel.close_requested', 'channel.settled', 'channel.closed']);
    expect((await events(channel.channelId)).at(-1)).toMatchObject({ data: { by: 'withdraw', refunded: '700', settled: '300', txHash: withdrawn.hash } });
  });

  it('closes a channel idle for SESSION_IDLE_CLOSE_MS with its highest voucher', async () => {
    const { channel, account } = await openWithVoucher(6, 1_000n, 250n);
    await db.$executeRawUnsafe(`UPDATE facilitator.session_channels SET last_voucher_at = now() - interval '31 days' WHERE channel_id = $1`, channel.channelId);
    const payerBefore = await balance(account.address);
    await tick();
    expect(await row(channel.channelId)).toMatchObject({ state: 'closed', settled: '250' });
    expect(await onChain(channel.channelId)).toMatchObject({ finalized: true, settled: 250n });
    expect(await balance(account.address)).toBe(payerBefore + 750n);
    expect((await events(channel.channelId)).at(-1)).toMatchObject({ type: 'channel.closed', data: { by: 'close', refunded: '750' } });
  });
});

describe('MPP evm session transactions over an RPC that loses broadcast answers and lags on receipts', () => {
  let proxy: RpcProxy;
  let lossy: RunningFacilitator;

  beforeAll(async () => {
    proxy = await startRpcProxy(chain.manifest.rpcUrl);
    const file = proxiedNetworksFile(chain.manifest, { rpcUrl: proxy.url, signerKeyEnv: 'SESSION_LOST_SIGNER', label: 'session-lost', sessionEscrow: escrow });
    lossy = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: file,
      SESSION_LOST_SIGNER: chain.manifest.accounts.facilitatorSigners[0]!.privateKey,
      SESSION_PAYEE_KEYS: chain.manifest.accounts.merchant.privateKey,
      CLOCK_RPC_URL: chain.manifest.rpcUrl,
      RPC_TIMEOUT_MS: '300',
      SESSION_WAIT_MS: '20000',
      SESSION_SETTLE_POLL_MS: '0',
      FACILITATOR_ROLE: 'api',
    });
  });
  afterAll(async () => {
    await lossy?.close();
    await proxy?.close();
  });

  it('opens and closes once each, answering with the transactions that did it', async () => {
    proxy.set({ loseSendAnswers: true, receiptLagMs: 300 });
    const { account, client } = buyerOf(7);
    const issued = await postJson(`${lossy.url}/mpp/challenges`, terms());
    const { channel, payload, source } = await client.openRelayed(EvmSessionChannelClient.parseRequest(issued.body.challenges[0].request), { deposit: 1_000n });
    const [a, b] = await Promise.all([present(payload, source, lossy), present(payload, source, lossy)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect((await present(await client.voucher(channel, 400n), undefined, lossy)).status).toBe(200);
    expect((await postJson(`${lossy.url}/mpp/sessions/charges`, { channelId: channel.channelId, amount: '300', chargeId: 'lost-1' })).status).toBe(200);
    const payerBefore = await balance(account.address);
    const closePayload = await client.close(channel, { channelId: channel.channelId, spent: '300' });
    const [c, d] = await Promise.all([present(closePayload, undefined, lossy), present(closePayload, undefined, lossy)]);
    expect([c.status, d.status]).toEqual([200, 200]);
    expect(c.body.receipt.txHash).toBe(d.body.receipt.txHash);
    expect(proxy.stats.sendsLost).toBeGreaterThanOrEqual(2);
    expect(await onChain(channel.channelId)).toMatchObject({ finalized: true, settled: 300n });
    expect(await balance(account.address)).toBe(payerBefore + 700n);
    const operations = await db.sessionOperation.findMany({ where: { channelId: channel.channelId }, orderBy: { createdAt: 'asc' } });
    expect(operations.map((o) => [o.kind, o.status])).toEqual([
      ['open', 'succeeded'],
      ['close', 'succeeded'],
    ]);
    const closeReceipt = await chain.client.getTransactionReceipt({ hash: c.body.receipt.txHash });
    expect(closeReceipt.status).toBe('success');
  });
});

describe('the session-settlement job scheduler', () => {
  let scheduled: RunningFacilitator;

  beforeAll(async () => {
    // a queue prefix of its own: the other facilitators of the run (SESSION_SETTLE_POLL_MS 0) remove their schedule
    scheduled = await startFacilitator({
      CHAIN_MANIFEST: chain.manifestPath,
      CLOCK_RPC_URL: chain.manifest.rpcUrl,
      SESSION_SETTLE_MIN_AMOUNT: '500',
      SESSION_SETTLE_POLL_MS: '100',
      QUEUE_PREFIX: 'mp:test-session-schedule',
      // its relay would publish this run's outbox rows to its own prefix
      OUTBOX_PUBLISH: 'false',
    });
  });
  afterAll(() => scheduled?.close());

  it('settles a due channel on its own, once', async () => {
    const { channel } = await openWithVoucher(8, 1_000n, 700n);
    let settled = (await row(channel.channelId)).settled;
    for (let i = 0; settled !== '700' && i < 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      settled = (await row(channel.channelId)).settled;
    }
    expect(settled).toBe('700');
    expect(await onChain(channel.channelId)).toMatchObject({ settled: 700n });
    expect(await db.sessionOperation.count({ where: { channelId: channel.channelId, kind: 'settle' } })).toBe(1);
  });
});
