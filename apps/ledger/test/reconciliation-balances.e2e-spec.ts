import { randomBytes } from 'node:crypto';
import type { ReconRowJson } from '@mp/reconciliation';
import { prepaidAccountId } from '@mp/ledger';
import { payerAccount } from '../../../test/support/chain';
import { until } from '../../../test/support/webhook-receiver';
import { AnvilChannels, ChannelEventFeed, ChannelEventsPublisher } from './support/channel-world';
import { ReconMerchant, startReconWorld, type ReconWorld } from './support/recon-world';

/**
 * Balance reconciliation end to end: payment channels opened, topped up, settled and closed on anvil's escrow and
 * booked from their events, prepaid balances funded by payments the facilitator settled, then a clean run; then the
 * escrow and the book made to disagree, one break of each kind, each found by the run with what the books and the
 * chain (or the book's own transfers) say.
 */
describe('reconciliation of payment channels and prepaid balances', () => {
  const period = { from: new Date(Date.now() - 60_000), to: new Date(Date.now() + 10 * 60_000) };
  const anvil = new AnvilChannels();
  let world: ReconWorld;
  let merchant: ReconMerchant;
  let other: ReconMerchant;
  let publisher: ChannelEventsPublisher;
  const channels: Record<string, Awaited<ReturnType<AnvilChannels['open']>>['channel']> = {};
  const feeds: Record<string, ChannelEventFeed> = {};
  const payer = payerAccount(anvil.chain.manifest, 4).address.toLowerCase();

  beforeAll(async () => {
    world = await startReconWorld({ RECON_SESSION_ESCROWS: `${anvil.network}=${anvil.escrow}` });
    merchant = await ReconMerchant.create(world, 'balance reconciliation e2e');
    other = await ReconMerchant.create(world, 'balance reconciliation e2e, another merchant');
    publisher = new ChannelEventsPublisher(world.ledger.config.redisUrl, world.ledger.config.queuePrefix);
    await anvil.fund(20_000_000n);
  });
  afterAll(async () => {
    await publisher?.close();
    await world?.close();
  });

  const books = (channelId: string) => merchant.api('GET', `/channels/${channelId}`);
  const booked = (name: string, expected: Record<string, string>) =>
    until(`channel ${name} booked`, async () => {
      const answer = await books(channels[name].channelId);
      return answer.status === 200 && Object.entries(expected).every(([k, v]) => answer.body[k] === v) ? answer.body : undefined;
    });
  async function open(name: string, deposit: bigint): Promise<void> {
    const { channel, txHash } = await anvil.open(deposit);
    channels[name] = channel;
    feeds[name] = new ChannelEventFeed(anvil, channel.channelId, merchant.merchantId);
    await publisher.publish(feeds[name].opened(deposit, txHash));
  }
  const breaksOf = async (runId: string) =>
    (await merchant.breaksOf(runId)).map((b: ReconRowJson) => ({
      kind: b.kind,
      entryKind: b.entryKind,
      reference: b.reference,
      expected: b.expected,
      actual: b.actual,
      difference: b.difference,
    }));

  it('finds nothing to report when the books tell what the escrow and the payments did, and shows the channels checked', async () => {
    // a: open, a voucher, a charge, settled (still open)
    await open('a', 1_000_000n);
    const settleA = await anvil.settle(channels.a, 300_000n);
    await publisher.publish(feeds.a.voucher(300_000n), feeds.a.spent('a-1', 200_000n), feeds.a.settled(300_000n, settleA));
    // b: open, vouchers, closed by the payee at 400 000 (settled then refunded)
    await open('b', 500_000n);
    const closeB = await anvil.close(channels.b, 400_000n);
    await publisher.publish(feeds.b.voucher(400_000n), feeds.b.spent('b-1', 400_000n), feeds.b.settled(400_000n, closeB), feeds.b.closed(closeB));
    // c: open, topped up, closed at 100 000
    await open('c', 300_000n);
    const topUpC = await anvil.topUp(channels.c, 200_000n);
    const closeC = await anvil.close(channels.c, 100_000n);
    await publisher.publish(feeds.c.toppedUp(200_000n, topUpC), feeds.c.voucher(100_000n), feeds.c.settled(100_000n, closeC), feeds.c.closed(closeC));

    expect(await booked('a', { state: 'open', deposit: '1000000', accepted: '300000', spent: '200000', settled: '300000', held: '700000' })).toBeDefined();
    expect(await booked('b', { state: 'closed', deposit: '500000', settled: '400000', refunded: '100000', held: '0' })).toBeDefined();
    expect(await booked('c', { state: 'closed', deposit: '500000', settled: '100000', refunded: '400000' })).toBeDefined();
    // the books are the merchant's own: another merchant's key finds nothing, a malformed id is a 400
    expect((await other.api('GET', `/channels/${channels.a.channelId}`)).status).toBe(404);
    expect((await merchant.api('GET', '/channels/0x1234')).body).toMatchObject({ status: 400, code: 'validation_failed' });

    // a prepaid balance funded by an x402 payment the facilitator settled, drawn on by a charge and a captured hold
    const { txHash } = await merchant.settle(1_000_000n, 4);
    expect((await merchant.api('POST', '/balances/top-ups', { payer, asset: world.USDC, amount: '1000000', paymentReference: txHash })).status).toBe(201);
    expect((await merchant.api('POST', '/balances/charges', { id: 'call-1', payer, asset: world.USDC, amount: '250000' })).status).toBe(201);
    expect((await merchant.api('POST', '/balances/holds', { id: 'call-2', payer, asset: world.USDC, amount: '100000' })).status).toBe(201);
    expect((await merchant.api('POST', '/balances/holds/call-2/capture', { amount: '40000' })).status).toBe(201);

    const run = await merchant.reconcile(period);
    expect(run).toMatchObject({ status: 'completed', error: null });
    expect(await breaksOf(run.id)).toEqual([]);
    expect(run.summary).toMatchObject({ breaks: 0, counts: { matched: 1 }, checked: { channels: 3, prepaidBalances: 1, topUps: 1 } });
    expect(Number(run.summary.checked.blocks[anvil.network])).toBeGreaterThan(0);
  });

  it('reports each way the escrow and the book can disagree, with what each side says', async () => {
    // a: the payee settles 50 000 more on chain than the books were told
    await anvil.settle(channels.a, 350_000n);
    // d: booked at 200 000, then topped up on chain without its event
    await open('d', 200_000n);
    await booked('d', { deposit: '200000' });
    await anvil.topUp(channels.d, 100_000n);
    // e: booked open, then closed on chain without its event
    await open('e', 150_000n);
    await booked('e', { deposit: '150000' });
    await anvil.close(channels.e, 0n);
    // f: opened on chain to the merchant's payee, never booked
    const { channel: unknown } = await anvil.open(70_000n);
    // a top-up naming a payment that never was, and a balance changed outside its transfers
    const phantom = `0x${randomBytes(32).toString('hex')}`;
    expect((await merchant.api('POST', '/balances/top-ups', { payer, asset: world.USDC, amount: '5000', paymentReference: phantom })).status).toBe(201);
    // a payment that settled, but made by another payer than the one it credits
    const someoneElse = payerAccount(anvil.chain.manifest, 3).address.toLowerCase();
    const { txHash: othersPayment } = await merchant.settle(20_000n, 3);
    expect((await merchant.api('POST', '/balances/top-ups', { payer, asset: world.USDC, amount: '20000', paymentReference: othersPayment })).status).toBe(201);
    await world.ledger.db.$executeRawUnsafe(
      `UPDATE ledger.accounts SET credits_posted = credits_posted + 777 WHERE merchant_id = $1::uuid AND id = $2::uuid`,
      merchant.merchantId,
      prepaidAccountId(payer, world.USDC),
    );

    const run = await merchant.reconcile(period);
    expect(run).toMatchObject({ status: 'completed', error: null });
    const found = await breaksOf(run.id);
    expect(found).toHaveLength(7);
    expect(found).toEqual(
      expect.arrayContaining([
        { kind: 'channel_settled_mismatch', entryKind: 'channel', reference: channels.a.channelId, expected: '300000', actual: '350000', difference: '50000' },
        { kind: 'channel_deposit_mismatch', entryKind: 'channel', reference: channels.d.channelId, expected: '200000', actual: '300000', difference: '100000' },
        {
          kind: 'channel_closed_on_chain_not_in_books',
          entryKind: 'channel',
          reference: channels.e.channelId,
          expected: undefined,
          actual: undefined,
          difference: undefined,
        },
        { kind: 'channel_unknown_to_books', entryKind: 'channel', reference: unknown.channelId, expected: '0', actual: '70000', difference: '70000' },
        { kind: 'prepaid_funding_missing', entryKind: 'prepaid', reference: phantom, expected: '5000', actual: undefined, difference: undefined },
        { kind: 'prepaid_funding_mismatch', entryKind: 'prepaid', reference: othersPayment, expected: '20000', actual: '20000', difference: '0' },
        // 1 000 000 + 5 000 + 20 000 − 250 000 − 40 000 from the transfers; stored 777 more
        { kind: 'prepaid_balance_mismatch', entryKind: 'prepaid', reference: payer, expected: '735000', actual: '735777', difference: '777' },
      ]),
    );
    expect(run.summary).toMatchObject({
      counts: {
        channel_settled_mismatch: 1,
        channel_deposit_mismatch: 1,
        channel_closed_on_chain_not_in_books: 1,
        channel_unknown_to_books: 1,
        prepaid_funding_missing: 1,
        prepaid_funding_mismatch: 1,
        prepaid_balance_mismatch: 1,
      },
      checked: { channels: 5, prepaidBalances: 1, topUps: 3 },
    });
    const [paidByOther] = (await merchant.breaksOf(run.id)).filter((b) => b.kind === 'prepaid_funding_mismatch');
    expect(paidByOther.details).toMatchObject({ payer, paidBy: someoneElse });
    const [unknownRow] = (await merchant.breaksOf(run.id)).filter((b) => b.kind === 'channel_unknown_to_books');
    expect(unknownRow.details).toMatchObject({ escrow: anvil.escrow, payee: anvil.payee.address.toLowerCase(), payer: anvil.payer.address.toLowerCase() });

    // the CSV and the HTML report show them as they show payment breaks
    const read = async (path: string) => (await fetch(`${world.ledger.url}${path}`, { headers: { authorization: `Bearer ${merchant.apiKey}` } })).text();
    expect(await read(`/reconciliations/${run.id}.csv`)).toContain(`channel_settled_mismatch,chain,${world.USDC},channel,${channels.a.channelId}`);
    expect(await read(`/reconciliations/${run.id}/report`)).toContain('Channel unknown to books');
  });
});
