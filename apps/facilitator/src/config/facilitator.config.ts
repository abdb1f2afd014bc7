import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { privateKeyVerify } from 'secp256k1';
import { resolve } from 'node:path';
import { z } from 'zod';
import { env, loadConfig, ConfigError, queuePrefixOf, queuePrefixVar, trustProxyVar, type TrustProxy } from '@mp/platform';
import { loadChainManifest, type AssetConfig, type NetworkConfig } from '@mp/chain';
import type { Address, Hex } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import { parseSealingKeys, type SealingKey } from '../subscriptions/sealing';

export const FACILITATOR_CONFIG = Symbol('FACILITATOR_CONFIG');

// A key outside 1..n-1 would make viem throw a message that prints the key: refuse it here, naming only the variable.
const hexKey = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte private key')
  .refine((key) => privateKeyVerify(Buffer.from(key.slice(2), 'hex')), 'is not a valid secp256k1 private key');
const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed address');

const envSchema = z.object({
  FACILITATOR_PORT: env.port(4020),
  FACILITATOR_HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().default('postgresql://postgres@127.0.0.1:5432/machine_payments'),
  DATABASE_POOL_SIZE: env.int(20, 1),
  CHAIN_MANIFEST: z.string().default('.local/chain.json'),
  FACILITATOR_NETWORKS_FILE: z.string().optional(),
  FACILITATOR_SIGNER_KEYS: env.list(),
  FACILITATOR_EIP6492_FACTORIES: env.list().pipe(z.array(address)),
  FACILITATOR_GAS_CAP_BPS: z.coerce.number().int().min(1).max(10_000).optional(),
  FACILITATOR_NATIVE_PRICE: z
    .string()
    .regex(/^[1-9][0-9]{0,40}$/, 'atomic units of the asset per native token')
    .optional(),
  SETTLE_BUDGET_MS: env.int(60_000, 100),
  RPC_TIMEOUT_MS: env.int(10_000, 100),
  BODY_LIMIT_BYTES: env.int(64 * 1024, 1024),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  FACILITATOR_ROLE: z.enum(['all', 'api', 'worker']).default('all'),
  FACILITATOR_INSTANCE_ID: z
    .string()
    .regex(/^[\w.:-]{1,64}$/, 'letters, digits and . _ : - only')
    .optional(),
  QUEUE_PREFIX: queuePrefixVar(),
  SETTLE_WORKER_CONCURRENCY: env.int(64, 1),
  SIGNER_LEASE_MS: env.int(6_000, 1_000),
  SETTLE_JOB_LOCK_MS: env.int(5_000, 1_000),
  STUCK_TX_AFTER_MS: env.int(30_000, 100),
  RECOVERY_INTERVAL_MS: env.int(5_000, 100),
  SETTLE_BATCH_MAX: z.coerce.number().int().min(1).max(100).default(1),
  SIGNER_LEASES_PER_WORKER: env.int(0, 0),
  MAX_FEE_PER_GAS_WEI: z
    .string()
    .regex(/^[1-9][0-9]{0,30}$/, 'must be a positive integer number of wei')
    .optional(),
  SETTLE_BATCH_WINDOW_MS: env.int(20, 1),
  SIGNER_MIN_BALANCE_WEI: z
    .string()
    .regex(/^[0-9]{1,40}$/, 'must be an integer number of wei')
    .default('10000000000000000'),
  // merchants: API keys, rate limits, webhooks
  FACILITATOR_OPEN_MODE: env.bool(false),
  API_KEY_CACHE_MS: env.int(5_000, 0),
  RATE_LIMIT_PER_MINUTE: env.int(600, 0),
  RATE_LIMIT_BURST: z.coerce.number().int().min(1).optional(),
  AUTH_FAILURES_PER_MINUTE: env.int(30, 0),
  OPEN_MODE_RATE_LIMIT_PER_MINUTE: env.int(60, 0),
  OPEN_MODE_RATE_LIMIT_BURST: z.coerce.number().int().min(1).optional(),
  TRUST_PROXY: trustProxyVar(),
  WEBHOOK_MAX_ATTEMPTS: env.int(8, 1),
  WEBHOOK_TIMEOUT_MS: env.int(5_000, 100),
  WEBHOOK_RETRY_BASE_MS: env.int(1_000, 10),
  WEBHOOK_RETRY_MAX_MS: env.int(600_000, 10),
  WEBHOOK_POLL_MS: env.int(500, 10),
  WEBHOOK_ALLOW_PRIVATE: env.bool(false),
  OUTBOX_PUBLISH: env.bool(true),
  OUTBOX_POLL_MS: env.int(200, 10),
  OUTBOX_REPUBLISH_AFTER_MS: env.int(300_000, 0),
  // MPP and Stripe
  MPP_CHALLENGE_TTL_SECONDS: env.int(300, 10),
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/, 'must be a Stripe secret or restricted key (sk_test_..., sk_live_...)')
    .optional(),
  STRIPE_API_BASE: z.string().url().default('https://api.stripe.com'),
  STRIPE_API_VERSION: z.string().min(1).default('2026-07-29.preview'),
  STRIPE_SPT_PLACEMENT: z.enum(['top_level', 'payment_method_data']).default('top_level'),
  STRIPE_TIMEOUT_MS: env.int(20_000, 100),
  STRIPE_WEBHOOK_SECRET: z
    .string()
    .regex(/^whsec_/, 'must be a webhook signing secret (whsec_...)')
    .optional(),
  STRIPE_NETWORK_ID: z.string().min(1).optional(),
  // MPP subscriptions: the keys that seal pre-signed authorizations at rest; unset: the subscription intent is not offered
  SUBSCRIPTION_SEALING_KEYS: z.string().optional(),
  SUBSCRIPTION_WORKER_CONCURRENCY: env.int(16, 1),
  REVOCATION_POLL_MS: env.int(2_000, 10),
  REVOCATION_BLOCK_RANGE: env.int(2_000, 1),
  // refunds (issue 13): a refund wallet per merchant, JSON {"<merchant id>": "0x<private key>"}; unset: EVM refunds are denied
  REFUND_WALLET_KEYS: z.string().optional(),
  REFUND_WAIT_MS: env.int(10_000, 0),
  // x402 batch-settlement: the receiver-authorizer key (advertised in /supported, signs claim batches and refunds) and
  // the wallet that sends its transactions; unset sender: the scheme is not served
  BATCH_SETTLEMENT_AUTHORIZER_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte private key')
    .optional(),
  BATCH_SETTLEMENT_SENDER_KEY: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, 'must be a 0x-prefixed 32-byte private key')
    .optional(),
  BATCH_SETTLEMENT_WAIT_MS: env.int(15_000, 0),
  // MPP evm sessions: the payee keys the facilitator settles and closes channels with (local chain: the manifest's
  // merchant key when unset); none: the session intent is not offered
  SESSION_PAYEE_KEYS: env.list(),
  SESSION_WAIT_MS: env.int(15_000, 0),
  CLOCK_RPC_URL: z.string().url().optional(),
  // operator API (/admin) and bull-board (/admin/queues); unset or empty: both answer 404
  OPERATOR_TOKEN: z
    .string()
    .optional()
    .transform((v) => v || undefined)
    .pipe(
      z
        .string()
        .regex(/^[\x21-\x7e]{32,}$/, 'must be at least 32 printable ASCII characters without spaces')
        .optional(),
    ),
});

