import { randomUUID } from 'node:crypto';
import type { Job } from 'bullmq';
import { channelAccountId, TransferCode } from '@mp/ledger';
import { until } from '../../../test/support/webhook-receiver';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { ChannelBooks, type BookedChannel } from '../src/channels/channel-books.service';
import { AnvilChannels, ChannelEventFeed, ChannelEventsPublisher } from './support/channel-world';

/**
 * Payment channels booked from the `channel-events` queue by the ledger's consumer: channels opened, topped up,
 * settled and closed on anvil by the buyer client and the payee's key, their events written as the facilitator's
 * outbox would and checked against the contract, then delivered twice, out of order, or broken.
 */
describe('channel books from channel events', () => {
  let ledger: RunningLedger;
  let publisher: ChannelEventsPublisher;
  let books: ChannelBooks;
  const anvil = new AnvilChannels();
  const merchantId = randomUUID();

  beforeAll(async () => {
    ledger = await startLedger({ LEDGER_INGEST: 'true' });
    publisher = new ChannelEventsPublisher(ledger.config.redisUrl, ledger.config.queuePrefix);
    books = ledger.app.get(ChannelBooks);
    await anvil.fund(10_000_000n);
  });
  afterAll(async () => {
    await publisher?.close();
    await ledger?.close();
  });

  const figures = (b: BookedChannel | undefined) =>
    b && {
      state: b.state,
      deposit: b.deposit,
      accepted: b.accepted,
      spent: b.spent,
      settled: b.settled,
      refunded: b.refunded,
      held: b.held,
      unspent: b.unspent,
    };
  const settledTo = (channelId: string, expected: Partial<NonNullable<ReturnType<typeof figures>>>) =>
    until(`channel ${channelId} booked as ${JSON.stringify(expected, (_, v) => (typeof v === 'bigint' ? String(v) : v))}`, async () => {
      const b = figures(await books.read(merchantId, channelId));
      return b && Object.entries(expected).every(([k, v]) => b[k as keyof typeof b] === v) ? b : undefined;
    });
  const transfersOf = async (channelId: string) =>
    ledger.db.$queryRawUnsafe<{ code: number; amount: string; reference: string }[]>(
      `SELECT t.code, t.amount::text AS amount, t.reference FROM ledger.transfers t JOIN ledger.accounts a ON a.key = t.credit_account_key
        WHERE t.merchant_id = $1::uuid AND a.reference = $2 ORDER BY t.seq`,
      merchantId,
      channelId,
    );
  const failedJob = (jobId: string) =>
    until(`job ${jobId} failed`, async () => {
      // the state first, then the job read again: a job read before it failed carries no failedReason
      if ((await publisher.queue.getJobState(jobId)) !== 'failed') return undefined;
      const job: Job | undefined = await publisher.queue.getJob(jobId);
      return job;
    });

  it('books a whole channel life once, whatever is delivered twice, and its figures read back from its accounts', async () => {
    const { channel, txHash } = await anvil.open(1_000_000n);
    const feed = new ChannelEventFeed(anvil, channel.channelId, merchantId);
    const topUpHash = await anvil.topUp(channel, 500_000n);
    const settleHash = await anvil.settle(channel, 300_000n);
    const closeHash = await anvil.close(channel, 700_000n);
    const onChain = await anvil.read(channel.channelId);
    expect(onChain).toMatchObject({ finalized: true, deposit: 1_500_000n, settled: 700_000n });

    const events = [
      feed.opened(1_000_000n, txHash),
      feed.toppedUp(500_000n, topUpHash),
      feed.voucher(300_000n),
      feed.spent('charge-1', 250_000n),
      feed.settled(300_000n, settleHash),
      feed.voucher(700_000n),
      feed.spent('charge-2', 400_000n),
      feed.settled(700_000n, closeHash),
      feed.closed(closeHash),
    ];
    await publisher.publish(...events);
    const closed = { state: 'closed' as const, deposit: 1_500_000n, accepted: 700_000n, spent: 650_000n, settled: 700_000n, refunded: 800_000n, held: 0n };
    await settledTo(channel.channelId, closed);

    // every event again, under job ids of their own (a redelivery the queue cannot deduplicate), and once more directly
    for (const [i, event] of events.entries()) await publisher.publishRaw(`again-${event.eventId}-${i}`, event);
    await until('the redeliveries consumed', async () =>
      (await publisher.queue.getJobCounts('waiting', 'active', 'delayed')).waiting === 0 ? true : undefined,
    );
    for (const event of events) await expect(books.book(event)).resolves.toBe('skipped');
    expect(figures(await books.read(merchantId, channel.channelId))).toEqual({ ...closed, unspent: 50_000n });

    // one transfer per step, each of its own kind, named by what moved it
    expect(await transfersOf(channel.channelId)).toEqual([
      { code: TransferCode.channelDeposit, amount: '1000000', reference: txHash.toLowerCase() },
      { code: TransferCode.channelDeposit, amount: '500000', reference: topUpHash.toLowerCase() },
      { code: TransferCode.channelVoucher, amount: '300000', reference: `event:${events[2].eventId}` },
      { code: TransferCode.channelSpend, amount: '250000', reference: 'charge-1' },
      { code: TransferCode.channelSettle, amount: '300000', reference: settleHash.toLowerCase() },
      { code: TransferCode.channelVoucher, amount: '400000', reference: `event:${events[5].eventId}` },
      { code: TransferCode.channelSpend, amount: '400000', reference: 'charge-2' },
      { code: TransferCode.channelSettle, amount: '400000', reference: closeHash.toLowerCase() },
      { code: TransferCode.channelRefund, amount: '800000', reference: closeHash.toLowerCase() },
    ]);
    // the books say what the escrow says
    expect(onChain.deposit).toBe(closed.deposit);
    expect(onChain.settled).toBe(closed.settled);
    const [row] = await ledger.db.$queryRawUnsafe<{ last: string }[]>(
      `SELECT last_event_id::text AS last FROM ledger.channels WHERE merchant_id = $1::uuid AND channel_id = $2`,
      merchantId,
      channel.channelId,
    );
    expect(row.last).toBe(events.at(-1)!.eventId);
  });

  it('holds an event that comes before an earlier one of its channel until that one is booked', async () => {
    const { channel, txHash } = await anvil.open(400_000n);
    const feed = new ChannelEventFeed(anvil, channel.channelId, merchantId);
    const settleHash = await anvil.settle(channel, 100_000n);
    const [opened, voucher, spent, settled] = [
      feed.opened(400_000n, txHash),
      feed.voucher(150_000n),
      feed.spent('c', 120_000n),
      feed.settled(100_000n, settleHash),
    ];
    // the last first: each waits (retried with backoff) for the one before it
    await publisher.publish(settled, spent, voucher);
    const waiting = await until('the settle held back', async () => {
      const job = await publisher.queue.getJob(`channel-event-${settled.eventId}-${channel.channelId}`);
      return job && job.attemptsMade > 0 ? job : undefined;
    });
    expect(waiting.failedReason).toMatch(/not booked yet|earlier event/);
    expect(figures(await books.read(merchantId, channel.channelId))).toMatchObject({ deposit: 0n, accepted: 0n, spent: 0n, settled: 0n });
    await publisher.publish(opened);
    await settledTo(channel.channelId, {
      state: 'open',
      deposit: 400_000n,
      accepted: 150_000n,
      spent: 120_000n,
      settled: 100_000n,
      held: 300_000n,
      unspent: 30_000n,
    });
  });

  it('refuses for good, and books nothing of, messages that break the contract or contradict the books', async () => {
    const { channel, txHash } = await anvil.open(200_000n);
    const feed = new ChannelEventFeed(anvil, channel.channelId, merchantId);
    await publisher.publish(feed.opened(200_000n, txHash), feed.voucher(50_000n));
    await settledTo(channel.channelId, { deposit: 200_000n, accepted: 50_000n });

    // malformed: an amount that is not a decimal string
    const malformed = { ...feed.voucher(80_000n), data: { delta: '30000', acceptedCumulative: '8e4' } };
    await publisher.publishRaw(`malformed-${malformed.eventId}`, malformed);
    // the cumulative figure is not its snapshot's
    const lying = feed.voucher(90_000n);
    const liar = { ...lying, data: { delta: '40000', acceptedCumulative: '95000' } };
    await publisher.publishRaw(`liar-${liar.eventId}`, liar);
    // a step that starts where the books never were (50 000 accepted; this one says 40 000 → 90 000)
    const between = { ...lying, eventId: String(BigInt(lying.eventId) + 1n), data: { delta: '50000', acceptedCumulative: '90000' } };
    await publisher.publishRaw(`between-${between.eventId}`, between);
    // more spent than accepted in its own snapshot
    const overspent = { ...feed.spent('too-much', 60_000n), channel: { ...feed.snapshot, acceptedCumulative: '50000', spent: '60000' } };
    await publisher.publishRaw(`overspent-${overspent.eventId}`, overspent);

    for (const [jobId, reason] of [
      [`malformed-${malformed.eventId}`, /malformed channel event: data.acceptedCumulative/],
      [`liar-${liar.eventId}`, /accepted 95000 exceeds|is not the snapshot/],
      [`between-${between.eventId}`, /between the event's 40000 and 90000/],
      [`overspent-${overspent.eventId}`, /spent 60000 exceeds accepted 50000/],
    ] as const) {
      const job = await failedJob(jobId);
      expect(job.failedReason).toMatch(reason);
      // refused once, never retried
      expect(job.attemptsMade).toBe(1);
    }
    expect(figures(await books.read(merchantId, channel.channelId))).toMatchObject({ deposit: 200_000n, accepted: 50_000n, spent: 0n });
  });

  it('books nothing for a channel no merchant claimed, and keeps channels of one merchant out of another', async () => {
    const { channel, txHash } = await anvil.open(100_000n);
    const feed = new ChannelEventFeed(anvil, channel.channelId, null);
    await expect(books.book(feed.opened(100_000n, txHash))).resolves.toBe('skipped');
    expect(await books.read(merchantId, channel.channelId)).toBeUndefined();
    const [account] = await ledger.ledger.lookupAccounts(merchantId, [channelAccountId(channel.channelId, 'channelDeposit')]);
    expect(account).toBeUndefined();
    expect(await books.read(randomUUID(), channel.channelId)).toBeUndefined();
  });
});
