import { randomUUID } from 'node:crypto';
import { Logger } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { MAX_ACKS_PER_MESSAGE, PAYMENT_EVENTS_ACKS_QUEUE, type PaymentEventsAckMessage } from '@mp/clients';
import { PaymentEventAcks } from './payment-event-acks';

/** The ledger's acknowledgements on a real Redis, under a prefix of their own. */
describe('PaymentEventAcks', () => {
  const prefix = `test-acks-${randomUUID()}`;
  let redis: Redis;
  let queue: Queue<PaymentEventsAckMessage>;

  beforeAll(() => {
    redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { maxRetriesPerRequest: null });
    queue = new Queue(PAYMENT_EVENTS_ACKS_QUEUE, { connection: redis, prefix });
  });
  afterAll(async () => {
    await queue.obliterate({ force: true });
    await queue.close();
    redis.disconnect();
  });

  it('sends each event id once, at most MAX_ACKS_PER_MESSAGE per message, and nothing for ids that are not outbox ids', async () => {
    const acks = new PaymentEventAcks(queue, new Logger('test'));
    const ids = Array.from({ length: MAX_ACKS_PER_MESSAGE + 250 }, (_, i) => String(i + 1));
    for (const id of ids) acks.acknowledge(id);
    acks.acknowledge('7');
    acks.acknowledge('replay-8');
    acks.acknowledge('0');
    await acks.flush();
    acks.stop();

    const jobs = await queue.getWaiting();
    const sent = jobs.map((job) => job.data.eventIds);
    expect(sent.map((batch) => batch.length).sort((a, b) => b - a)).toEqual([MAX_ACKS_PER_MESSAGE, 250]);
    expect(sent.flat().sort((a, b) => Number(a) - Number(b))).toEqual(ids);
  });
});