const networksFileSchema = z.object({
  networks: z
    .array(
      z.strictObject({
        network: z.string().regex(/^eip155:[1-9][0-9]*$/, 'must be eip155:<chainId>'),
        displayName: z.string().min(1),
        v1Names: z.array(z.string().min(1)).default([]),
        rpcUrls: z.array(z.string().url()).min(1),
        pollingIntervalMs: z.number().int().min(10).default(1_000),
        confirmations: z.number().int().min(1).max(1_000).default(1),
        signerKeyEnv: z.array(z.string().min(1)).min(1),
        /** the MPP evm session escrow (EvmPaymentChannelEscrow) on this network; unset: no sessions on it */
        sessionEscrow: address.optional(),
        eip6492AllowedFactories: z.array(address).default([]),
        assets: z
          .array(
            z.strictObject({
              address,
              symbol: z.string().min(1),
              decimals: z.number().int().min(0).max(36),
              eip712: z.strictObject({ name: z.string().min(1), version: z.string().min(1) }),
              gasCap: z
                .strictObject({
                  maxShareBps: z.number().int().min(1).max(10_000),
                  nativePrice: z.string().regex(/^[1-9][0-9]{0,40}$/, 'atomic units of the asset per native token, as a decimal string'),
                })
                .optional(),
            }),
          )
          .min(1),
      }),
    )
    .min(1),
});

