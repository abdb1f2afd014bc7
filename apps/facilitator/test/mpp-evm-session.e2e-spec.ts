// MPP evm `session` through the facilitator's HTTP API: the buyer (@mp/clients/evm-session) opens channels, tops
// up, signs vouchers and closes; the facilitator checks, books, charges and closes on chain. Own chain (the payee key
// is the manifest merchant's, and it sends transactions here).
import { Queue } from 'bullmq';
import Redis from 'ioredis';
import { createWalletClient, erc20Abi, getAddress, http, type Address, type Hex, type PrivateKeyAccount } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { sessionEscrowAbi } from '@mp/chain';
import { CHANNEL_EVENTS_QUEUE, channelEventJobId, parseChannelEventMessage } from '@mp/clients';
import { EvmSessionChannelClient } from '@mp/clients/evm-session';
import { PrismaService } from '@mp/db';
import { decodeReceipt, serializeCredential, type Challenge, type EvmSessionPayload } from '@mp/mpp';
import { channelEventMessageOf, type ChannelEventRow } from '../src/sessions/channel-events.relay';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startOwnChain, type OwnChain } from '../../../test/support/own-chain';

let chain: OwnChain;
let facilitator: RunningFacilitator;
let db: PrismaService;
let usdc: Address;
let escrow: Address;
let payee: Address;
/** channel events written before this run (earlier runs on the same database) are not this spec's, nor those of other chains */
let firstEventId: bigint;

const PRICE = '10';

const terms = (request: Record<string, unknown> = {}) => ({
  realm: 'stream.example',
  offers: [
    {
      method: 'evm',
      intent: 'session',
      request: { amount: PRICE, currency: usdc, recipient: payee, suggestedDeposit: '1000', methodDetails: { chainId: chain.manifest.chainId }, ...request },
    },
  ],
  opaque: { resource: 'GET /stream' },
});

async function challenge(request: Record<string, unknown> = {}): Promise<Challenge> {
  const issued = await postJson(`${facilitator.url}/mpp/challenges`, terms(request));
  expect(issued.status).toBe(201);
  return issued.body.challenges[0];
}

/** POSTs a session credential to /mpp/settle under a fresh challenge of the route, as the merchant relays it. */
async function present(payload: EvmSessionPayload | Record<string, unknown>, source?: string, request: Record<string, unknown> = {}) {
  const c = await challenge(request);
  const credential = serializeCredential({ challenge: c, payload: payload as Record<string, unknown>, ...(source && { source }) });
  return postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms(request) });
}

const charge = (channelId: string, amount: string, chargeId: string, units?: string) =>
  postJson(`${facilitator.url}/mpp/sessions/charges`, { channelId, amount, chargeId, ...(units && { units }) });

const wallet = (account: PrivateKeyAccount) => createWalletClient({ account, chain: chain.client.chain!, transport: http(chain.manifest.rpcUrl) });
const buyerOf = (index: number, voucherSigner?: PrivateKeyAccount) => {
  const account = privateKeyToAccount(chain.manifest.accounts.payers[index]!.privateKey as Hex);
  return { account, client: new EvmSessionChannelClient(chain.client, { address: account.address, signer: account, wallet: wallet(account) }, voucherSigner) };
};
const balance = (who: Address) => chain.client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [who] });
const onChain = (channelId: Hex) => chain.client.readContract({ address: escrow, abi: sessionEscrowAbi, functionName: 'getChannel', args: [channelId] });
const requestOf = (c: Challenge) => EvmSessionChannelClient.parseRequest(c.request);

