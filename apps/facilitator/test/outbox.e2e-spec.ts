import { Queue, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import type { Address } from 'viem';
import { PAYMENT_EVENTS_QUEUE, type PaymentEventMessage } from '@mp/clients';
import { PrismaService } from '@mp/db';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

/** The outbox relay: every payment event reaches the ledger's BullMQ queue once per event id, with the payment. */
describe('payment events to the ledger queue', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let redis: Redis;
  let worker: Worker<PaymentEventMessage>;
  const received: PaymentEventMessage[] = [];

  beforeAll(async () => {
    facilitator = await startFacilitator({ OUTBOX_POLL_MS: '20' });
    db = facilitator.app.get(PrismaService);
    redis = new Redis(facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    worker = new Worker<PaymentEventMessage>(PAYMENT_EVENTS_QUEUE, async (job) => void received.push(job.data), { connection: redis, prefix: facilitator.config.queuePrefix });
  });
  afterAll(async () => {
    await worker?.close();
    redis?.disconnect();
    await facilitator?.close();
  });

  const eventsOf = async (paymentId: string, count: number) => {
    for (let i = 0; i < 200 && received.filter((m) => m.paymentId === paymentId).length < count; i++) await new Promise((r) => setTimeout(r, 25));
    return received.filter((m) => m.paymentId === paymentId);
  };

  it('publishes verified, submitted and confirmed of a settled payment, in order, with the payment and the gas used', async () => {
    const payload = await signAuthorization(payerAccount(manifest, 2), usdc, manifest.chainId, { to: manifest.accounts.merchant.address as Address, value: 7_000n });
    const settled = await postJson(`${facilitator.url}/settle`, v2Body(payload, v2Requirements(manifest, usdc, 7_000n)));
    expect(settled.body.success).toBe(true);
    const [{ id }] = await db.$queryRawUnsafe<{ id: string }[]>(`SELECT id::text FROM facilitator.payments WHERE tx_hash = $1`, settled.body.transaction);

    const events = await eventsOf(id, 3);
    expect(events.map((e) => e.type)).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
    expect(events[2]).toMatchObject({
      paymentId: id,
      merchantId: null,
      data: { txHash: settled.body.transaction, gasUsed: expect.stringMatching(/^\d+$/), effectiveGasPrice: expect.stringMatching(/^\d+$/) },
      payment: { id, protocol: 'x402', rail: 'evm', network: manifest.network, asset: usdc.address.toLowerCase(), amount: '7000', state: 'confirmed' },
    });
    expect(new Set(events.map((e) => e.eventId)).size).toBe(3);
    const unpublished = await db.$queryRawUnsafe<unknown[]>(`SELECT 1 FROM facilitator.payment_events WHERE payment_id = $1::uuid AND published_at IS NULL`, id);
    expect(unpublished).toEqual([]);
  });

  it('a re-publish of the same events (a crash before the mark) adds no second job', async () => {
    const queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: redis, prefix: facilitator.config.queuePrefix });
    const before = await queue.getJobCountByTypes('completed', 'waiting', 'active', 'delayed');
    const [last] = await db.$queryRawUnsafe<{ id: string }[]>(`SELECT max(id)::text AS id FROM facilitator.payment_events`);
    await db.$executeRawUnsafe(`UPDATE facilitator.payment_events SET published_at = NULL WHERE id = $1::bigint`, last!.id);
    for (let i = 0; i < 100; i++) {
      const [row] = await db.$queryRawUnsafe<{ published: boolean }[]>(`SELECT published_at IS NOT NULL AS published FROM facilitator.payment_events WHERE id = $1::bigint`, last!.id);
      if (row?.published) break;
      await new Promise((r) => setTimeout(r, 20));
    }
    expect(await queue.getJobCountByTypes('completed', 'waiting', 'active', 'delayed')).toBe(before);
    expect(received.filter((m) => m.eventId === last!.id)).toHaveLength(1);
    await queue.close();
  });
});
