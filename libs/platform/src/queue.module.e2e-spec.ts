import { randomUUID } from 'node:crypto';
import { BullModule, getQueueToken, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Module } from '@nestjs/common';
import { Test, type TestingModule } from '@nestjs/testing';
import type { Job, Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { until } from '../../../test/support/webhook-receiver';
import { waitForRedis } from './readiness';
import { QueueModule, RedisConnections, type QueueConnectionConfig, type WorkerOptionsFromConfig } from './queue.module';

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const QUEUE = 'platform-queue-test';
const CONFIGURED_QUEUE = 'platform-queue-configured';
const APP_CONFIG = Symbol('APP_CONFIG');

/** An app's config as the tests give it: the queue connection, and a lock duration its processor takes. */
type TestConfig = QueueConnectionConfig & { lockMs?: number };

/** What the test's worker does with a job; set per test. */
let handle: (job: Job<{ n: number }>) => Promise<string> = async (job) => `done ${job.data.n}`;

@Processor(QUEUE)
class TestProcessor extends WorkerHost {
  process(job: Job<{ n: number }>): Promise<string> {
    return handle(job);
  }
}

/** Its worker's lock duration comes from the app's config, its stall count from its decorator. */
@Processor(CONFIGURED_QUEUE, { maxStalledCount: 7, autorun: false })
class ConfiguredProcessor extends WorkerHost implements WorkerOptionsFromConfig {
  constructor(@Inject(APP_CONFIG) private readonly config: TestConfig) {
    super();
  }

  workerOptions() {
    return { lockDuration: this.config.lockMs };
  }

  process(): Promise<string> {
    return Promise.resolve('done');
  }
}

/** An app as the apps build theirs: its validated config in a provider, the queue module reading it. */
async function startApp(config: TestConfig, { init = true } = {}): Promise<TestingModule> {
  @Module({ providers: [{ provide: APP_CONFIG, useValue: config }], exports: [APP_CONFIG] })
  class ConfigModule {}
  const app = await Test.createTestingModule({
    imports: [
      ConfigModule,
      QueueModule.forRootAsync({
        imports: [ConfigModule],
        inject: [APP_CONFIG],
        useFactory: ({ redisUrl, queuePrefix }: TestConfig) => ({ redisUrl, queuePrefix }),
        shutdownGraceMs: 500,
      }),
      BullModule.registerQueue({ name: QUEUE, defaultJobOptions: { removeOnComplete: false } }, { name: CONFIGURED_QUEUE }),
    ],
    providers: [TestProcessor, ...(config.lockMs ? [ConfiguredProcessor] : [])],
  }).compile();
  if (init) await app.init();
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

  it('gives a processor’s worker the options the app’s config decides, over its decorator’s, per app', async () => {
    // both built before either starts: each worker still gets its own app's lock duration
    const first = await startApp({ redisUrl: REDIS_URL, queuePrefix: prefix, lockMs: 1_500 }, { init: false });
    const second = await startApp({ redisUrl: REDIS_URL, queuePrefix: prefix, lockMs: 4_000 }, { init: false });
    try {
      await first.init();
      await second.init();
      const [a, b] = [first, second].map((app) => app.get(ConfiguredProcessor).worker.opts);
      expect(a).toMatchObject({ lockDuration: 1_500, maxStalledCount: 7, autorun: false, prefix });
      expect(b).toMatchObject({ lockDuration: 4_000, maxStalledCount: 7, autorun: false, prefix });
      // and one without runtime options keeps BullMQ's defaults
      expect(first.get(TestProcessor).worker.opts).toMatchObject({ lockDuration: 30_000, maxStalledCount: 1 });
    } finally {
      await first.close();
      await second.close();
    }
  });

  it('gives plain Redis clients from the app’s connection, and closes them on shutdown', async () => {
    const app = await startApp({ redisUrl: REDIS_URL, queuePrefix: prefix });
    const client = app.get(RedisConnections).create('test', { commandTimeout: 250 });
    try {
      expect(await waitForRedis(client)).toBe(true); // no offline queue: a command before the connection is up fails
      await client.set(`${prefix}:plain`, 'yes');
      expect(await redis.get(`${prefix}:plain`)).toBe('yes');
      expect(client.options).toMatchObject({ enableOfflineQueue: false, maxRetriesPerRequest: 1, commandTimeout: 250 });
    } finally {
      await app.close();
    }
    expect(await until('the client closed', () => (client.status === 'end' ? client.status : undefined))).toBe('end');
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