export interface FacilitatorConfig {
  /** api answers HTTP; worker sends and confirms settlements; all does both (the default, and what tests run). */
  role: 'all' | 'api' | 'worker';
  /** development only: read the time from this chain's latest block (anvil), not the wall clock */
  clockRpcUrl?: string;
  /** Names this process in signer leases; a restart under the same id takes its leases back at once. */
  instanceId: string;
  redisUrl: string;
  /** Namespaces queues and leases in Redis: one per database, so deployments sharing a Redis never mix. */
  queuePrefix: string;
  workerConcurrency: number;
  signerLeaseMs: number;
  /** A settlement job's lock in BullMQ: a dead worker's jobs go to another within about 1.5× this. */
  jobLockMs: number;
  stuckTxAfterMs: number;
  recoveryIntervalMs: number;
  /** Up to this many payments of one network share one Multicall3 transaction (1: no batching). */
  batchMax: number;
  /** At most this many hot wallets per network held by one worker (0: all it can get), so wallets spread over workers. */
  signerLeasesPerWorker: number;
  /** How long a batch waits for more payments before it is sent. */
  batchWindowMs: number;
  /** Below this native balance a hot wallet is reported (log warning; the balance is also a metric). */
  signerMinBalanceWei: bigint;
  port: number;
  host: string;
  databaseUrl: string;
  databasePoolSize: number;
  settleBudgetMs: number;
  rpcTimeoutMs: number;
  bodyLimitBytes: number;
  networks: NetworkConfig[];
  /** true: /verify and /settle also answer requests without an API key (local demo and tests only). */
  openMode: boolean;
  /** How long a resolved API key is trusted before it is read again (revocation takes up to this long). */
  apiKeyCacheMs: number;
  /** Token bucket per API key: refills perMinute tokens a minute, holds at most burst; perMinute 0 turns it off. */
  rateLimit: { perMinute: number; burst: number };
  /** The same bucket per client address for requests without a key in open mode; perMinute 0 turns it off. */
  openModeRateLimit: { perMinute: number; burst: number };
  /** Failed API-key attempts one client address may make per minute before it gets 429 (0: no limit). */
  authFailuresPerMinute: number;
  /** who may name the client's address in X-Forwarded-For (what AUTH_FAILURES_PER_MINUTE counts): a proxy, the ledger */
  trustProxy: TrustProxy;
  webhooks: {
    maxAttempts: number;
    timeoutMs: number;
    retryBaseMs: number;
    retryMaxMs: number;
    pollMs: number;
    /** deliver to loopback, private, link-local and metadata addresses too (WEBHOOK_ALLOW_PRIVATE); off: refused */
    allowPrivate: boolean;
  };
  /** Publishing payment events to the ledger's BullMQ queue (worker role); republishAfterMs 0: never publish again. */
  outbox: { publish: boolean; pollMs: number; republishAfterMs: number };
  mpp: {
    /** Default lifetime of an issued challenge. */
    challengeTtlSeconds: number;
  };
  /** undefined: the stripe method is not offered. */
  stripe?: StripeConfig;
  refunds: {
    /**
     * The wallet each merchant refunds EVM payments from (REFUND_WALLET_KEYS), by merchant id: only a merchant listed
     * here can have EVM refunds, and never from the facilitator's own settlement wallets.
     */
    wallets: ReadonlyMap<string, Hex>;
    /** how long POST /refunds waits for an EVM refund's receipt before answering `pending` */
    waitMs: number;
  };
  /** Bearer token of the operator API (/admin) and bull-board (/admin/queues); undefined: both are off (404). */
  operatorToken?: string;
  /** x402 batch-settlement (BATCH_SETTLEMENT_*); undefined (no sender key): the scheme is not served. */
  batchSettlement?: BatchSettlementConfig;
  /** MPP subscriptions (issue 13); undefined (no SUBSCRIPTION_SEALING_KEYS): the subscription intent is not offered. */
  subscriptions?: SubscriptionsConfig;
  /** MPP evm sessions (issue 14); undefined (no payee key): the session intent is not offered. */
  sessions?: SessionsConfig;
}

