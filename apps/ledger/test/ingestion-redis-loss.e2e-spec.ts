import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import type { Address } from 'viem';
import { PAYMENT_EVENT_BATCH_JOB, PAYMENT_EVENTS_QUEUE, paymentEventsOfJob, type PaymentEventMessage } from '@mp/clients';
import { PrismaService } from '@mp/db';
import { AccountCode, chartAccountId, paymentTransferId, TransferCode } from '@mp/ledger';
import { chainAsset } from '@mp/reconciliation';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { call } from '../../../test/support/http';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { until } from '../../../test/support/webhook-receiver';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const REPLAY_SCRIPT = path.resolve(__dirname, '../../../scripts/replay-ledger-ingestion.mjs');

/**
 * The outbox to the ledger survives Redis losing the `payment-events` queue: an event is done when the ledger has
 * booked and acknowledged it, so the facilitator publishes again what Redis forgot, and the ledger books every
 * payment exactly once. And what the ledger refused can be replayed (`npm run ledger:replay`).
 */
describe('payments booked by the ledger after Redis lost the queue', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const USDC = chainAsset(manifest.network, usdc.address);
  // the test chain's merchant account, which a new merchant declares by default: this merchant's book is its own
  const payTo = manifest.accounts.merchant.address as Address;
  const amounts = [410_000n, 1_020_000n, 75_000n];

  let facilitator: RunningFacilitator;
  let ledger: RunningLedger | undefined;
  let merchant: TestMerchant;
  let redis: Redis;
  // its jobs carry single events or batches (paymentEventsOfJob)
  let queue: Queue<PaymentEventMessage>;
  const paymentIds: string[] = [];

  beforeAll(async () => {
    merchant = createMerchant('redis loss e2e');
    // a short republish delay so the test does not wait minutes; the ledger is started only after the loss
    // its own queues: flushing them must not touch (or half-delete) other specs' jobs
    facilitator = await startFacilitator({ OUTBOX_POLL_MS: '20', OUTBOX_REPUBLISH_AFTER_MS: '1000', QUEUE_PREFIX: 'mp:test-ingestion-redis-loss' });
    redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
  });
  afterAll(async () => {
    await queue?.close();
    redis?.disconnect();
    await ledger?.close();
    await facilitator?.close();
  });

  const settle = async (amount: bigint, payerIndex: number): Promise<string> => {
    const payload = await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: payTo, value: amount });
    const answer = await call(`${facilitator.url}/settle`, {
      method: 'POST',
      key: merchant.apiKey,
      body: v2Body(payload, v2Requirements(manifest, usdc, amount, { payTo })),
    });
    expect(answer.body.success, JSON.stringify(answer.body)).toBe(true);
    const [{ id }] = await db().$queryRawUnsafe<{ id: string }[]>(
      `SELECT id::text FROM facilitator.payments WHERE tx_hash = $1 AND amount = $2`,
      answer.body.transaction,
      amount.toString(),
    );
    return id;
  };
  // the facilitator's tables, read as an operator would (the apps themselves never read each other's)
  const db = () => facilitator.app.get(PrismaService);
  const events = () =>
    db().$queryRawUnsafe<{ id: string; paymentId: string; published: boolean; acknowledged: boolean; republishCount: number }[]>(
      `SELECT id::text, payment_id::text AS "paymentId", published_at IS NOT NULL AS published, acknowledged_at IS NOT NULL AS acknowledged, republish_count AS "republishCount"
         FROM facilitator.payment_events WHERE payment_id = ANY($1::uuid[]) ORDER BY id`,
      paymentIds,
    );

  it('flushes the queue’s Redis keys between publish and consume: the ledger still books every payment exactly once', async () => {
    // 1. payments settle while no ledger consumes: their events wait in Redis
    for (const [i, amount] of amounts.entries()) paymentIds.push(await settle(amount, 7 + i));
    // (alone or in batches, as the relay's polls found them)
    const waiting = await until('every event published and waiting in the queue', async () => {
      const rows = await events();
      if (rows.length !== 3 * amounts.length || !rows.every((e) => e.published)) return undefined;
      const jobs = await queue.getJobs(['waiting']);
      const carried = new Set(jobs.flatMap((job) => (paymentEventsOfJob(job) as PaymentEventMessage[]).map((e) => e.eventId)));
      return rows.every((e) => carried.has(e.id)) ? jobs : undefined;
    });

    // 2. Redis loses every key under the deployment's prefix (a flush, a failover without persistence)
    const deleted: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${facilitator.config.queuePrefix}:*`, 'COUNT', 1000);
      if (keys.length) await redis.del(...keys);
      deleted.push(...keys);
      cursor = next;
    } while (cursor !== '0');
    for (const job of waiting) expect(deleted).toContain(`${facilitator.config.queuePrefix}:${PAYMENT_EVENTS_QUEUE}:${job.id}`);

    // 3. the ledger's consumer starts: what it gets is what the facilitator published again
    ledger = await startLedger({ LEDGER_INGEST: 'true', FACILITATOR_URL: facilitator.url, QUEUE_PREFIX: facilitator.config.queuePrefix });
    const total = amounts.reduce((a, b) => a + b, 0n);
    const acknowledged = await until(
      'every event booked and acknowledged',
      async () => {
        const rows = await events();
        return rows.every((e) => e.acknowledged) ? rows : undefined;
      },
      45_000,
    );
    // republished, since the jobs were gone: nobody set published_at back by hand
    expect(acknowledged.filter((e) => e.republishCount < 1)).toEqual([]);

    // 4. booked exactly once: one hold and one post per payment, the revenue the sum of the payments
    const [revenue] = await ledger.ledger.lookupAccounts(merchant.merchantId, [chartAccountId('revenue', USDC)]);
    expect(revenue).toMatchObject({ code: AccountCode.revenue, creditsPosted: total, creditsPending: 0n, debitsPosted: 0n });
    const [clearing] = await ledger.ledger.lookupAccounts(merchant.merchantId, [chartAccountId('payerClearing', USDC)]);
    expect(clearing).toMatchObject({ debitsPosted: total, debitsPending: 0n, creditsPosted: 0n });
    const transfers = await ledger.db.$queryRawUnsafe<{ id: string; amount: string }[]>(
      `SELECT id::text, amount::text FROM ledger.transfers WHERE merchant_id = $1::uuid AND code = $2 ORDER BY seq`,
      merchant.merchantId,
      TransferCode.payment,
    );
    const expected = paymentIds.flatMap((id, i) => [
      { id: paymentTransferId(id, 'pending'), amount: amounts[i].toString() },
      { id: paymentTransferId(id, 'post'), amount: amounts[i].toString() },
    ]);
    expect([...transfers].sort((a, b) => a.id.localeCompare(b.id))).toEqual([...expected].sort((a, b) => a.id.localeCompare(b.id)));
  });

  it('replays refused jobs with the ledger:replay command, only those named, and says what it did', async () => {
    // the ledger refuses a verified event whose amount contradicts the hold it booked: exists_with_different_amount
    const conflicting = async (paymentId: string) => {
      const [event] = await db().$queryRawUnsafe<(Omit<PaymentEventMessage, 'occurredAt'> & { occurredAt: Date })[]>(
        `SELECT e.id::text AS "eventId", e.type, e.payment_id::text AS "paymentId", p.merchant_id::text AS "merchantId", e.created_at AS "occurredAt", e.data,
                json_build_object('id', p.id, 'state', p.state, 'protocol', p.protocol, 'rail', p.rail, 'network', p.network, 'asset', p.asset, 'payer', p.payer,
                  'payTo', p.pay_to, 'amount', '1', 'nonce', p.authorization_nonce, 'scheme', p.scheme, 'challengeId', p.challenge_id,
                  'reference', p.reference, 'txHash', p.tx_hash, 'merchantId', p.merchant_id) AS payment
           FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE p.id = $1::uuid AND e.type = 'payment.verified'`,
        paymentId,
      );
      return queue.add(event.type, { ...event, occurredAt: event.occurredAt.toISOString() } as PaymentEventMessage, {
        jobId: `conflict-${event.eventId}-${paymentId}`,
      });
    };
    const jobs = [await conflicting(paymentIds[0]), await conflicting(paymentIds[1])];
    const refused = await until('both refused', async () => {
      const found = await Promise.all(jobs.map((job) => queue.getJob(job.id!)));
      return found.every((job) => job?.failedReason && job.finishedOn) ? found.map((job) => job!) : undefined;
    });
    for (const job of refused) expect(job.failedReason).toMatch(/exists_with_different_amount/);

    const replay = (...args: string[]) =>
      spawnSync(process.execPath, [REPLAY_SCRIPT, ...args], { env: { ...process.env, QUEUE_PREFIX: facilitator.config.queuePrefix }, encoding: 'utf8' });
    const dryRun = replay('--payment', paymentIds[0], '--dry-run');
    expect(dryRun.status, dryRun.stderr).toBe(0);
    expect(dryRun.stdout).toContain(`would replay ${jobs[0].id}  event ${refused[0].data.eventId} payment.verified of payment ${paymentIds[0]}`);
    expect(dryRun.stdout).toMatch(/^1 job\(s\) would be moved, \d+ failed job\(s\) in /m);

    const done = replay('--payment', paymentIds[0]);
    expect(done.status, done.stderr).toBe(0);
    expect(done.stdout).toContain(
      `replayed ${jobs[0].id}  event ${refused[0].data.eventId} payment.verified of payment ${paymentIds[0]}, 1 attempt(s), failed: `,
    );
    expect(done.stdout).toMatch(/^1 job\(s\) moved back to waiting, \d+ failed job\(s\) in /m);
    expect(done.stdout).not.toContain(jobs[1].id!);

    // the ledger took the replayed job again (and refused it again: its cause is still there); the other one was not moved
    const again = await until('the replayed job processed again', async () => {
      const job = await queue.getJob(jobs[0].id!);
      return job?.failedReason && job.finishedOn! > refused[0].finishedOn! ? job : undefined;
    });
    expect(again.failedReason).toMatch(/exists_with_different_amount/);
    expect((await queue.getJob(jobs[1].id!))?.finishedOn).toBe(refused[1].finishedOn);

    const usage = replay();
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('name what to replay');

    // a failed batch job is found by any of its events, and named by them
    const inBatch = jobs[1].data;
    const batch = await queue.add(PAYMENT_EVENT_BATCH_JOB, { events: [inBatch], unexpected: true } as never, { jobId: `broken-batch-${inBatch.eventId}` });
    await until('the broken batch failed', async () => ((await queue.getJob(batch.id!))?.failedReason ? true : undefined));
    const listed = replay('--event', inBatch.eventId, '--dry-run');
    expect(listed.status, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(
      `would replay ${batch.id}  batch of 1 event(s) ${inBatch.eventId}…${inBatch.eventId}, 1 attempt(s), failed: malformed payment event batch`,
    );

    for (const job of [...jobs, batch]) await queue.remove(job.id!);
  });
});
