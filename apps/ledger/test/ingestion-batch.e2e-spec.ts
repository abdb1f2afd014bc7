import { randomUUID } from 'node:crypto';
import { Queue, type Job } from 'bullmq';
import { Redis } from 'ioredis';
import {
  PAYMENT_EVENT_BATCH_JOB,
  PAYMENT_EVENTS_ACKS_QUEUE,
  PAYMENT_EVENTS_QUEUE,
  paymentEventBatchJobId,
  paymentEventJobId,
  type PaymentEventJobData,
  type PaymentEventMessage,
  type PaymentEventsAckMessage,
} from '@mp/clients';
import { chartAccountId, nativeAsset, paymentTransferId } from '@mp/ledger';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { until } from '../../../test/support/webhook-receiver';
import { PaymentIngestion } from '../src/ingestion/payment-ingestion.service';
import { SubscriptionLifecycle } from '../src/billing/subscription-lifecycle.service';
import { chargePayment, events as subscriptionEvents, newSubscriptionId, type SubscriptionTerms } from './support/subscriptions-world';

const NETWORK = 'eip155:84532';
const TOKEN = '0x036cbd53842c5426634e7929541ec2318f3dcf7e';
const ASSET = `${NETWORK}/${TOKEN}`;
const GAS = nativeAsset(NETWORK);
const txHash = `0x${'ab'.repeat(32)}`;

let nextEventId = BigInt(Date.now()) * 1000n;
const newEventId = () => String(++nextEventId);

/**
 * `batch` jobs on payment-events, through the ledger's real consumer: every event of a batch booked once, in few
 * calls (the holds in one, the posts and gas in one more), the same events again (alone or in the same batch) booking
 * nothing new, and an event the ledger refuses failing alone in its own job while the rest of its batch is booked.
 */
