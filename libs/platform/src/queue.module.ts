import { BullModule, BullRegistrar, WorkerHost } from '@nestjs/bullmq';
import {
  type BeforeApplicationShutdown,
  type DynamicModule,
  Inject,
  Injectable,
  type InjectionToken,
  Logger,
  Module,
  type ModuleMetadata,
  type OnApplicationBootstrap,
  type OnModuleInit,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, ModuleRef } from '@nestjs/core';
import { CONNECTION_CLOSED_ERROR_MSG, FlowProducer, Queue, QueueEvents, type QueueOptions, Worker, type WorkerOptions } from 'bullmq';
import { Redis, type RedisOptions } from 'ioredis';
import { DEFAULT_READINESS_TIMEOUT_MS } from './readiness';
import { queueTelemetry } from './tracing';

/**
 * Queues the Nest way: `QueueModule.forRootAsync` once per app (one Redis connection factory, the app's queue prefix),
 * then `BullModule.registerQueue` for the queues a module adds to and `@Processor(name, options)` + `WorkerHost` for its
 * workers (with {@link WorkerOptionsFromConfig} for options the app's config decides). Plain Redis clients (leases,
 * rate limits) come from {@link RedisConnections}, with the same URL and options. One shutdown path closes them all
 * without hanging when Redis is unreachable.
 */

/** What an app's validated config says about its queues. */
export interface QueueConnectionConfig {
  redisUrl: string;
  /** from QUEUE_PREFIX or the database's name: see {@link queuePrefixOf} */
  queuePrefix: string;
}

/**
 * The one set of Redis options every queue, worker and publisher of an app connects with. No offline queue: while
 * Redis is unreachable a publisher fails at once (an API answers 503) instead of waiting without end, and a worker
 * retries on its own. `maxRetriesPerRequest: null` is what BullMQ requires of a worker's blocking connection.
 */
export function redisConnectionOptions(redisUrl: string): NonNullable<QueueOptions['connection']> {
  return { url: redisUrl, maxRetriesPerRequest: null, ...FAIL_FAST };
}

/** What every connection of an app has in common: no offline queue, and a bounded connect. */
const FAIL_FAST = { enableOfflineQueue: false, connectTimeout: 2_000 } as const satisfies RedisOptions;

/**
 * The shared BullMQ configuration of an app (what `BullModule.forRoot` takes), so every queue and worker registered
 * through it shares the connection options, the prefix and, while tracing is on, the telemetry that carries a job's
 * trace from producer to consumer.
 */
export function bullRootOptions(config: QueueConnectionConfig): Pick<QueueOptions, 'connection' | 'prefix' | 'telemetry'> {
  return { connection: redisConnectionOptions(config.redisUrl), prefix: config.queuePrefix, telemetry: queueTelemetry() };
}

/** How long shutdown waits for jobs in flight, and for Redis to take a queue's goodbye, before closing anyway. */
export const DEFAULT_QUEUE_SHUTDOWN_GRACE_MS = 3_000;
const QUEUE_SHUTDOWN_GRACE_MS = Symbol('QUEUE_SHUTDOWN_GRACE_MS');
const QUEUE_CONNECTION = Symbol('QUEUE_CONNECTION');

export interface QueueModuleOptions {
  imports?: ModuleMetadata['imports'];
  inject?: InjectionToken[];
  /** Usually reads the app's validated config: `(config) => ({ redisUrl: config.redisUrl, queuePrefix: config.queuePrefix })`. */
  useFactory: (...args: any[]) => QueueConnectionConfig | Promise<QueueConnectionConfig>;
  shutdownGraceMs?: number;
}

type Closable = Queue | QueueEvents | FlowProducer;
const closing = new WeakMap<Worker | Closable, Promise<void>>();