/** The high-s twin of a low-s signature (s' = n − s, v flipped): the same signer, refused by the escrow and by us. */
function highS(signature: Hex): Hex {
  const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  const v = parseInt(signature.slice(130, 132), 16);
  return `${signature.slice(0, 66)}${(n - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
}

beforeAll(async () => {
  chain = await startOwnChain(31_717);
  usdc = getAddress(chain.manifest.tokens.usdc.address);
  escrow = getAddress(chain.manifest.contracts.sessionEscrow);
  payee = getAddress(chain.manifest.accounts.merchant.address);
  facilitator = await startFacilitator({
    CHAIN_MANIFEST: chain.manifestPath,
    CLOCK_RPC_URL: chain.manifest.rpcUrl,
    OUTBOX_POLL_MS: '20',
    // no scheduled settlement here: its balances are the close's alone (mpp-evm-session-settlement.e2e-spec.ts has the schedule)
    SESSION_SETTLE_POLL_MS: '0',
  });
  db = facilitator.app.get(PrismaService);
  const [last] = await db.$queryRawUnsafe<{ id: string | null }[]>(`SELECT max(id)::text AS id FROM facilitator.channel_events`);
  firstEventId = BigInt(last?.id ?? '0') + 1n;
});

afterAll(async () => {
  await facilitator?.close();
  await chain?.stop();
});

describe('MPP evm session through the facilitator', () => {
  it('issues session challenges with the escrow, the implemented credential types and minVoucherDelta filled in', async () => {
    const c = await challenge();
    expect(c).toMatchObject({
      method: 'evm',
      intent: 'session',
      request: {
        amount: PRICE,
        currency: usdc,
        recipient: payee,
        methodDetails: { chainId: chain.manifest.chainId, escrowContract: escrow, credentialTypes: ['authorization', 'hash'], minVoucherDelta: '0' },
      },
    });
    const supported = await fetch(`${facilitator.url}/mpp/supported`).then((r) => r.json() as Promise<{ methods: { method: string; intents: string[] }[] }>);
    expect(supported.methods.find((m) => m.method === 'evm')?.intents).toContain('session');
  });

  it('refuses at issuance a recipient whose payee key it does not hold, and permit2', async () => {
    const stranger = getAddress(chain.manifest.accounts.payers[0]!.address);
    const refused = await postJson(`${facilitator.url}/mpp/challenges`, terms({ recipient: stranger }));
    expect(refused.status).toBe(400);
    expect(refused.body.code).toBe('validation_failed');
    expect(refused.body.detail).toContain('SESSION_PAYEE_KEYS');
    const permit2 = await postJson(
      `${facilitator.url}/mpp/challenges`,
      terms({ methodDetails: { chainId: chain.manifest.chainId, credentialTypes: ['permit2', 'hash'] } }),
    );
    expect(permit2.status).toBe(400);
    expect(permit2.body.detail).toContain('permit2');
  });

  it('opens by hash, accepts vouchers in the spec order, charges before delivery and closes at spent with the refund on chain', async () => {
    const { account, client } = buyerOf(3);
    const c = await challenge();
    const { channel, payload, source } = await client.openDirect(requestOf(c), { deposit: 1_000n });
    const opened = await present(payload, source);
    expect(opened.status).toBe(200);
    expect(opened.body.receipt).toMatchObject({ method: 'evm', intent: 'session', channelId: channel.channelId, acceptedCumulative: '0', spent: '0' });
    expect(opened.body.payer).toBe(account.address);
    // the same open again: the same channel, nothing new
    expect((await present(payload, source)).status).toBe(200);

    // nothing accepted yet: the charge needs a voucher
    const need = await charge(channel.channelId, '100', 'c-1');
    expect(need.status).toBe(402);
    expect(need.body).toMatchObject({
      type: 'https://paymentauth.org/problems/session/insufficient-balance',
      channelId: channel.channelId,
      requiredCumulative: '100',
      acceptedCumulative: '0',
      deposit: '1000',
    });

    const v300 = await client.voucher(channel, 300n);
    const accepted = await present(v300);
    expect(accepted.status).toBe(200);
    expect(accepted.body.receipt).toMatchObject({ acceptedCumulative: '300', spent: '0' });
    expect(decodeReceipt(accepted.body.paymentReceipt)).toMatchObject({ ok: true, value: { acceptedCumulative: '300' } });

    // replayed and out of order: idempotent 200, nothing changes
    expect((await present(v300)).body.receipt.acceptedCumulative).toBe('300');
    const v200 = { ...v300, cumulativeAmount: '200', signature: await client.signVoucher(channel, 200n) };
    expect((await present(v200)).body.receipt.acceptedCumulative).toBe('300');
    // above the deposit, a wrong signer, a high-s twin: refused with their problem types
    const above = { ...v300, cumulativeAmount: '1001', signature: await client.signVoucher(channel, 1_001n) };
    expect(await present(above)).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/session/amount-exceeds-deposit' } });
    const other = buyerOf(4).client;
    const forged = { ...v300, cumulativeAmount: '400', signature: await other.signVoucher(channel, 400n) };
    expect(await present(forged)).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/session/signer-mismatch' } });
    const malleable = { ...v300, cumulativeAmount: '400', signature: highS(await client.signVoucher(channel, 400n)) };
    expect(await present(malleable)).toMatchObject({ status: 402, body: { type: 'https://paymentauth.org/problems/session/invalid-signature' } });
    // a broken payload: a 4xx naming the field, never a 500
    const broken = await present({ action: 'voucher', channelId: channel.channelId, cumulativeAmount: '-1', signature: '0x00' });
    expect(broken.status).toBeGreaterThanOrEqual(400);
    expect(broken.status).toBeLessThan(500);

    // charges: spent before delivery, a repeated chargeId charged once, exhaustion → need-voucher
    const first = await charge(channel.channelId, '100', 'c-1', '10');
    expect(first).toMatchObject({ status: 200, body: { charged: true, repeated: false, spent: '100', acceptedCumulative: '300', units: '10' } });
    expect((await charge(channel.channelId, '100', 'c-1', '10')).body).toMatchObject({ charged: true, repeated: true, spent: '100' });
    expect((await charge(channel.channelId, '150', 'c-1')).status).toBe(409);
    expect((await charge(channel.channelId, '150', 'c-2')).body.spent).toBe('250');
    expect(await charge(channel.channelId, '100', 'c-3')).toMatchObject({ status: 402, body: { requiredCumulative: '350', acceptedCumulative: '300' } });
    const view = await fetch(`${facilitator.url}/mpp/sessions/${channel.channelId}`).then((r) => r.json() as Promise<Record<string, unknown>>);
    expect(view).toMatchObject({ state: 'open', deposit: '1000', acceptedCumulative: '300', spent: '250', available: '50', settledOnChain: '0' });

    // a top-up by hash: counted once, then a voucher above the old deposit is accepted
    const topUp = await client.topUpDirect(channel, 500n);
    expect(await present(topUp, source)).toMatchObject({ status: 200 });
    expect(await present(topUp, source)).toMatchObject({ status: 200 });
    expect(await present({ ...topUp, additionalDeposit: '400' }, source)).toMatchObject({ status: 402 });
    expect((await present(await client.voucher(channel, 1_200n))).body.receipt.acceptedCumulative).toBe('1200');
    expect(await onChain(channel.channelId)).toMatchObject({ deposit: 1_500n });

    // close at spent: the payee gets 250, the payer 1250 back
    const payerBefore = await balance(account.address);
    const payeeBefore = await balance(payee);
    const closePayload = await client.close(channel, { channelId: channel.channelId, spent: '250' });
    const closed = await present(closePayload);
    expect(closed.status).toBe(200);
    expect(closed.body.receipt).toMatchObject({ spent: '250', txHash: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    expect(await balance(payee)).toBe(payeeBefore + 250n);
    expect(await balance(account.address)).toBe(payerBefore + 1_250n);
    expect(await onChain(channel.channelId)).toMatchObject({ finalized: true, settled: 250n });
    // the same close again: the same transaction; a charge after close: 410
    expect((await present(closePayload)).body.receipt.txHash).toBe(closed.body.receipt.txHash);
    expect((await charge(channel.channelId, '10', 'c-4')).status).toBe(410);
    expect(await present(await client.voucher(channel, 1_300n))).toMatchObject({ status: 410 });
  });

  it('opens and tops up by authorization (relayed once), and a close voucher below spent settles the highest accepted instead', async () => {
    const { account, client } = buyerOf(5);
    const c = await challenge();
    const { channel, payload, source } = await client.openRelayed(requestOf(c), { deposit: 500n });
    // the same credential twice at once: one openWithAuthorization
    const [a, b] = await Promise.all([present(payload, source), present(payload, source)]);
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(await onChain(channel.channelId)).toMatchObject({ payer: account.address, deposit: 500n });
    const opens = await db.sessionOperation.findMany({ where: { channelId: channel.channelId } });
    expect(opens).toHaveLength(1);
    expect(opens[0]).toMatchObject({ kind: 'open', status: 'succeeded' });

    const topUp = await client.topUpRelayed(channel, 500n);
    expect((await present(topUp)).status).toBe(200);
    channel.deposit += 500n;
    expect((await present(topUp)).status).toBe(200); // counted once
    expect(await onChain(channel.channelId)).toMatchObject({ deposit: 1_000n });
    expect((await fetch(`${facilitator.url}/mpp/sessions/${channel.channelId}`).then((r) => r.json() as Promise<{ deposit: string }>)).deposit).toBe('1000');

    expect((await present(await client.voucher(channel, 800n))).body.receipt.acceptedCumulative).toBe('800');
    expect((await charge(channel.channelId, '600', 'x-1')).status).toBe(200);
    const payerBefore = await balance(account.address);
    const payeeBefore = await balance(payee);
    // a close voucher below spent (600): refused as the close basis, the highest accepted (800) is settled
    const low = { action: 'close', channelId: channel.channelId, cumulativeAmount: '100', signature: await client.signVoucher(channel, 100n) };
    const closed = await present(low);
    expect(closed.status).toBe(200);
    expect(await balance(payee)).toBe(payeeBefore + 800n);
    expect(await balance(account.address)).toBe(payerBefore + 200n);
    expect(await onChain(channel.channelId)).toMatchObject({ finalized: true, settled: 800n });
  });

  it('never overspends under concurrent charges', async () => {
    const { client } = buyerOf(6);
    const c = await challenge();
    const { channel, payload, source } = await client.openRelayed(requestOf(c), { deposit: 1_000n });
    expect((await present(payload, source)).status).toBe(200);
    expect((await present(await client.voucher(channel, 500n))).status).toBe(200);
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => charge(channel.channelId, '60', `par-${i}`)));
    const charged = answers.filter((r) => r.status === 200);
    expect(charged).toHaveLength(8); // 8 × 60 = 480 ≤ 500 < 540
    expect(answers.filter((r) => r.status === 402)).toHaveLength(12);
    const [row] = await db.$queryRawUnsafe<{ spent: string }[]>(
      `SELECT spent::text FROM facilitator.session_channels WHERE channel_id = $1`,
      channel.channelId,
    );
    expect(row!.spent).toBe('480');
  });

  it('enforces minVoucherDelta', async () => {
    const { client } = buyerOf(7);
    const request = { methodDetails: { chainId: chain.manifest.chainId, minVoucherDelta: '100' } };
    const c = await challenge(request);
    const { channel, payload, source } = await client.openRelayed(requestOf(c), { deposit: 1_000n });
    expect((await present(payload, source, request)).status).toBe(200);
    expect(await present(await client.voucher(channel, 50n), undefined, request)).toMatchObject({
      status: 402,
      body: { type: 'https://paymentauth.org/problems/session/delta-too-small' },
    });
    expect((await present(await client.voucher(channel, 150n), undefined, request)).status).toBe(200);
  });

  it('accepts concurrent vouchers of many channels and of one channel (grouped into shared statements) exactly once each, in order', async () => {
    const buyers = [buyerOf(8).client, buyerOf(9).client];
    const c = await challenge();
    const channels = [];
    for (const client of [...buyers, ...buyers]) {
      const { channel, payload, source } = await client.openRelayed(requestOf(c), { deposit: 1_000n });
      expect((await present(payload, source)).status).toBe(200);
      channels.push({ client, channel });
    }
    // every channel's vouchers 100…800 at once: each answered 200 (accepted, or at or below one accepted meanwhile)
    const sent = await Promise.all(
      channels.flatMap(({ client, channel }) =>
        [100n, 200n, 300n, 400n, 500n, 600n, 700n, 800n].map(async (amount) => {
          const payload = {
            action: 'voucher',
            channelId: channel.channelId,
            cumulativeAmount: amount.toString(),
            signature: await client.signVoucher(channel, amount),
          };
          const credential = serializeCredential({ challenge: c, payload });
          return { channelId: channel.channelId, amount, answer: await postJson(`${facilitator.url}/mpp/settle`, { credential, terms: terms() }) };
        }),
      ),
    );
    // a 200 means the voucher is accepted, or one at or above it is: never a receipt below the voucher answered
    for (const { amount, answer } of sent) {
      expect(answer.status).toBe(200);
      expect(BigInt(answer.body.receipt.acceptedCumulative)).toBeGreaterThanOrEqual(amount);
    }
    for (const { channel } of channels) {
      const [row] = await db.$queryRawUnsafe<{ accepted: string }[]>(
        `SELECT accepted_cumulative::text AS accepted FROM facilitator.session_channels WHERE channel_id = $1`,
        channel.channelId,
      );
      expect(row!.accepted).toBe('800');
      // one event per raise, raising strictly, their deltas adding up to what was accepted
      const events = await db.$queryRawUnsafe<{ delta: string; accepted: string }[]>(
        `SELECT data->>'delta' AS delta, data->>'acceptedCumulative' AS accepted FROM facilitator.channel_events
          WHERE channel_id = $1 AND type = 'channel.voucher_accepted' ORDER BY id`,
        channel.channelId,
      );
      const raised = events.map((e) => BigInt(e.accepted));
      expect(raised.every((value, i) => i === 0 || value > raised[i - 1]!)).toBe(true);
      expect(raised.at(-1)).toBe(800n);
      expect(events.reduce((sum, e) => sum + BigInt(e.delta), 0n)).toBe(800n);
      // each raise is the receipt of exactly one answer with that voucher's amount
      const acceptedAnswers = sent.filter((s) => s.channelId === channel.channelId).map((s) => BigInt(s.answer.body.receipt.acceptedCumulative));
      for (const value of raised) expect(acceptedAnswers.filter((a) => a === value).length).toBeGreaterThanOrEqual(1);
    }
  });

  it('writes every change with its channel event, each valid against the contract, and publishes them all', async () => {
    const rows = await db.$queryRawUnsafe<(ChannelEventRow & { publishedAt: Date | null })[]>(
      `SELECT id::text AS "eventId", channel_id AS "channelId", type, data, snapshot, created_at AS "occurredAt", published_at AS "publishedAt"
         FROM facilitator.channel_events WHERE id >= $1::bigint AND snapshot->>'network' = $2 ORDER BY id`,
      firstEventId.toString(),
      chain.manifest.network,
    );
    expect(rows.length).toBeGreaterThan(10);
    expect(new Set(rows.map((r) => r.type))).toEqual(
      new Set(['channel.opened', 'channel.topped_up', 'channel.voucher_accepted', 'channel.spent', 'channel.settled', 'channel.closed']),
    );
    for (const row of rows)
      expect(channelEventMessageOf(row), `event ${row.eventId} ${row.type}`).toMatchObject({ ok: true, message: { eventId: row.eventId } });
    // published by a relay (this facilitator's to its queue, or another facilitator's of the run sharing the database)
    let unpublished = rows.length;
    for (let i = 0; unpublished > 0 && i < 200; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      const [left] = await db.$queryRawUnsafe<{ n: number }[]>(
        `SELECT count(*)::int AS n FROM facilitator.channel_events WHERE id >= $1::bigint AND snapshot->>'network' = $2 AND published_at IS NULL`,
        firstEventId.toString(),
        chain.manifest.network,
      );
      unpublished = left!.n;
    }
    expect(unpublished).toBe(0);
    // what this facilitator published is on its queue, as the contract says
    const redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    const queue = new Queue(CHANNEL_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    try {
      const jobs = (await Promise.all(rows.map((row) => queue.getJob(channelEventJobId(row.eventId, row.channelId))))).filter((job) => job !== undefined);
      expect(jobs.length).toBeGreaterThan(0);
      for (const job of jobs) expect(parseChannelEventMessage(job.data).ok).toBe(true);
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });
});
