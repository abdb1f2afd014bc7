import { z } from 'zod';
import { env, loadConfig, queuePrefixOf, queuePrefixVar, trustProxyVar, type TrustProxy } from '@mp/platform';
import { loadReconciliationConfig, type ReconciliationConfig } from './reconciliation/reconciliation.config';

export const LEDGER_CONFIG = Symbol('LEDGER_CONFIG');

/** TigerBeetle's largest batch: a request carries at most this many transfers by default. */
const TIGERBEETLE_BATCH_MAX = 8189;

const envSchema = z.object({
  LEDGER_PORT: env.port(4030),
  LEDGER_HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().default('postgresql://postgres@127.0.0.1:5432/machine_payments'),
  DATABASE_POOL_SIZE: env.int(10, 1),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  FACILITATOR_URL: env.url('http://127.0.0.1:4020'),
  FACILITATOR_TIMEOUT_MS: env.int(3_000, 100),
  API_KEY_CACHE_MS: env.int(5_000, 0),
  BODY_LIMIT_BYTES: env.int(4 * 1024 * 1024, 1024),
  LEDGER_BATCH_MAX: z.coerce.number().int().min(1).max(TIGERBEETLE_BATCH_MAX).default(TIGERBEETLE_BATCH_MAX),
  LEDGER_WRITE_CONCURRENCY: env.int(2, 1),
  USAGE_WRITE_CONCURRENCY: env.int(4, 1),
  PENDING_EXPIRY_INTERVAL_MS: env.int(1_000, 0),
  QUEUE_PREFIX: queuePrefixVar(),
  TRUST_PROXY: trustProxyVar(),
  LEDGER_INGEST: env.bool(true),
  LEDGER_INGEST_CONCURRENCY: env.int(4, 1),
  RENEWAL_SCAN_EVERY_MS: env.int(60_000, 0),
  CLOCK_RPC_URL: z.string().url().optional(),
  RENEWAL_SCAN_BATCH: z.coerce.number().int().min(1).max(5_000).default(500),
  SUBSCRIPTION_COMMAND_REPUBLISH_AFTER_MS: env.int(10 * 60_000, 1_000),
});

export interface LedgerConfig {
  port: number;
  host: string;
  databaseUrl: string;
  databasePoolSize: number;
  redisUrl: string;
  /** where merchants' API keys are resolved (GET /merchants/me); the ledger never reads the facilitator's tables */
  facilitatorUrl: string;
  facilitatorTimeoutMs: number;
  /** how long a resolved API key is trusted before it is asked again (a revoked key works at most this long) */
  apiKeyCacheMs: number;
  bodyLimitBytes: number;
  /** most accounts or transfers in one request */
  batchMax: number;
  /** write transactions one process runs at once; concurrent requests beyond that share the next transaction */
  writeConcurrency: number;
  /** usage-event INSERTs one process runs at once (its own connections); concurrent one-event requests share the next */
  usageWriteConcurrency: number;
  /** how often pending transfers past their timeout are released; 0: never (another replica does it) */
  pendingExpiryIntervalMs: number;
  /** who may name the client's address in X-Forwarded-For; the ledger passes that address on to the facilitator */
  trustProxy: TrustProxy;
  /** namespaces the BullMQ queues in Redis; the same as the facilitator's, whose `payment-events` the ledger consumes */
  queuePrefix: string;
  /** book the facilitator's payment events in this process */
  ingest: boolean;
  /** payment events booked at once (events of one payment are still booked in order of their effects) */
  ingestConcurrency: number;
  /** RECON_*: reconciliation against the chain and Stripe */
  reconciliation: ReconciliationConfig;
  /** subscriptions (issue 13) */
  billing: {
    /** how often the renewal scan runs (a BullMQ job scheduler); 0: never in this deployment */
    renewalScanEveryMs: number;
    /** development only: read the time from this chain's latest block (anvil), not the wall clock */
    clockRpcUrl?: string;
    /** subscriptions one scan transaction takes */
    renewalScanBatch: number;
    /** a charge or cancel command without an outcome after this long is published again (same command id) */
    commandRepublishAfterMs: number;
  };
}

export function loadLedgerConfig(environment: NodeJS.ProcessEnv = process.env): LedgerConfig {
  const e = loadConfig(envSchema, environment);
  return {
    port: e.LEDGER_PORT,
    host: e.LEDGER_HOST,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    redisUrl: e.REDIS_URL,
    facilitatorUrl: e.FACILITATOR_URL.replace(/\/+$/, ''),
    facilitatorTimeoutMs: e.FACILITATOR_TIMEOUT_MS,
    apiKeyCacheMs: e.API_KEY_CACHE_MS,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    batchMax: e.LEDGER_BATCH_MAX,
    writeConcurrency: e.LEDGER_WRITE_CONCURRENCY,
    usageWriteConcurrency: e.USAGE_WRITE_CONCURRENCY,
    pendingExpiryIntervalMs: e.PENDING_EXPIRY_INTERVAL_MS,
    queuePrefix: queuePrefixOf(e.QUEUE_PREFIX, e.DATABASE_URL),
    trustProxy: e.TRUST_PROXY,
    ingest: e.LEDGER_INGEST,
    ingestConcurrency: e.LEDGER_INGEST_CONCURRENCY,
    reconciliation: loadReconciliationConfig(environment),
    billing: {
      renewalScanEveryMs: e.RENEWAL_SCAN_EVERY_MS,
      clockRpcUrl: e.CLOCK_RPC_URL,
      renewalScanBatch: e.RENEWAL_SCAN_BATCH,
      commandRepublishAfterMs: e.SUBSCRIPTION_COMMAND_REPUBLISH_AFTER_MS,
    },
  };
}