export interface SessionsConfig {
  /**
   * The payee keys of session recipients (SESSION_PAYEE_KEYS) by lowercase address: only a recipient listed here can
   * be offered a session, since settle and close must come from the payee. Each key also sends its channels'
   * transactions (relayed opens and top-ups, settles, closes), so its nonces are never the signer pool's.
   */
  payeeKeys: ReadonlyMap<string, Hex>;
  /** how long a session credential follows its transaction's receipt before answering (SESSION_WAIT_MS) */
  waitMs: number;
}

export interface BatchSettlementConfig {
  /** sends deposit / claim / settle / refund transactions; never one of the exact settlement wallets (their nonces are the pool's) */
  senderKey: Hex;
  /** the receiverAuthorizer the facilitator signs for; undefined: servers sign claims and refunds themselves */
  authorizerKey?: Hex;
  /** how long /settle follows its transaction before answering settlement_pending */
  waitMs: number;
}

export interface SubscriptionsConfig {
  /** the first seals, all open (rotation: add the new key first, re-seal, then drop the old) */
  sealingKeys: SealingKey[];
  /** subscription-commands jobs one worker process runs at once */
  workerConcurrency: number;
  /** how often the revocation watcher reads AuthorizationCanceled logs */
  revocationPollMs: number;
  /** most blocks per eth_getLogs of the revocation watcher */
  revocationBlockRange: number;
}

export interface StripeConfig {
  secretKey: string;
  /** where the API is: https://api.stripe.com, or a local fake in tests and the demo */
  apiBase: URL;
  /** Stripe-Version sent with PaymentIntents (Shared Payment Tokens need a preview version) */
  apiVersion: string;
  /** where the Shared Payment Token goes in the PaymentIntent: top-level shared_payment_granted_token, or inside payment_method_data */
  sptPlacement: 'top_level' | 'payment_method_data';
  timeoutMs: number;
  /** verifies Stripe-Signature on POST /stripe/webhooks; undefined: that endpoint answers 404 */
  webhookSecret?: string;
  /** the seller's Stripe network id offered when a stripe offer names none */
  networkId?: string;
}

/**
 * Networks come from FACILITATOR_NETWORKS_FILE (production: Base, Base Sepolia, …, keys named by env var) or,
 * when that is unset, from the local chain manifest that `npm run chain` writes.
 */
