import { randomUUID } from 'node:crypto';
import { Queue, QueueEvents } from 'bullmq';
import { Redis } from 'ioredis';
import { MERCHANT_NOTICES_QUEUE, merchantNoticeBatchJobId, NOTICE_BATCH_JOB_NAME, verifyWebhookSignature, type MerchantNoticeMessage } from '@mp/clients';
import { PrismaService } from '@mp/db';
import { createMerchant } from '../../../test/support/merchants';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../../test/support/webhook-receiver';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

describe('merchant notices (merchant-notices queue → signed webhooks)', () => {
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let connection: Redis;
  let queue: Queue;
  let events: QueueEvents;
  const servers: WebhookReceiver[] = [];

  const notice = (merchantId: string, noticeId = randomUUID()): MerchantNoticeMessage => ({
    noticeId,
    merchantId,
    type: 'reconciliation.breaks_found',
    createdAt: '2026-12-01T10:00:00.000Z',
    data: {
      runId: noticeId,
      merchantId,
      summary: { breaks: 2, byKind: { missing_on_chain: 1, amount_mismatch: 1 } },
      newBreaks: 2,
      reportPath: `/reconciliation/runs/${noticeId}/report`,
    },
  });
  /** Publishes like the ledger does (job id `notice-<noticeId>`) and waits until the facilitator has consumed it. */
  const publish = async (data: unknown, jobId: string) => {
    const job = await queue.add('reconciliation.breaks_found', data, { jobId });
    return job.waitUntilFinished(events, 20_000);
  };
  const deliveries = (merchantId: string) =>
    db.$queryRawUnsafe<{ id: string; notice_id: string | null; event_id: string | null; event_type: string; status: string; body: string }[]>(
      `SELECT id::text, notice_id, event_id::text, event_type, status::text, body FROM facilitator.webhook_deliveries WHERE merchant_id = $1::uuid ORDER BY created_at`,
      merchantId,
    );

  beforeAll(async () => {
    facilitator = await startFacilitator({ WEBHOOK_POLL_MS: '50', WEBHOOK_RETRY_BASE_MS: '200', WEBHOOK_MAX_ATTEMPTS: '3', WEBHOOK_TIMEOUT_MS: '2000' });
    db = facilitator.app.get(PrismaService);
    connection = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    queue = new Queue(MERCHANT_NOTICES_QUEUE, { connection, prefix: facilitator.config.queuePrefix });
    events = new QueueEvents(MERCHANT_NOTICES_QUEUE, { connection: { url: facilitator.config.redisUrl }, prefix: facilitator.config.queuePrefix });
    await events.waitUntilReady();
  });
  afterAll(async () => {
    await events?.close().catch(() => undefined);
    await queue?.close().catch(() => undefined);
    connection?.disconnect();
    await facilitator?.close().catch(() => undefined);
    for (const server of servers) server.close();
  });

  it('delivers a notice once, signed, with the body { id, type, createdAt, data }, however often it is published', async () => {
    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    const merchant = createMerchant('Notice merchant', receiver.url);
    receiver.verifyWith(merchant.webhookSecret);
    const message = notice(merchant.merchantId);

    // Published twice at once: BullMQ keeps one job for the job id.
    const [first] = await Promise.all([
      publish(message, `notice-${message.noticeId}`),
      queue.add('reconciliation.breaks_found', message, { jobId: `notice-${message.noticeId}` }),
    ]);
    expect(first).toBe('queued');
    const got = await until('the notice', () => receiver.received[0]);

    expect(got.headers['content-type']).toBe('application/json');
    expect(verifyWebhookSignature({ secret: merchant.webhookSecret, headers: got.headers, body: got.body })).toMatchObject({
      ok: true,
      id: got.headers['webhook-id'],
    });
    expect(got.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(verifyWebhookSignature({ secret: `whsec_${Buffer.from('f'.repeat(32)).toString('base64')}`, headers: got.headers, body: got.body })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(JSON.parse(got.body)).toEqual({
      id: got.headers['webhook-id'],
      type: 'reconciliation.breaks_found',
      createdAt: message.createdAt,
      data: message.data,
    });

    const [delivery] = await until('the delivery to be recorded', async () => {
      const rows = await deliveries(merchant.merchantId);
      return rows[0]?.status === 'delivered' ? rows : undefined;
    });
    expect(delivery).toMatchObject({ id: got.headers['webhook-id'], notice_id: message.noticeId, event_id: null, event_type: 'reconciliation.breaks_found' });

    // Published again after delivery (the first job is completed; a fresh job id gets past BullMQ's own
    // deduplication, as after the completed job has been removed): the database keeps it to one delivery.
    expect(await publish(message, `notice-${message.noticeId}-again`)).toBe('duplicate');
    await queue.remove(`notice-${message.noticeId}`);
    expect(await publish(message, `notice-${message.noticeId}`)).toBe('duplicate');
    expect(await deliveries(merchant.merchantId)).toHaveLength(1);

    // Another notice id for the same merchant is another webhook. Once both of the merchant's deliveries are
    // delivered there is nothing left that could be sent: the receiver got each exactly once.
    const second = notice(merchant.merchantId);
    expect(await publish(second, `notice-${second.noticeId}`)).toBe('queued');
    const rows = await until('both deliveries to be delivered', async () => {
      const all = await deliveries(merchant.merchantId);
      return all.length === 2 && all.every((d) => d.status === 'delivered') ? all : undefined;
    });
    expect(receiver.received.map((r) => r.headers['webhook-id'])).toEqual(rows.map((d) => d.id));
    expect(JSON.parse(receiver.received[1].body)).toMatchObject({ type: 'reconciliation.breaks_found', data: { runId: second.noticeId } });
  });

  it('creates no delivery for a merchant without a webhook URL, a disabled merchant or an unknown one', async () => {
    const silent = createMerchant('Notices, no webhooks');
    const message = notice(silent.merchantId);
    expect(await publish(message, `notice-${message.noticeId}`)).toBe('skipped');
    expect(await deliveries(silent.merchantId)).toEqual([]);

    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    const disabled = createMerchant('Notices, disabled', receiver.url);
    receiver.verifyWith(disabled.webhookSecret);
    await db.$executeRawUnsafe(`UPDATE facilitator.merchants SET disabled_at = now() WHERE id = $1::uuid`, disabled.merchantId);
    const toDisabled = notice(disabled.merchantId);
    expect(await publish(toDisabled, `notice-${toDisabled.noticeId}`)).toBe('skipped');
    expect(await deliveries(disabled.merchantId)).toEqual([]);

    const unknown = notice(randomUUID());
    expect(await publish(unknown, `notice-${unknown.noticeId}`)).toBe('skipped');
    expect(await deliveries(unknown.merchantId)).toEqual([]);
    expect(receiver.received).toEqual([]);
  });

  it('fails malformed notices for good without a delivery, and keeps consuming', async () => {
    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    const merchant = createMerchant('Notices, malformed', receiver.url);
    receiver.verifyWith(merchant.webhookSecret);
    const good = notice(merchant.merchantId);
    const malformed: [string, unknown][] = [
      ['not an object', 'reconciliation.breaks_found'],
      ['unknown type', { ...good, noticeId: randomUUID(), type: 'payment.confirmed' }],
      ['merchant id not a uuid', { ...good, noticeId: randomUUID(), merchantId: 'acme' }],
      ['no notice id', { ...good, noticeId: '' }],
      ['data not an object', { ...good, noticeId: randomUUID(), data: [1, 2] }],
      ['bad createdAt', { ...good, noticeId: randomUUID(), createdAt: 'yesterday' }],
    ];
    for (const [what, data] of malformed) {
      const job = await queue.add('reconciliation.breaks_found', data, {
        jobId: `malformed-${randomUUID()}`,
        attempts: 5,
        backoff: { type: 'fixed', delay: 10 },
      });
      await expect(job.waitUntilFinished(events, 20_000), what).rejects.toThrow(/malformed merchant notice/);
      // UnrecoverableError: one attempt, not five
      expect((await queue.getJob(job.id!))?.attemptsMade, what).toBe(1);
    }
    expect(await deliveries(merchant.merchantId)).toEqual([]);

    // The worker is still consuming.
    expect(await publish(good, `notice-${good.noticeId}`)).toBe('queued');
    await until('the good notice', () => receiver.received[0]);
    expect(receiver.received).toHaveLength(1);
  });

  it('takes a batch of notices in one job: each delivered once, a duplicate or an unknown merchant answered on its own; a batch again changes nothing', async () => {
    const receiver = await startWebhookReceiver();
    servers.push(receiver);
    const merchant = createMerchant('Notices, batched', receiver.url);
    receiver.verifyWith(merchant.webhookSecret);
    const before = notice(merchant.merchantId);
    expect(await publish(before, `notice-${before.noticeId}`)).toBe('queued');
    const fresh = [notice(merchant.merchantId), notice(merchant.merchantId), notice(merchant.merchantId)];
    // the notice published alone already, one twice in the batch, and one for a merchant nobody knows
    const notices = [...fresh, before, fresh[0]!, notice(randomUUID())];
    const batch = await queue.add(NOTICE_BATCH_JOB_NAME, { notices }, { jobId: merchantNoticeBatchJobId(notices) });
    expect(await batch.waitUntilFinished(events, 20_000)).toEqual({ queued: 3, duplicate: 2, skipped: 1 });
    const rows = await until('the four deliveries to be delivered', async () => {
      const all = await deliveries(merchant.merchantId);
      return all.length === 4 && all.every((d) => d.status === 'delivered') ? all : undefined;
    });
    expect(rows.map((d) => d.notice_id).sort()).toEqual([before, ...fresh].map((n) => n.noticeId).sort());
    for (const message of fresh) {
      const row = rows.find((d) => d.notice_id === message.noticeId)!;
      expect(JSON.parse(row.body)).toEqual({ id: row.id, type: message.type, createdAt: message.createdAt, data: message.data });
    }
    expect(receiver.received.map((r) => r.headers['webhook-id']).sort()).toEqual(rows.map((d) => d.id).sort());

    // the same batch again (under another job id: BullMQ drops it under its own while it keeps the job)
    const again = await queue.add(NOTICE_BATCH_JOB_NAME, { notices }, { jobId: `${merchantNoticeBatchJobId(notices)}-again` });
    expect(await again.waitUntilFinished(events, 20_000)).toEqual({ duplicate: 5, skipped: 1 });
    expect(await deliveries(merchant.merchantId)).toHaveLength(4);

    // one malformed notice fails the whole batch for good, recording none of it
    const withBad = [notice(merchant.merchantId), { ...notice(merchant.merchantId), createdAt: 'yesterday' }];
    const bad = await queue.add(NOTICE_BATCH_JOB_NAME, { notices: withBad }, { jobId: merchantNoticeBatchJobId(withBad), attempts: 5 });
    await expect(bad.waitUntilFinished(events, 20_000)).rejects.toThrow(/malformed merchant notice: notices\.1\.createdAt/);
    expect((await queue.getJob(bad.id!))?.attemptsMade).toBe(1);
    expect(await deliveries(merchant.merchantId)).toHaveLength(4);
  });
});
