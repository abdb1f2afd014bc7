import { randomUUID } from 'node:crypto';
import { BullModule, getQueueToken, Processor, WorkerHost } from '@nestjs/bullmq';
import { Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { until } from '../../../test/support/webhook-receiver';
import { QueueModule, type QueueConnectionConfig } from './queue.module';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUEUE = 'platform-queue-test';
const APP_CONFIG = Symbol('APP_CONFIG');

/** What the test's worker does with a job; set per test. */
let handle: (job: Job<{ n: number }>) => Promise<string> = async (job) => `done ${job.data.n}`;

@Processor(QUEUE)
class TestProcessor extends WorkerHost {
  process(job: Job<{ n: number }>): Promise<string> {
    return handle(job);
  }
}

/** An app as the apps build theirs: its validated config in a provider, the queue module reading it. */
async function startApp(config: QueueConnectionConfig): Promise<TestingModule> {
  @Module({ providers: [{ provide: APP_CONFIG, useValue: config }], exports: [APP_CONFIG] })
  class ConfigModule {}
  const app = await Test.createTestingModule({
    imports: [
      QueueModule.forRootAsync({ imports: [ConfigModule], inject: [APP_CONFIG], useFactory: (c: QueueConnectionConfig) => c, shutdownGraceMs: 500 }),
      BullModule.registerQueue({ name: QUEUE, defaultJobOptions: { removeOnComplete: false } }),
    ],
    providers: [TestProcessor],
  }).compile();
  await app.init();
  return app;
}

describe('QueueModule: queues and workers from the app config, one shutdown path', () => {
  const prefix = `test-queues-${randomUUID()}`;
  let redis: Redis;
  let proxy: TcpProxy | undefined;

  beforeAll(() => {
    redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  });
  afterAll(async () => {
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length) await redis.del(...keys);
    redis.disconnect();
  });
  afterEach(async () => {
    await proxy?.close();
    proxy = undefined;
  });

  it('runs a registered queue’s jobs on its @Processor, under the configured prefix', async () => {
    handle = async (job) => `done ${job.data.n}`;
    const app = await startApp({ redisUrl: REDIS_URL, queuePrefix: prefix });
    try {
      const queue = app.get<Queue<{ n: number }>>(getQueueToken(QUEUE));
      const job = await queue.add('work', { n: 7 }, { jobId: 'job-7' });
      const state = await until('the job completed', async () => ((await queue.getJobState(job.id!)) === 'completed' ? 'completed' : undefined));
      expect(state).toBe('completed');
      expect(await redis.hget(`${prefix}:${QUEUE}:job-7`, 'returnvalue')).toBe(JSON.stringify('done 7'));
    } finally {
      await app.close();
    }
  });

  it('boots and shuts down while Redis is unreachable', async () => {
    proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379));
    proxy.set('refuse');
    const app = await startApp({ redisUrl: proxy.url('redis'), queuePrefix: prefix });
    await app.close();
  });

  it('a publisher fails at once when Redis goes away (no offline queue), instead of waiting for it', async () => {
    proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379));
    const app = await startApp({ redisUrl: proxy.url('redis'), queuePrefix: prefix });
    try {
      const queue = app.get<Queue<{ n: number }>>(getQueueToken(QUEUE));
      handle = async () => 'done';
      await queue.add('work', { n: 3 });
      let noticed = false;
      queue.on('error', () => (noticed = true));
      proxy.set('refuse');
      await until('the connection noticed Redis is gone', () => (noticed ? true : undefined));
      await expect(queue.add('work', { n: 4 })).rejects.toThrow(/writeable|closed|ECONNRE/i);
    } finally {
      await app.close();
    }
  });

  it('shuts down when Redis stops answering while a job is in flight', async () => {
    proxy = await startTcpProxy(Number(new URL(REDIS_URL).port || 6379));
    let started = false;
    let release!: () => void;
    handle = () =>
      new Promise((resolve) => {
        started = true;
        release = () => resolve('released');
      });
    const app = await startApp({ redisUrl: proxy.url('redis'), queuePrefix: prefix });
    try {
      await app.get<Queue<{ n: number }>>(getQueueToken(QUEUE)).add('work', { n: 2 });
      await until('the worker took the job', () => (started ? true : undefined));
      // connections dropped, new ones accepted and never answered: QUIT and the job's completion would wait forever
      proxy.set('hang');
      await app.close();
    } finally {
      release?.();
    }
  });
});