export function loadFacilitatorConfig(environment: NodeJS.ProcessEnv = process.env): FacilitatorConfig {
  const e = loadConfig(envSchema, environment);
  if (e.FACILITATOR_NETWORKS_FILE && e.FACILITATOR_EIP6492_FACTORIES.length) {
    // Not silently ignored: an operator who sets it expects counterfactual wallets to be accepted somewhere.
    throw new ConfigError([
      "FACILITATOR_EIP6492_FACTORIES: applies to the local chain manifest only; with FACILITATOR_NETWORKS_FILE, list the factories in each network's eip6492AllowedFactories",
    ]);
  }
  const sealing = parseSealingKeys(e.SUBSCRIPTION_SEALING_KEYS);
  if (sealing.problems.length) throw new ConfigError(sealing.problems);
  const feeCap = e.MAX_FEE_PER_GAS_WEI === undefined ? undefined : BigInt(e.MAX_FEE_PER_GAS_WEI);
  const configured = e.FACILITATOR_NETWORKS_FILE
    ? networksFromFile(e.FACILITATOR_NETWORKS_FILE, environment)
    : networksFromManifest(e.CHAIN_MANIFEST, e.FACILITATOR_SIGNER_KEYS as Hex[], e.FACILITATOR_EIP6492_FACTORIES as Address[], manifestGasCap(e));
  const networks = configured.map((n) => (feeCap === undefined ? n : { ...n, maxFeePerGas: feeCap }));
  return {
    role: e.FACILITATOR_ROLE,
    clockRpcUrl: e.CLOCK_RPC_URL,
    instanceId: e.FACILITATOR_INSTANCE_ID ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`,
    redisUrl: e.REDIS_URL,
    queuePrefix: queuePrefixOf(e.QUEUE_PREFIX, e.DATABASE_URL),
    workerConcurrency: e.SETTLE_WORKER_CONCURRENCY,
    signerLeaseMs: e.SIGNER_LEASE_MS,
    jobLockMs: e.SETTLE_JOB_LOCK_MS,
    stuckTxAfterMs: e.STUCK_TX_AFTER_MS,
    recoveryIntervalMs: e.RECOVERY_INTERVAL_MS,
    batchMax: e.SETTLE_BATCH_MAX,
    signerLeasesPerWorker: e.SIGNER_LEASES_PER_WORKER,
    batchWindowMs: e.SETTLE_BATCH_WINDOW_MS,
    signerMinBalanceWei: BigInt(e.SIGNER_MIN_BALANCE_WEI),
    port: e.FACILITATOR_PORT,
    host: e.FACILITATOR_HOST,
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    settleBudgetMs: e.SETTLE_BUDGET_MS,
    rpcTimeoutMs: e.RPC_TIMEOUT_MS,
    bodyLimitBytes: e.BODY_LIMIT_BYTES,
    networks,
    openMode: e.FACILITATOR_OPEN_MODE,
    apiKeyCacheMs: e.API_KEY_CACHE_MS,
    authFailuresPerMinute: e.AUTH_FAILURES_PER_MINUTE,
    trustProxy: e.TRUST_PROXY,
    rateLimit: { perMinute: e.RATE_LIMIT_PER_MINUTE, burst: e.RATE_LIMIT_BURST ?? Math.max(1, e.RATE_LIMIT_PER_MINUTE) },
    openModeRateLimit: { perMinute: e.OPEN_MODE_RATE_LIMIT_PER_MINUTE, burst: e.OPEN_MODE_RATE_LIMIT_BURST ?? Math.max(1, e.OPEN_MODE_RATE_LIMIT_PER_MINUTE) },
    webhooks: {
      maxAttempts: e.WEBHOOK_MAX_ATTEMPTS,
      timeoutMs: e.WEBHOOK_TIMEOUT_MS,
      retryBaseMs: e.WEBHOOK_RETRY_BASE_MS,
      retryMaxMs: e.WEBHOOK_RETRY_MAX_MS,
      pollMs: e.WEBHOOK_POLL_MS,
      allowPrivate: e.WEBHOOK_ALLOW_PRIVATE,
    },
    outbox: { publish: e.OUTBOX_PUBLISH, pollMs: e.OUTBOX_POLL_MS, republishAfterMs: e.OUTBOX_REPUBLISH_AFTER_MS },
    mpp: { challengeTtlSeconds: e.MPP_CHALLENGE_TTL_SECONDS },
    refunds: { wallets: refundWallets(e.REFUND_WALLET_KEYS, networks), waitMs: e.REFUND_WAIT_MS },
    ...(e.OPERATOR_TOKEN && { operatorToken: e.OPERATOR_TOKEN }),
    ...(e.BATCH_SETTLEMENT_SENDER_KEY && {
      batchSettlement: {
        senderKey: batchSenderKey(e.BATCH_SETTLEMENT_SENDER_KEY as Hex, networks),
        authorizerKey: e.BATCH_SETTLEMENT_AUTHORIZER_KEY as Hex | undefined,
        waitMs: e.BATCH_SETTLEMENT_WAIT_MS,
      },
    }),
    ...sessionsConfig(e, networks),
    ...(sealing.keys.length && {
      subscriptions: {
        sealingKeys: sealing.keys,
        workerConcurrency: e.SUBSCRIPTION_WORKER_CONCURRENCY,
        revocationPollMs: e.REVOCATION_POLL_MS,
        revocationBlockRange: e.REVOCATION_BLOCK_RANGE,
      },
    }),
    ...(e.STRIPE_SECRET_KEY
      ? {
          stripe: {
            secretKey: e.STRIPE_SECRET_KEY,
            apiBase: new URL(e.STRIPE_API_BASE),
            apiVersion: e.STRIPE_API_VERSION,
            sptPlacement: e.STRIPE_SPT_PLACEMENT,
            timeoutMs: e.STRIPE_TIMEOUT_MS,
            ...(e.STRIPE_WEBHOOK_SECRET && { webhookSecret: e.STRIPE_WEBHOOK_SECRET }),
            ...(e.STRIPE_NETWORK_ID && { networkId: e.STRIPE_NETWORK_ID }),
          },
        }
      : {}),
  };
}

const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * REFUND_WALLET_KEYS: a JSON object of merchant id → private key. Problems name the merchant, never the key; a key of
 * one of the facilitator's settlement wallets is refused, so refunds can only spend what a merchant put there.
 */
export function refundWallets(raw: string | undefined, networks: NetworkConfig[]): ReadonlyMap<string, Hex> {
  const wallets = new Map<string, Hex>();
  if (raw === undefined || raw.trim() === '') return wallets;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new ConfigError(['REFUND_WALLET_KEYS: must be a JSON object of merchant id → 0x private key']);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ConfigError(['REFUND_WALLET_KEYS: must be a JSON object of merchant id → 0x private key']);
  const settlementKeys = new Set(networks.flatMap((n) => n.signerKeys.map((k) => k.toLowerCase())));
  const problems: string[] = [];
  for (const [merchantId, key] of Object.entries(parsed)) {
    if (!uuid.test(merchantId)) problems.push(`REFUND_WALLET_KEYS: "${merchantId.slice(0, 64)}" is not a merchant id (a UUID)`);
    else if (typeof key !== 'string' || !hexKey.safeParse(key).success)
      problems.push(`REFUND_WALLET_KEYS: the key of merchant ${merchantId} is not a 0x-prefixed 32-byte secp256k1 private key`);
    else if (settlementKeys.has(key.toLowerCase()))
      problems.push(`REFUND_WALLET_KEYS: the key of merchant ${merchantId} is one of the facilitator's settlement wallets, which never refund`);
    else wallets.set(merchantId.toLowerCase(), key as Hex);
  }
  if (problems.length) throw new ConfigError(problems);
  return wallets;
}

