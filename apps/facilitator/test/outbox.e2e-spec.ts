import { Logger } from '@nestjs/common';
import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Address } from 'viem';
import {
  PAYMENT_EVENT_BATCH_JOB,
  PAYMENT_EVENTS_ACKS_QUEUE,
  PAYMENT_EVENTS_QUEUE,
  paymentEventBatchJobId,
  paymentEventJobId,
  paymentEventsOfJob,
  type PaymentEventJobData,
  type PaymentEventMessage,
  type PaymentEventsAckMessage,
} from '@mp/clients';
import { PrismaService } from '@mp/db';
import { MIN_EVENTS_PER_BATCH_JOB } from '../src/outbox/outbox.relay';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { until } from '../../../test/support/webhook-receiver';

const { manifest } = testChain();
const usdc = manifest.tokens.usdc;

/** A settled payment's id, through the facilitator's /settle. */
async function settle(facilitator: RunningFacilitator, db: PrismaService, payerIndex: number, value: bigint): Promise<string> {
  const payload = await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, {
    to: manifest.accounts.merchant.address as Address,
    value,
  });
  const settled = await postJson(`${facilitator.url}/settle`, v2Body(payload, v2Requirements(manifest, usdc, value)));
  expect(settled.body.success, JSON.stringify(settled.body)).toBe(true);
  const [{ id }] = await db.$queryRawUnsafe<{ id: string }[]>(`SELECT id::text FROM facilitator.payments WHERE tx_hash = $1`, settled.body.transaction);
  return id;
}

interface EventRow {
  id: string;
  published: boolean;
  acknowledged: boolean;
  republishCount: number;
}
const eventRows = (db: PrismaService, paymentId: string) =>
  db.$queryRawUnsafe<EventRow[]>(
    `SELECT id::text, published_at IS NOT NULL AS published, acknowledged_at IS NOT NULL AS acknowledged, republish_count AS "republishCount"
       FROM facilitator.payment_events WHERE payment_id = $1::uuid ORDER BY id`,
    paymentId,
  );

/** What the ledger does once it has booked events: acknowledge them on the acknowledgements queue. */
async function acknowledge(redis: Redis, prefix: string, data: unknown): Promise<string> {
  const acks = new Queue<PaymentEventsAckMessage>(PAYMENT_EVENTS_ACKS_QUEUE, { connection: redis, prefix });
  try {
    return (await acks.add('ack', data as PaymentEventsAckMessage)).id!;
  } finally {
    await acks.close();
  }
}