/** Resolves true when `promise` settles (either way) within `ms`, false otherwise. */
async function settlesWithin(promise: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), ms).unref()));
  const settled = promise.then(
    () => true,
    () => true,
  );
  return Promise.race([settled, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Closes a worker: jobs in flight get `graceMs` to finish (pause waits for them), then it closes without waiting more.
 * A job still running then loses its lock and is retried by a worker, as after a crash. Idempotent.
 */
export function closeWorker(worker: Worker, graceMs = DEFAULT_QUEUE_SHUTDOWN_GRACE_MS): Promise<void> {
  let closed = closing.get(worker);
  if (!closed) {
    closed = (async () => {
      await settlesWithin(worker.pause(false), graceMs);
      // force: no QUIT to a Redis that may not answer, and no second wait for the jobs
      await settlesWithin(worker.close(true), graceMs);
    })();
    closing.set(worker, closed);
  }
  return closed;
}

/**
 * Closes a queue (or queue events, flow producer) by dropping its connection: no QUIT, which a Redis that does not
 * answer would leave pending (and which fails at once on a connection that is down, an error Nest's BullModule would
 * log when it closes the queue again). Bounded by `graceMs`. Idempotent.
 */
export function closeQueue(queue: Closable, graceMs = DEFAULT_QUEUE_SHUTDOWN_GRACE_MS): Promise<void> {
  let closed = closing.get(queue);
  if (!closed) {
    closed = (async () => {
      // the backend's close is what queue.close() awaits too, so Nest's own close of the queue resolves at once after this
      const dropped = queue instanceof FlowProducer ? queue.close() : queue.getBackend().close(true);
      if (!(await settlesWithin(dropped, graceMs))) await settlesWithin(queue.disconnect(), graceMs);
    })();
    closing.set(queue, closed);
  }
  return closed;
}

/**
 * Waits at most `timeoutMs` for a queue's connection, and says whether it is ready. For a boot step that wants Redis
 * (e.g. setting a job scheduler) but must not hang on it: BullMQ itself would wait without end.
 */
export async function whenQueueReady(queue: Queue, timeoutMs = DEFAULT_READINESS_TIMEOUT_MS): Promise<boolean> {
  const ready = queue.waitUntilReady().then(
    () => true,
    () => false,
  );
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), timeoutMs).unref()));
  return Promise.race([ready, timeout]).finally(() => clearTimeout(timer));
}

/**
 * The app's plain Redis clients (signer leases, rate limits: what is not a queue), from the same URL and fail-fast
 * options as its queues, and closed on the same shutdown path (after the workers and queues, so a provider's own onModuleDestroy may
 * still use its client, e.g. to give back a lease). A command fails rather than waits while Redis is away: no offline
 * queue, one retry of a command whose connection dropped.
 */
@Injectable()
export class RedisConnections {
  private readonly logger = new Logger('Redis');
  private readonly clients = new Set<Redis>();

  constructor(@Inject(QUEUE_CONNECTION) private readonly config: QueueConnectionConfig) {}

  /** A new client; `purpose` names it in the debug log of its connection errors; `options` add to the app's (e.g. `commandTimeout`). */
  create(purpose: string, options: RedisOptions = {}): Redis {
    const client = new Redis(this.config.redisUrl, { ...FAIL_FAST, maxRetriesPerRequest: 1, ...options });
    client.on('error', (error: Error) => this.logger.debug(`${purpose}: ${error.message}`));
    this.clients.add(client);
    return client;
  }

  /** Drops every client's connection (no QUIT, which a Redis that does not answer would leave pending). */
  disconnectAll(): void {
    for (const client of this.clients) client.disconnect();
    this.clients.clear();
  }
}

/**
 * A `@Processor` whose worker options come from the app's config: a decorator's options are fixed when its class is
 * defined, and BullMQ fixes some at the worker's creation (the lock duration, which its lock renewal is built on), so
 * neither the decorator nor a change after creation can take them. QueueModule merges `workerOptions()` over the
 * decorator's options when it creates the worker.
 */
export interface WorkerOptionsFromConfig {
  workerOptions(): Omit<WorkerOptions, 'connection'>;
}

function hasWorkerOptionsFromConfig(host: WorkerHost): host is WorkerHost & WorkerOptionsFromConfig {
  return typeof (host as Partial<WorkerOptionsFromConfig>).workerOptions === 'function';
}

/** Where @nestjs/bullmq keeps a class's `@Processor(name, workerOptions)` options (queue.module.e2e-spec checks it still does). */
const WORKER_OPTIONS_METADATA = 'bullmq:worker_metadata';
/** Each processor class's options as its decorator declared them, before any app's config was merged in. */
const declaredWorkerOptions = new WeakMap<object, Omit<WorkerOptions, 'connection'>>();

/**
 * Makes a worker wait (its runRetryDelay) while Redis is down instead of spinning. Our clients fail fast
 * (`enableOfflineQueue: false`), so a command on a connection that is down fails with ioredis's "Stream isn't
 * writeable …", which BullMQ 6 does not take for a connection error: a worker that was not drained (a job scheduler's
 * next job pending) then asks again at once, forever, and the process spins at 100 % CPU, its timers starved (found by
 * faults.e2e-spec with the session settlement schedule). Renamed to BullMQ's own connection-closed message, it is
 * retried after the delay like any outage. Hand-written: a workaround of the library's error classification.
 */
function waitOutRedisOutages(worker: Worker): void {
  const target = worker as unknown as { moveToActive: (...args: unknown[]) => Promise<unknown> };
  const moveToActive = target.moveToActive.bind(worker);
  target.moveToActive = async (...args) => {
    try {
      return await moveToActive(...args);
    } catch (error) {
      if (error instanceof Error && error.message.includes("Stream isn't writeable")) error.message = CONNECTION_CLOSED_ERROR_MSG;
      throw error;
    }
  };
}