function networksFromFile(path: string, environment: NodeJS.ProcessEnv): NetworkConfig[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(resolve(path), 'utf8'));
  } catch (error) {
    throw new ConfigError([`FACILITATOR_NETWORKS_FILE: cannot read ${path}: ${(error as Error).message}`]);
  }
  const parsed = networksFileSchema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `FACILITATOR_NETWORKS_FILE ${path}: ${i.path.join('.')}: ${i.message}`));
  }
  const problems: string[] = [];
  const networks = parsed.data.networks.map((n) => {
    const signerKeys = n.signerKeyEnv.map((name) => {
      const value = environment[name];
      if (!value || !hexKey.safeParse(value).success)
        problems.push(`${name}: signer key for ${n.network} is missing, not a 32-byte hex key, or not a valid secp256k1 private key`);
      return value as Hex;
    });
    return {
      network: n.network,
      chainId: Number(n.network.slice('eip155:'.length)),
      displayName: n.displayName,
      v1Names: n.v1Names,
      rpcUrls: n.rpcUrls,
      pollingIntervalMs: n.pollingIntervalMs,
      confirmations: n.confirmations,
      signerKeys,
      eip6492AllowedFactories: n.eip6492AllowedFactories as Address[],
      ...(n.sessionEscrow && { sessionEscrow: n.sessionEscrow as Address }),
      assets: n.assets.map(({ gasCap, ...a }) => ({
        ...a,
        address: a.address as Address,
        ...(gasCap ? { gasCap: { maxShareBps: gasCap.maxShareBps, nativePrice: BigInt(gasCap.nativePrice) } } : {}),
      })),
    };
  });
  if (problems.length) throw new ConfigError(problems);
  return networks;
}

function networksFromManifest(path: string, keysOverride: Hex[], eip6492AllowedFactories: Address[], gasCap?: AssetConfig['gasCap']): NetworkConfig[] {
  let manifest;
  try {
    manifest = loadChainManifest(resolve(path));
  } catch (error) {
    throw new ConfigError([
      `CHAIN_MANIFEST: cannot load ${path} (${(error as Error).message}). Start the local chain with \`npm run chain\`, or set FACILITATOR_NETWORKS_FILE.`,
    ]);
  }
  const invalidKey = keysOverride.find((k) => !hexKey.safeParse(k).success);
  if (invalidKey !== undefined) throw new ConfigError(['FACILITATOR_SIGNER_KEYS: every entry must be a 0x-prefixed 32-byte private key']);
  const tokens = Object.values(manifest.tokens);
  return [
    {
      network: manifest.network,
      chainId: manifest.chainId,
      displayName: 'Local anvil',
      v1Names: ['anvil', 'localhost'],
      rpcUrls: [manifest.rpcUrl],
      pollingIntervalMs: 25,
      confirmations: 1,
      signerKeys: keysOverride.length ? keysOverride : manifest.accounts.facilitatorSigners.map((s) => s.privateKey as Hex),
      // Empty (fail closed) unless FACILITATOR_EIP6492_FACTORIES names factories.
      eip6492AllowedFactories,
      sessionEscrow: manifest.contracts.sessionEscrow as Address,
      sessionPayeeKey: manifest.accounts.merchant.privateKey as Hex,
      assets: tokens.map((t) => ({
        address: t.address as Address,
        symbol: t.symbol,
        decimals: t.decimals,
        eip712: { name: t.name, version: t.version },
        ...(gasCap ? { gasCap } : {}),
      })),
    },
  ];
}