describe('payment events in batches', () => {
  const prefix = `mp:test-ingestion-batch-${randomUUID().slice(0, 8)}`;
  let ledger: RunningLedger;
  let redis: Redis;
  let queue: Queue<PaymentEventJobData>;
  let acks: Queue<PaymentEventsAckMessage>;

  beforeAll(async () => {
    ledger = await startLedger({ LEDGER_INGEST: 'true', QUEUE_PREFIX: prefix });
    redis = new Redis(ledger.config.redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix });
    acks = new Queue(PAYMENT_EVENTS_ACKS_QUEUE, { connection: redis, prefix });
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await ledger?.close();
    await Promise.all([queue, acks].map((q) => q?.obliterate({ force: true }).catch(() => undefined)));
    await Promise.all([queue?.close(), acks?.close()]);
    redis?.disconnect();
  });

  const event = (
    merchantId: string,
    paymentId: string,
    type: PaymentEventMessage['type'],
    data: Record<string, unknown> = {},
    amount = '10000',
  ): PaymentEventMessage =>
    ({
      eventId: newEventId(),
      type,
      paymentId,
      merchantId,
      occurredAt: new Date().toISOString(),
      data,
      payment: {
        id: paymentId,
        state: 'verified',
        protocol: 'x402',
        rail: 'evm',
        network: NETWORK,
        asset: TOKEN,
        payer: '0x277b6edc5e0664bda72eb0c84fe1e44af4befe6e',
        payTo: '0xcdaf545f03d8da01c298d8604f29d4c80493f6b2',
        amount,
        nonce: `0x${'01'.repeat(32)}`,
        scheme: 'exact',
        challengeId: null,
        reference: null,
        txHash: null,
        merchantId,
      },
    }) as PaymentEventMessage;
  const verified = (merchantId: string, paymentId: string, amount = '10000') => {
    const e = event(merchantId, paymentId, 'payment.verified', {}, amount);
    const { network, asset, payer, payTo, nonce } = e.payment;
    return { ...e, data: { network, asset, payer, payTo, amount, nonce, protocol: 'x402', rail: 'evm' } } as PaymentEventMessage;
  };
  const submitted = (merchantId: string, paymentId: string) =>
    event(merchantId, paymentId, 'payment.submitted', { txHash, signer: '0xcdaf545f03d8da01c298d8604f29d4c80493f6b2', txNonce: 1 });
  const confirmed = (merchantId: string, paymentId: string, amount?: string) =>
    event(merchantId, paymentId, 'payment.confirmed', { txHash, blockNumber: '7', blockHash: txHash, gasUsed: '21000', gasFee: '42000' }, amount);
  const failed = (merchantId: string, paymentId: string) =>
    event(merchantId, paymentId, 'payment.failed', { txHash, reason: 'transaction_failed', message: 'reverted', gasFee: '1000' });
  /** a failure before anything reached the chain (so no gas) */
  const unsent = (merchantId: string, paymentId: string) =>
    event(merchantId, paymentId, 'payment.failed', { reason: 'unexpected_settle_error', message: 'node refused it', broadcast: false });

  /** Adds the job and waits until the consumer finished it: its return value, or why it failed. */
  async function run(name: string, data: PaymentEventJobData, jobId: string): Promise<Job<PaymentEventJobData>> {
    await queue.add(name, data, { jobId });
    return until(`job ${jobId} finished`, async () => {
      const job = await queue.getJob(jobId);
      return job?.finishedOn ? job : undefined;
    });
  }
  const runBatch = (events: PaymentEventMessage[]) => run(PAYMENT_EVENT_BATCH_JOB, { events }, paymentEventBatchJobId(events));
  const runAlone = (e: PaymentEventMessage, attempt = 'again') => run(e.type, e, `${attempt}-${paymentEventJobId(e.eventId, e.paymentId)}`);

  /** The ledger's create_transfers calls while `fn` runs (real calls, counted): each call's transfer ids. */
  async function transferCalls(fn: () => Promise<unknown>): Promise<string[][]> {
    const spy = vi.spyOn(ledger.ledger, 'createTransfers');
    try {
      await fn();
      return spy.mock.calls.map(([, transfers]) => transfers.map((t) => t.id));
    } finally {
      spy.mockRestore();
    }
  }

  /** What the merchant's book holds: its payment and gas accounts' totals. */
  const book = async (merchantId: string) =>
    Object.fromEntries(
      (
        await ledger.ledger.lookupAccounts(merchantId, [
          chartAccountId('payerClearing', ASSET),
          chartAccountId('revenue', ASSET),
          chartAccountId('gasExpense', GAS),
          chartAccountId('gasFunding', GAS),
        ])
      ).map((a) => [a.id, { debitsPending: a.debitsPending, debitsPosted: a.debitsPosted, creditsPending: a.creditsPending, creditsPosted: a.creditsPosted }]),
    );
  const transfersOf = async (merchantId: string, paymentIds: string[]) =>
    ledger.ledger.lookupTransfers(
      merchantId,
      paymentIds.flatMap((id) => (['pending', 'post', 'void', 'gas', 'late'] as const).map((kind) => paymentTransferId(id, kind))),
    );
  /** Every event id the ledger acknowledged so far. */
  const acknowledged = async () => new Set((await acks.getJobs(['waiting', 'completed', 'active', 'delayed'])).flatMap((j) => j.data.eventIds));

  it('books a batch’s events once, in one call for the holds and one for posts, voids and gas; the books balance and every event is acknowledged', async () => {
    const merchantId = randomUUID();
    const paid = [randomUUID(), randomUUID(), randomUUID()];
    const lost = randomUUID();
    // each payment's events in the order the facilitator wrote them, payments interleaved
    const events = [
      ...paid.map((p) => verified(merchantId, p)),
      verified(merchantId, lost),
      ...paid.map((p) => submitted(merchantId, p)),
      ...paid.map((p) => confirmed(merchantId, p)),
      failed(merchantId, lost),
    ];
    let job!: Job<PaymentEventJobData>;
    const calls = await transferCalls(async () => (job = await runBatch(events)));
    expect(job.returnvalue).toBe(`${events.length} events: 8 booked, 3 skipped, 0 refused`);
    expect(calls).toEqual([
      [...paid, lost].map((p) => paymentTransferId(p, 'pending')),
      [...paid.flatMap((p) => [paymentTransferId(p, 'post'), paymentTransferId(p, 'gas')]), paymentTransferId(lost, 'void'), paymentTransferId(lost, 'gas')],
    ]);
    expect(await book(merchantId)).toEqual({
      [chartAccountId('payerClearing', ASSET)]: { debitsPending: 0n, debitsPosted: 30000n, creditsPending: 0n, creditsPosted: 0n },
      [chartAccountId('revenue', ASSET)]: { debitsPending: 0n, debitsPosted: 0n, creditsPending: 0n, creditsPosted: 30000n },
      [chartAccountId('gasExpense', GAS)]: { debitsPending: 0n, debitsPosted: 3n * 42000n + 1000n, creditsPending: 0n, creditsPosted: 0n },
      [chartAccountId('gasFunding', GAS)]: { debitsPending: 0n, debitsPosted: 0n, creditsPending: 0n, creditsPosted: 3n * 42000n + 1000n },
    });
    await until('every event acknowledged', async () => {
      const ids = await acknowledged();
      return events.every((e) => ids.has(e.eventId)) || undefined;
    });
  });

  it('books the same events again, in the same batch and alone, as nothing new', async () => {
    const merchantId = randomUUID();
    const paymentIds = [randomUUID(), randomUUID()];
    const events = paymentIds.flatMap((p) => [verified(merchantId, p), confirmed(merchantId, p)]);
    await runBatch(events);
    const books = await book(merchantId);
    const transfers = await transfersOf(merchantId, paymentIds);
    expect(transfers).toHaveLength(6);

    // the same batch under a new job id (Redis lost BullMQ's dedupe), then each event alone, then a batch in reverse
    const again = await run(PAYMENT_EVENT_BATCH_JOB, { events }, `again-${paymentEventBatchJobId(events)}`);
    expect(again.returnvalue).toBe('4 events: 4 booked, 0 skipped, 0 refused');
    for (const e of events) expect((await runAlone(e)).returnvalue).toBe('booked');
    const reversed = [...events].reverse();
    expect((await runBatch(reversed)).returnvalue).toBe('4 events: 4 booked, 0 skipped, 0 refused');

    expect(await book(merchantId)).toEqual(books);
    expect(await transfersOf(merchantId, paymentIds)).toEqual(transfers);
    expect(await queue.getFailed()).toEqual([]);
  });

  it('holds then posts a payment verified and confirmed in one batch, and books a payment whose outcomes the batch holds twice event by event', async () => {
    const merchantId = randomUUID();
    const paymentId = randomUUID();
    const late = randomUUID();
    // a failure, then the chain confirms it after all: two outcomes of one hold, in order (void, then a late payment)
    const events = [
      verified(merchantId, paymentId),
      confirmed(merchantId, paymentId),
      verified(merchantId, late),
      unsent(merchantId, late),
      confirmed(merchantId, late),
    ];
    const calls = await transferCalls(() => runBatch(events));
    // the first payment in the batch's shared calls; the other alone, in its order
    expect(calls.slice(0, 2)).toEqual([[paymentTransferId(paymentId, 'pending')], [paymentTransferId(paymentId, 'post'), paymentTransferId(paymentId, 'gas')]]);
    const ofLate = calls.slice(2).flat();
    expect(ofLate.indexOf(paymentTransferId(late, 'void'))).toBeLessThan(ofLate.indexOf(paymentTransferId(late, 'late')));
    const byId = new Map((await transfersOf(merchantId, [paymentId, late])).map((t) => [t.id, t]));
    expect([...byId.keys()].sort()).toEqual(
      [
        paymentTransferId(paymentId, 'pending'),
        paymentTransferId(paymentId, 'post'),
        paymentTransferId(paymentId, 'gas'),
        paymentTransferId(late, 'pending'),
        paymentTransferId(late, 'void'),
        paymentTransferId(late, 'gas'),
        paymentTransferId(late, 'late'),
      ].sort(),
    );
    expect((await book(merchantId))[chartAccountId('revenue', ASSET)]).toEqual({
      debitsPending: 0n,
      debitsPosted: 0n,
      creditsPending: 0n,
      creditsPosted: 20000n,
    });
  });

  it('fails a refused event alone, in its own job, and books the rest of its batch', async () => {
    const merchantId = randomUUID();
    const good = [randomUUID(), randomUUID()];
    const disputed = randomUUID();
    // the ledger holds the disputed payment at 10000; the batch confirms it at 20000: a hold that disagrees, refused
    await ledger.app.get(PaymentIngestion).book(verified(merchantId, disputed));
    const refused = confirmed(merchantId, disputed, '20000');
    const events = [verified(merchantId, good[0]), refused, confirmed(merchantId, good[0]), confirmed(merchantId, good[1])];
    const job = await runBatch(events);
    expect(job.failedReason).toBeUndefined();
    expect(job.returnvalue).toBe('4 events: 3 booked, 0 skipped, 1 refused');

    const own = await until('the refused event failed in its own job', async () => {
      const found = await queue.getJob(paymentEventJobId(refused.eventId, refused.paymentId));
      return found?.failedReason ? found : undefined;
    });
    expect(own.name).toBe('payment.confirmed');
    expect(own.data).toEqual(refused);
    expect(own.failedReason).toMatch(/exists_with_different_amount/);
    expect(own.attemptsMade).toBe(1);
    expect((await queue.getFailed()).map((j) => j.id)).toEqual([own.id]);

    // the others booked, the refused one not: its hold stays as it was, nothing posted
    expect((await book(merchantId))[chartAccountId('revenue', ASSET)]).toEqual({
      debitsPending: 0n,
      debitsPosted: 0n,
      creditsPending: 10000n,
      creditsPosted: 20000n,
    });
    expect(await ledger.ledger.lookupTransfers(merchantId, [paymentTransferId(disputed, 'post'), paymentTransferId(disputed, 'gas')])).toEqual([]);
    const ids = await until('the booked events acknowledged', async () => {
      const found = await acknowledged();
      return events.filter((e) => e !== refused).every((e) => found.has(e.eventId)) ? found : undefined;
    });
    expect(ids.has(refused.eventId)).toBe(false);
    // the failed set is the operator's; later tests expect it empty
    await own.remove();
  });

  it('refuses a job that is not a batch for good, and passes a malformed event of a batch on alone', async () => {
    const merchantId = randomUUID();
    const broken = await run(PAYMENT_EVENT_BATCH_JOB, { events: [] } as never, `broken-${randomUUID()}`);
    expect(broken.failedReason).toMatch(/^malformed payment event batch: events/);
    expect(broken.attemptsMade).toBe(1);

    const paymentId = randomUUID();
    const malformed = { ...confirmed(merchantId, randomUUID()), data: { txHash: '0x1234' } } as unknown as PaymentEventMessage;
    const events = [verified(merchantId, paymentId), malformed, confirmed(merchantId, paymentId)];
    const job = await run(PAYMENT_EVENT_BATCH_JOB, { events }, paymentEventBatchJobId(events));
    expect(job.returnvalue).toBe('3 events: 2 booked, 0 skipped, 1 refused');
    const own = await until('the malformed event failed in its own job', async () => {
      const found = await queue.getJob(paymentEventJobId(malformed.eventId, malformed.paymentId));
      return found?.failedReason ? found : undefined;
    });
    expect(own.failedReason).toMatch(/^malformed payment event: data/);
    expect((await book(merchantId))[chartAccountId('revenue', ASSET)]).toMatchObject({ creditsPosted: 10000n });
    await Promise.all([broken.remove(), own.remove()]);
  });

  it('publishes alone a confirmation whose subscription is not recorded yet (its activation in another batch), which applies once it is', async () => {
    const merchantId = randomUUID();
    const now = new Date();
    const terms: SubscriptionTerms = {
      subscriptionId: newSubscriptionId(),
      merchantId,
      payer: '0x277b6edc5e0664bda72eb0c84fe1e44af4befe6e',
      payTo: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8',
      amount: '10000',
      asset: TOKEN,
      network: NETWORK,
      periodUnit: 'month',
      periodCount: 1,
      anchor: now,
    };
    const payment = chargePayment(terms, 0, 0);
    const early = subscriptionEvents.confirmed(payment, now);
    const other = randomUUID();
    const job = await runBatch([verified(merchantId, other), confirmed(merchantId, other), early]);
    expect(job.returnvalue).toBe('3 events: 2 booked, 0 skipped, 0 refused, 1 published alone for their subscription');
    const alone = await until('the early confirmation in its own job', () => queue.getJob(paymentEventJobId(early.eventId, early.paymentId)));
    expect(alone.data).toEqual(early);

    // the activation arrives: the job's next attempt applies the confirmation
    expect(await ledger.app.get(SubscriptionLifecycle).ingest(subscriptionEvents.activated(terms, payment, now))).toBe('applied');
    const done = await until(
      'the early confirmation applied',
      async () => {
        const found = await queue.getJob(alone.id!);
        return found?.returnvalue ? found : undefined;
      },
      20_000,
    );
    expect(done.returnvalue).toBe('booked');
    expect(await ledger.db.ledgerSubscriptionCharge.findMany({ where: { subscriptionId: terms.subscriptionId }, select: { state: true } })).toEqual([
      { state: 'paid' },
    ]);
  });
});