/**
 * Every queue and worker of the app (found among its providers): their workers created, their errors logged at debug
 * (a Redis outage would otherwise print one on every reconnect; `/ready` is where it shows), and the one shutdown
 * path, before Nest's BullModule closes them (which then finds them closed): workers first, so the jobs they finish
 * can still be recorded, then queues, then the plain Redis clients. A worker that must stop before something its jobs
 * use closes (the database: onModuleDestroy) closes itself then with {@link closeWorker}, which this path then finds done.
 */
@Injectable()
export class QueueLifecycle implements OnModuleInit, OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('Queues');

  constructor(
    private readonly discovery: DiscoveryService,
    private readonly moduleRef: ModuleRef,
    private readonly connections: RedisConnections,
    @Inject(QUEUE_SHUTDOWN_GRACE_MS) private readonly graceMs: number,
  ) {}

  onModuleInit(): void {
    this.registerWorkers();
    for (const worker of this.workers()) waitOutRedisOutages(worker);
    for (const queue of this.queues()) {
      const name = queue instanceof FlowProducer ? 'flow producer' : queue.name;
      (queue as Queue).on('error', (error: Error) => this.logger.debug(`${name}: ${error.message}`));
    }
  }

  /** Workers exist from onModuleInit on; one without an error listener of its own gets this one. */
  onApplicationBootstrap(): void {
    for (const worker of this.workers()) {
      if (worker.listenerCount('error') === 0) worker.on('error', (error: Error) => this.logger.debug(`${worker.name} worker: ${error.message}`));
    }
  }

  async beforeApplicationShutdown(): Promise<void> {
    await Promise.all(this.workers().map((worker) => closeWorker(worker, this.graceMs)));
    await Promise.all(this.queues().map((queue) => closeQueue(queue, this.graceMs)));
    this.connections.disconnectAll();
  }

  /**
   * Creates the workers of every `@Processor` (BullModule's own registration is off: manualRegistration), with the
   * options of a {@link WorkerOptionsFromConfig} merged over its decorator's. The merged options are set as its class's
   * @Processor options and the workers created in one synchronous step, so two apps in one process (as in tests)
   * never take each other's.
   */
  private registerWorkers(): void {
    for (const host of this.hosts()) {
      if (!hasWorkerOptionsFromConfig(host)) continue;
      const type = host.constructor;
      if (!declaredWorkerOptions.has(type)) declaredWorkerOptions.set(type, Reflect.getMetadata(WORKER_OPTIONS_METADATA, type) ?? {});
      Reflect.defineMetadata(WORKER_OPTIONS_METADATA, { ...declaredWorkerOptions.get(type), ...host.workerOptions() }, type);
    }
    this.registrar()?.register();
  }

  /** BullModule's registrar, present once a module registers a queue (none: no queue, no worker). */
  private registrar(): BullRegistrar | undefined {
    try {
      return this.moduleRef.get(BullRegistrar, { strict: false });
    } catch {
      return undefined;
    }
  }

  private hosts(): WorkerHost[] {
    return this.discovery
      .getProviders()
      .map((wrapper) => wrapper.instance as unknown)
      .filter((instance): instance is WorkerHost => instance instanceof WorkerHost);
  }

  private workers(): Worker[] {
    return this.hosts().flatMap((host) => {
      try {
        return [host.worker];
      } catch {
        return []; // not registered (yet): nothing to close
      }
    });
  }

  private queues(): Closable[] {
    return this.discovery
      .getProviders()
      .map((wrapper) => wrapper.instance as unknown)
      .filter((instance): instance is Closable => instance instanceof Queue || instance instanceof QueueEvents || instance instanceof FlowProducer);
  }
}

/** `QueueModule.forRootAsync({ inject: [APP_CONFIG], useFactory: (config) => ({ redisUrl, queuePrefix }) })`, once per app. */
@Module({})
export class QueueModule {
  static forRootAsync(options: QueueModuleOptions): DynamicModule {
    return {
      module: QueueModule,
      global: true,
      imports: [
        ...(options.imports ?? []),
        DiscoveryModule,
        BullModule.forRootAsync({
          imports: options.imports,
          inject: options.inject,
          useFactory: async (...args: unknown[]) => bullRootOptions(await options.useFactory(...args)),
          // QueueLifecycle creates the workers, so that options from the app's config reach them
          extraOptions: { manualRegistration: true },
        }),
      ],
      providers: [
        { provide: QUEUE_SHUTDOWN_GRACE_MS, useValue: options.shutdownGraceMs ?? DEFAULT_QUEUE_SHUTDOWN_GRACE_MS },
        { provide: QUEUE_CONNECTION, inject: options.inject ?? [], useFactory: options.useFactory },
        RedisConnections,
        QueueLifecycle,
      ],
      exports: [BullModule, RedisConnections],
    };
  }
}