/** Local manifest only: FACILITATOR_GAS_CAP_BPS and FACILITATOR_NATIVE_PRICE go together (the networks file has gasCap per asset). */
function manifestGasCap(e: { FACILITATOR_GAS_CAP_BPS?: number; FACILITATOR_NATIVE_PRICE?: string; FACILITATOR_NETWORKS_FILE?: string }): AssetConfig['gasCap'] {
  if (e.FACILITATOR_GAS_CAP_BPS === undefined && e.FACILITATOR_NATIVE_PRICE === undefined) return undefined;
  if (e.FACILITATOR_GAS_CAP_BPS === undefined || e.FACILITATOR_NATIVE_PRICE === undefined) {
    throw new ConfigError(['FACILITATOR_GAS_CAP_BPS and FACILITATOR_NATIVE_PRICE: set both or neither']);
  }
  if (e.FACILITATOR_NETWORKS_FILE)
    throw new ConfigError(['FACILITATOR_GAS_CAP_BPS: applies to the local chain manifest only; with FACILITATOR_NETWORKS_FILE, set gasCap on each asset']);
  return { maxShareBps: e.FACILITATOR_GAS_CAP_BPS, nativePrice: BigInt(e.FACILITATOR_NATIVE_PRICE) };
}

/** The batch-settlement sender must not be a settlement wallet: the signer pool owns those nonces. */
function batchSenderKey(key: Hex, networks: readonly { signerKeys: readonly Hex[] }[]): Hex {
  if (networks.some((n) => n.signerKeys.some((k) => k.toLowerCase() === key.toLowerCase()))) {
    throw new ConfigError(["BATCH_SETTLEMENT_SENDER_KEY: is one of the facilitator's settlement wallets; give batch-settlement a wallet of its own"]);
  }
  return key;
}

/**
 * SESSION_PAYEE_KEYS, or on the local chain (no networks file) the manifest's merchant key. A payee key must not be a
 * settlement wallet: the signer pool owns those nonces.
 */
function sessionsConfig(
  e: { SESSION_PAYEE_KEYS: string[]; SESSION_WAIT_MS: number; FACILITATOR_NETWORKS_FILE?: string },
  networks: readonly (NetworkConfig & { sessionPayeeKey?: Hex })[],
): { sessions?: SessionsConfig } {
  const keys = e.SESSION_PAYEE_KEYS.length ? e.SESSION_PAYEE_KEYS : networks.flatMap((n) => (n.sessionPayeeKey ? [n.sessionPayeeKey] : []));
  if (!keys.length) return {};
  const problems: string[] = [];
  const payeeKeys = new Map<string, Hex>();
  for (const [index, key] of keys.entries()) {
    if (!hexKey.safeParse(key).success) {
      problems.push(`SESSION_PAYEE_KEYS: entry ${index + 1} is not a valid 0x-prefixed secp256k1 private key`);
      continue;
    }
    if (networks.some((n) => n.signerKeys.some((k) => k.toLowerCase() === key.toLowerCase())))
      problems.push(`SESSION_PAYEE_KEYS: entry ${index + 1} is one of the facilitator's settlement wallets; a payee sends its own channel transactions`);
    payeeKeys.set(privateKeyToAddress(key as Hex).toLowerCase(), key as Hex);
  }
  if (problems.length) throw new ConfigError(problems);
  return { sessions: { payeeKeys, waitMs: e.SESSION_WAIT_MS } };
}