/** The outbox relay: every payment event reaches the ledger's BullMQ queue once per event id, with the payment. */
describe('payment events to the ledger queue', () => {
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let redis: Redis;
  let worker: Worker<PaymentEventJobData>;
  const received: PaymentEventMessage[] = [];
  /** every job consumed: its name, id and event ids */
  const jobs: { name: string; id: string; eventIds: string[] }[] = [];
  const paymentIds: string[] = [];

  beforeAll(async () => {
    facilitator = await startFacilitator({ OUTBOX_POLL_MS: '20' });
    db = facilitator.app.get(PrismaService);
    redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    worker = new Worker<PaymentEventJobData>(
      PAYMENT_EVENTS_QUEUE,
      async (job) => {
        const events = paymentEventsOfJob(job) as PaymentEventMessage[];
        received.push(...events);
        jobs.push({ name: job.name, id: job.id!, eventIds: events.map((e) => e.eventId) });
      },
      { connection: redis, prefix: facilitator.config.queuePrefix },
    );
  });
  afterAll(async () => {
    await worker?.close();
    redis?.disconnect();
    await facilitator?.close();
  });

  const eventsOf = (paymentId: string, count: number) =>
    until(`${count} events of ${paymentId}`, () => {
      const found = received.filter((m) => m.paymentId === paymentId);
      return found.length >= count ? found : undefined;
    });

  it('publishes verified, submitted and confirmed of a settled payment, in order, with the payment and the gas used', async () => {
    const payload = await signAuthorization(payerAccount(manifest, 2), usdc, manifest.chainId, {
      to: manifest.accounts.merchant.address as Address,
      value: 7_000n,
    });
    const settled = await postJson(`${facilitator.url}/settle`, v2Body(payload, v2Requirements(manifest, usdc, 7_000n)));
    expect(settled.body.success).toBe(true);
    const [{ id }] = await db.$queryRawUnsafe<{ id: string }[]>(`SELECT id::text FROM facilitator.payments WHERE tx_hash = $1`, settled.body.transaction);
    paymentIds.push(id);

    const events = await eventsOf(id, 3);
    expect(events.map((e) => e.type)).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
    expect(events[2]).toMatchObject({
      paymentId: id,
      merchantId: null,
      data: { txHash: settled.body.transaction, gasUsed: expect.stringMatching(/^\d+$/), effectiveGasPrice: expect.stringMatching(/^\d+$/) },
      payment: { id, protocol: 'x402', rail: 'evm', network: manifest.network, asset: usdc.address.toLowerCase(), amount: '7000', state: 'confirmed' },
    });
    expect(new Set(events.map((e) => e.eventId)).size).toBe(3);
    // The relay marks them published in the transaction that adds the jobs, which may commit after the job arrives.
    await until('every event of the payment marked published', async () => {
      const unpublished = await db.$queryRawUnsafe<unknown[]>(
        `SELECT 1 FROM facilitator.payment_events WHERE payment_id = $1::uuid AND published_at IS NULL`,
        id,
      );
      return unpublished.length === 0 || undefined;
    });
  });

  /** Outbox rows of the payment, written in one transaction (so one poll finds them all). */
  const resends = (paymentId: string, count: number) =>
    db.$queryRawUnsafe<{ id: string }[]>(
      `INSERT INTO facilitator.payment_events (payment_id, type, data) SELECT $1::uuid, 'payment.resend', '{"reason":"a test"}'::jsonb FROM generate_series(1, $2::int) RETURNING id::text`,
      paymentId,
      count,
    );
  const republishedOnce = (ids: string[]) =>
    until('the events published again', async () => {
      const rows = await db.$queryRawUnsafe<{ published: boolean }[]>(
        `SELECT published_at IS NOT NULL AS published FROM facilitator.payment_events WHERE id = ANY($1::bigint[])`,
        ids,
      );
      return rows.every((r) => r.published) || undefined;
    });

  it('publishes the events one poll finds as one batch job, in order, its id made of its events; a few, each alone', async () => {
    const [paymentId] = paymentIds;
    const few = (await resends(paymentId, MIN_EVENTS_PER_BATCH_JOB - 1)).map((r) => r.id);
    const alone = await until('the few consumed', () => {
      const found = few.map((id) => jobs.find((j) => j.eventIds.includes(id)));
      return found.every(Boolean) ? found : undefined;
    });
    expect(alone).toEqual(few.map((id) => ({ name: 'payment.resend', id: paymentEventJobId(id, paymentId), eventIds: [id] })));

    const ids = (await resends(paymentId, MIN_EVENTS_PER_BATCH_JOB)).map((r) => r.id);
    const job = await until('the batch consumed', () => jobs.find((j) => j.eventIds.includes(ids[0])));
    expect(job).toEqual({ name: PAYMENT_EVENT_BATCH_JOB, id: paymentEventBatchJobId(ids.map((eventId) => ({ eventId, paymentId }))), eventIds: ids });
    expect(received.filter((m) => ids.includes(m.eventId)).map((m) => ({ type: m.type, paymentId: m.paymentId }))).toEqual(
      ids.map(() => ({ type: 'payment.resend', paymentId })),
    );
    // gone again: the tests below count this payment's own three events
    await db.$executeRawUnsafe(`DELETE FROM facilitator.payment_events WHERE id = ANY($1::bigint[])`, [...few, ...ids]);
  });

  it('a re-publish of the same events (a crash before the mark) adds no second job, alone or in a batch', async () => {
    const [paymentId] = paymentIds;
    const queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    // a lone event is a job of its own, under its event's job id
    const [lone] = await resends(paymentId, 1);
    await until('the lone event consumed', () => received.find((m) => m.eventId === lone.id));
    expect(jobs.find((j) => j.eventIds.includes(lone.id))).toEqual({ name: 'payment.resend', id: paymentEventJobId(lone.id, paymentId), eventIds: [lone.id] });
    // and a batch
    const batch = (await resends(paymentId, MIN_EVENTS_PER_BATCH_JOB)).map((r) => r.id);
    await until('the batch consumed', () => (batch.every((id) => received.some((m) => m.eventId === id)) ? true : undefined));

    const before = await queue.getJobCountByTypes('completed', 'waiting', 'active', 'delayed');
    for (const ids of [[lone.id], batch]) {
      await db.$executeRawUnsafe(`UPDATE facilitator.payment_events SET published_at = NULL WHERE id = ANY($1::bigint[])`, ids);
      // the relay has published them again once it marks them published again (it marks in the transaction that publishes)
      await republishedOnce(ids);
    }
    expect(await queue.getJobCountByTypes('completed', 'waiting', 'active', 'delayed')).toBe(before);
    for (const id of [lone.id, ...batch]) expect(received.filter((m) => m.eventId === id)).toHaveLength(1);
    await db.$executeRawUnsafe(`DELETE FROM facilitator.payment_events WHERE id = ANY($1::bigint[])`, [lone.id, ...batch]);
    await queue.close();
  });

  it('publishes a new event under an id an earlier database used (restored from a backup, the same Redis): the old job does not swallow it', async () => {
    const [first] = paymentIds;
    const resend = (paymentId: string, id?: string) =>
      db.$queryRawUnsafe<{ id: string }[]>(
        `INSERT INTO facilitator.payment_events (id, payment_id, type, data) VALUES (coalesce($1::bigint, nextval('facilitator.payment_events_id_seq')), $2::uuid, 'payment.resend', '{"reason":"a test"}'::jsonb) RETURNING id::text`,
        id ?? null,
        paymentId,
      );
    // an event of one payment, published and consumed: its job stays in Redis, completed
    const [old] = await resend(first);
    await until('the first event consumed', () => received.find((m) => m.eventId === old.id));
    // the database forgets it, and its sequence hands the same id to an event of another payment
    const second = await settle(facilitator, db, 4, 4_000n);
    await eventsOf(second, 3);
    await db.$executeRawUnsafe(`DELETE FROM facilitator.payment_events WHERE id = $1::bigint`, old.id);
    await resend(second, old.id);
    const again = await until('the new event under the old id consumed', () => received.find((m) => m.eventId === old.id && m.paymentId === second));
    expect(again.type).toBe('payment.resend');
  });

  it('records the ledger’s acknowledgements: acknowledged events are done; a malformed acknowledgement fails for good', async () => {
    const [paymentId] = paymentIds;
    const ids = (await eventRows(db, paymentId)).map((e) => e.id);
    expect(ids).toHaveLength(3);
    // acknowledged twice, and in two messages: the same outcome
    await acknowledge(redis, facilitator.config.queuePrefix, { eventIds: ids.slice(0, 2) });
    await acknowledge(redis, facilitator.config.queuePrefix, { eventIds: ids });
    const rows = await until('the events acknowledged', async () => {
      const found = await eventRows(db, paymentId);
      return found.every((e) => e.acknowledged) ? found : undefined;
    });
    expect(rows.map((e) => e.republishCount)).toEqual([0, 0, 0]);

    const badJob = await acknowledge(redis, facilitator.config.queuePrefix, { eventIds: ['1', 'event-2'] });
    const acks = new Queue(PAYMENT_EVENTS_ACKS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    const failed = await until('the malformed acknowledgement failed', async () => {
      const job = await acks.getJob(badJob);
      return job?.failedReason ? job : undefined;
    });
    expect(failed.failedReason).toBe('malformed acknowledgement: "event-2" is not an event id');
    await acks.close();
  });

  it('counts the events the ledger has not acknowledged in /metrics', async () => {
    const [expected] = await db.$queryRawUnsafe<{ unacknowledged: number }[]>(
      `SELECT count(*)::int AS unacknowledged FROM facilitator.payment_events WHERE published_at IS NOT NULL AND acknowledged_at IS NULL`,
    );
    const text = await (await fetch(`${facilitator.url}/metrics`)).text();
    expect(text).toContain(`outbox_payment_events{state="unacknowledged"} ${expected.unacknowledged}\n`);
    expect(text).toMatch(/^outbox_oldest_unacknowledged_seconds \d/m);
    expect(text).toMatch(/^outbox_republished_events_total \d+$/m);
  });

  it('does not publish an event that breaks the payment-events contract (a bug): it says so, with the event id, and the rest go on', async () => {
    const errors = vi.spyOn(Logger.prototype, 'error');
    try {
      const [paymentId] = paymentIds;
      // a confirmation whose hash is not a hash and whose block is missing: the ledger would refuse it
      const [bad] = await db.$queryRawUnsafe<{ id: string }[]>(
        `INSERT INTO facilitator.payment_events (payment_id, type, data) VALUES ($1::uuid, 'payment.confirmed', '{"txHash":"0x1234","gasFee":"1"}'::jsonb) RETURNING id::text`,
        paymentId,
      );
      const [good] = await db.$queryRawUnsafe<{ id: string }[]>(
        `INSERT INTO facilitator.payment_events (payment_id, type, data) VALUES ($1::uuid, 'payment.resend', '{"reason":"a test"}'::jsonb) RETURNING id::text`,
        paymentId,
      );
      await until('the event after it published', () => (received.some((m) => m.eventId === good.id) ? true : undefined));
      await until('the malformed event passed over', async () => ((await eventRows(db, paymentId)).find((e) => e.id === bad.id)?.published ? true : undefined));
      const queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
      expect(await queue.getJobState(paymentEventJobId(bad.id, paymentId))).toBe('unknown');
      await queue.close();
      expect(received.filter((m) => m.eventId === bad.id)).toEqual([]);
      const said = errors.mock.calls.map(([message]) => String(message)).find((message) => message.includes(`payment event ${bad.id} `));
      expect(said).toMatch(/breaks the payment-events contract, not published: .*data\.txHash/);
      // not acknowledged: it stays in the outbox's backlog, checked again after OUTBOX_REPUBLISH_AFTER_MS
      expect((await eventRows(db, paymentId)).find((e) => e.id === bad.id)?.acknowledged).toBe(false);
      await db.$executeRawUnsafe(`UPDATE facilitator.payment_events SET acknowledged_at = now() WHERE id = ANY($1::bigint[])`, [bad.id, good.id]);
    } finally {
      errors.mockRestore();
    }
  });
});

/**
 * An event is done when the ledger acknowledged it, not when BullMQ accepted it: Redis may lose the job (a flush, a
 * failover without persistence), or the acknowledgement may never come; the relay publishes the event again.
 */
describe('payment events the ledger has not acknowledged', () => {
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let redis: Redis;
  let queue: Queue<PaymentEventJobData>;
  let worker: Worker<PaymentEventJobData>;
  const received: PaymentEventMessage[] = [];
  const jobs: { name: string; id: string; eventIds: string[] }[] = [];
  let settled: string;

  beforeAll(async () => {
    facilitator = await startFacilitator({ OUTBOX_POLL_MS: '20', OUTBOX_REPUBLISH_AFTER_MS: '500' });
    db = facilitator.app.get(PrismaService);
    redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    worker = new Worker<PaymentEventJobData>(
      PAYMENT_EVENTS_QUEUE,
      async (job) => {
        const events = paymentEventsOfJob(job) as PaymentEventMessage[];
        received.push(...events);
        jobs.push({ name: job.name, id: job.id!, eventIds: events.map((e) => e.eventId) });
      },
      { connection: redis, prefix: facilitator.config.queuePrefix },
    );
  });
  afterAll(async () => {
    await worker?.close();
    await queue?.close();
    redis?.disconnect();
    await facilitator?.close();
  });

  it('publishes again an event whose job Redis lost (a new job, same id) and one whose acknowledgement never came, until acknowledged: each alone', async () => {
    const paymentId = (settled = await settle(facilitator, db, 3, 9_000n));
    const deliveries = (eventId: string) => received.filter((m) => m.eventId === eventId).length;
    const events = await until('the three events consumed', async () => {
      const rows = await eventRows(db, paymentId);
      return rows.length === 3 && rows.every((e) => deliveries(e.id) >= 1) ? rows : undefined;
    });
    // Redis forgets the submitted event's job; the other two stay completed, never acknowledged
    // (removing fails while the job is active: the relay may already be re-publishing it)
    const lost = events[1].id;
    const deliveredBeforeLoss = await until('the submitted event’s job removed', async () =>
      (await queue.remove(paymentEventJobId(lost, paymentId))) === 1 ? deliveries(lost) : undefined,
    );

    await until('every event delivered again', () => (events.every((e) => deliveries(e.id) >= 2) && deliveries(lost) > deliveredBeforeLoss ? true : undefined));
    expect(new Set(received.filter((m) => m.eventId === lost).map((m) => m.type))).toEqual(new Set(['payment.submitted']));
    // the relay adds the job before its transaction counts the re-publish: a delivery may arrive before the count commits
    const counted = await until('every re-publish counted', async () => {
      const rows = await eventRows(db, paymentId);
      return rows.every((e) => e.republishCount >= 1) ? rows : undefined;
    });
    expect(counted.every((e) => !e.acknowledged)).toBe(true);

    await acknowledge(redis, facilitator.config.queuePrefix, { eventIds: events.map((e) => e.id) });
    await until('the events acknowledged', async () => ((await eventRows(db, paymentId)).every((e) => e.acknowledged) ? true : undefined));

    const text = await (await fetch(`${facilitator.url}/metrics`)).text();
    expect(Number(/^outbox_republished_events_total (\d+)$/m.exec(text)?.[1])).toBeGreaterThanOrEqual(3);
  });

  it('publishes again alone, each under its own job id, the events of a batch the ledger did not acknowledge', async () => {
    const ids = (
      await db.$queryRawUnsafe<{ id: string }[]>(
        `INSERT INTO facilitator.payment_events (payment_id, type, data) SELECT $1::uuid, 'payment.resend', '{"reason":"a test"}'::jsonb FROM generate_series(1, $2::int) RETURNING id::text`,
        settled,
        MIN_EVENTS_PER_BATCH_JOB,
      )
    ).map((r) => r.id);
    const alone = await until('each event delivered again, alone', () => {
      const found = ids.map((id) => jobs.find((j) => j.eventIds.length === 1 && j.eventIds[0] === id));
      return found.every(Boolean) ? found : undefined;
    });
    expect(jobs.find((j) => j.eventIds.includes(ids[0]))).toMatchObject({ name: PAYMENT_EVENT_BATCH_JOB, eventIds: ids });
    expect(alone).toEqual(ids.map((id) => ({ name: 'payment.resend', id: paymentEventJobId(id, settled), eventIds: [id] })));
    await acknowledge(redis, facilitator.config.queuePrefix, { eventIds: ids });
    await until('the events acknowledged', async () => ((await eventRows(db, settled)).every((e) => e.acknowledged) ? true : undefined));
  });
});
