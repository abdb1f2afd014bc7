import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError, env, loadConfig, queuePrefixOf, queuePrefixVar } from '@mp/platform';
import { loadChainManifest } from '@mp/chain';

export const RECON_CONFIG = Symbol('RECON_CONFIG');

const CRON = /^(\S+\s+){4,5}\S+$/;

const envSchema = z.object({
  NODE_ENV: z.string().optional(),
  DATABASE_URL: z.string().default('postgresql://postgres@127.0.0.1:5432/machine_payments'),
  REDIS_URL: z
    .string()
    .regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL')
    .default('redis://127.0.0.1:6379'),
  QUEUE_PREFIX: queuePrefixVar(),
  CHAIN_MANIFEST: z.string().default('.local/chain.json'),
  RECON_CHAIN_RPC_URLS: z.string().optional(),
  RECON_EXPLORER_URLS: z.string().optional(),
  RECON_SESSION_ESCROWS: z.string().optional(),
  RECON_BATCH_SETTLEMENT_CONTRACTS: z.string().optional(),
  RECON_BLOCK_RANGE: env.int(2_000, 1),
  RECON_RPC_TIMEOUT_MS: env.int(10_000, 100),
  RECON_PENDING_WINDOW_MS: env.int(10 * 60_000, 0),
  RECON_MAX_PERIOD_DAYS: env.int(31, 1),
  RECON_STRIPE_FEES: env.bool(true),
  RECON_SCHEDULE: z
    .string()
    .refine((v) => v === 'off' || CRON.test(v.trim()), 'must be a cron pattern (5 or 6 fields) or off')
    .default('15 0 * * *'),
  RECON_SCHEDULE_PERIOD: z.enum(['hour', 'day']).default('day'),
  RECON_WORKER: env.bool(true),
  RECON_REPORT_LINK_SECRET: z.string().min(32, 'must be at least 32 characters').optional(),
  RECON_REPORT_LINK_TTL_SECONDS: env.int(7 * 24 * 3600, 60),
  STRIPE_SECRET_KEY: z
    .string()
    .regex(/^(sk|rk)_(test|live)_[A-Za-z0-9_]+$/, 'must be a Stripe secret or restricted key (rk_live_..., sk_test_...)')
    .optional(),
  STRIPE_API_BASE: z.string().url().default('https://api.stripe.com'),
  STRIPE_TIMEOUT_MS: env.int(20_000, 100),
});

export interface ChainNetwork {
  /** CAIP-2: eip155:8453 */
  network: string;
  chainId: number;
  /** tried in order (viem's fallback transport) */
  rpcUrls: string[];
  /** a block explorer's base URL (`https://basescan.org`): the HTML report links transactions to `<it>/tx/<hash>` */
  explorerUrl?: string;
}

export interface ReconciliationConfig {
  redisUrl: string;
  /** Namespaces the `reconciliation` queue in Redis: one per database, like the facilitator's. */
  queuePrefix: string;
  networks: ChainNetwork[];
  /**
   * The MPP session escrows the facilitator opens channels on, per network: their ChannelOpened logs to the merchant's
   * payees find channels the books do not know. Escrows of channels already booked are read whether listed or not.
   */
  sessionEscrows: { network: string; escrow: string }[];
  /**
   * The x402 batch-settlement contracts, per network: their ChannelCreated logs to the merchant's receivers find batch
   * channels the books do not know. Contracts of batch channels already booked are read whether listed or not.
   */
  batchSettlementContracts: { network: string; escrow: string }[];
  /** Most blocks one eth_getLogs asks for; halved while the node refuses the range. */
  blockRange: number;
  rpcTimeoutMs: number;
  /** How long the ledger and the outside may lag each other: younger unmatched entries are pending, not breaks. */
  pendingWindowMs: number;
  maxPeriodDays: number;
  /** Reconcile Stripe's processing fees (balance transactions) against the ledger's fee entries. */
  stripeFees: boolean;
  /** BullMQ cron pattern (UTC), or undefined: no scheduled runs. */
  schedule?: string;
  /** A scheduled run reconciles the last complete hour or day before it fires. */
  schedulePeriod: 'hour' | 'day';
  /** Run reconciliation jobs in this process (the API enqueues either way). */
  worker: boolean;
  /** Signs the links that open an HTML report without an API key. */
  reportLinkSecret: Buffer;
  reportLinkTtlSeconds: number;
  /** undefined: Stripe is not reconciled. */
  stripe?: { secretKey: string; apiBase: URL; timeoutMs: number };
}

export function loadReconciliationConfig(environment: NodeJS.ProcessEnv = process.env): ReconciliationConfig {
  const e = loadConfig(envSchema, environment);
  // a random per-process secret breaks links across replicas and restarts: production must name one
  if (e.NODE_ENV === 'production' && !e.RECON_REPORT_LINK_SECRET) {
    throw new ConfigError(['RECON_REPORT_LINK_SECRET: is required when NODE_ENV=production (at least 32 characters, the same on every ledger replica)']);
  }
  return {
    redisUrl: e.REDIS_URL,
    queuePrefix: queuePrefixOf(e.QUEUE_PREFIX, e.DATABASE_URL),
    networks: withExplorers(e.RECON_CHAIN_RPC_URLS ? parseRpcUrls(e.RECON_CHAIN_RPC_URLS) : manifestNetworks(e.CHAIN_MANIFEST), e.RECON_EXPLORER_URLS),
    sessionEscrows: e.RECON_SESSION_ESCROWS !== undefined ? parseEscrows(e.RECON_SESSION_ESCROWS) : manifestEscrows(e.CHAIN_MANIFEST),
    batchSettlementContracts:
      e.RECON_BATCH_SETTLEMENT_CONTRACTS !== undefined
        ? parseEscrows(e.RECON_BATCH_SETTLEMENT_CONTRACTS, 'RECON_BATCH_SETTLEMENT_CONTRACTS')
        : manifestEscrows(e.CHAIN_MANIFEST, 'batchSettlement'),
    blockRange: e.RECON_BLOCK_RANGE,
    rpcTimeoutMs: e.RECON_RPC_TIMEOUT_MS,
    pendingWindowMs: e.RECON_PENDING_WINDOW_MS,
    maxPeriodDays: e.RECON_MAX_PERIOD_DAYS,
    stripeFees: e.RECON_STRIPE_FEES,
    ...(e.RECON_SCHEDULE !== 'off' && { schedule: e.RECON_SCHEDULE.trim() }),
    schedulePeriod: e.RECON_SCHEDULE_PERIOD,
    worker: e.RECON_WORKER,
    // Without a configured secret (allowed outside production), links work only on the process that made them.
    reportLinkSecret: e.RECON_REPORT_LINK_SECRET ? Buffer.from(e.RECON_REPORT_LINK_SECRET, 'utf8') : randomBytes(32),
    reportLinkTtlSeconds: e.RECON_REPORT_LINK_TTL_SECONDS,
    ...(e.STRIPE_SECRET_KEY && { stripe: { secretKey: e.STRIPE_SECRET_KEY, apiBase: new URL(e.STRIPE_API_BASE), timeoutMs: e.STRIPE_TIMEOUT_MS } }),
  };
}

/** `eip155:8453=https://a|https://b;eip155:84532=https://c` */
export function parseRpcUrls(value: string): ChainNetwork[] {
  const networks = value
    .split(';')
    .map((part) => part.trim())
    .filter(Boolean)
    .map((part) => {
      const match = /^(eip155:([1-9][0-9]*))=(.+)$/.exec(part);
      const urls = match ? match[3].split('|').map((u) => u.trim()) : [];
      if (!match || urls.some((u) => !/^(https?|wss?):\/\/\S+$/.test(u))) {
        throw new ConfigError([`RECON_CHAIN_RPC_URLS: "${part.slice(0, 80)}" is not eip155:<chainId>=<url>[|<url>…]`]);
      }
      return { network: match[1], chainId: Number(match[2]), rpcUrls: urls };
    });
  const seen = new Set<string>();
  for (const n of networks) {
    if (seen.has(n.network)) throw new ConfigError([`RECON_CHAIN_RPC_URLS: ${n.network} is listed twice`]);
    seen.add(n.network);
  }
  return networks;
}

/** `eip155:8453=https://basescan.org;eip155:84532=https://sepolia.basescan.org`: each network must be one reconciled. */
export function withExplorers(networks: ChainNetwork[], value: string | undefined): ChainNetwork[] {
  if (!value?.trim()) return networks;
  const explorers = new Map<string, string>();
  for (const part of value
    .split(';')
    .map((p) => p.trim())
    .filter(Boolean)) {
    const match = /^(eip155:[1-9][0-9]*)=(https?:\/\/[^\s"'<>]+?)\/*$/.exec(part);
    if (!match) throw new ConfigError([`RECON_EXPLORER_URLS: "${part.slice(0, 80)}" is not eip155:<chainId>=<http(s) URL>`]);
    if (explorers.has(match[1])) throw new ConfigError([`RECON_EXPLORER_URLS: ${match[1]} is listed twice`]);
    if (!networks.some((n) => n.network === match[1]))
      throw new ConfigError([`RECON_EXPLORER_URLS: ${match[1]} is not a reconciled network (RECON_CHAIN_RPC_URLS or the chain manifest)`]);
    explorers.set(match[1], match[2]);
  }
  return networks.map((n) => (explorers.has(n.network) ? { ...n, explorerUrl: explorers.get(n.network) } : n));
}

/** `eip155:8453=0x…|0x…;eip155:84532=0x…` (empty: none). */
export function parseEscrows(value: string, variable = 'RECON_SESSION_ESCROWS'): { network: string; escrow: string }[] {
  return value
    .split(';')
    .map((part) => part.trim())
    .filter(Boolean)
    .flatMap((part) => {
      const match = /^(eip155:[1-9][0-9]*)=(.+)$/.exec(part);
      const escrows = match ? match[2].split('|').map((a) => a.trim()) : [];
      if (!match || escrows.some((a) => !/^0x[0-9a-fA-F]{40}$/.test(a)))
        throw new ConfigError([`${variable}: "${part.slice(0, 80)}" is not eip155:<chainId>=<0x address>[|<0x address>…]`]);
      return escrows.map((escrow) => ({ network: match[1], escrow: escrow.toLowerCase() }));
    });
}

/** Locally, the session escrow (or batch-settlement contract) the chain manifest names; none without a manifest. */
function manifestEscrows(path: string, contract: 'sessionEscrow' | 'batchSettlement' = 'sessionEscrow'): { network: string; escrow: string }[] {
  try {
    const manifest = loadChainManifest(resolve(path));
    return [{ network: manifest.network, escrow: manifest.contracts[contract].toLowerCase() }];
  } catch {
    return [];
  }
}

/** Locally, the chain `npm run chain` started; no manifest means no chain to scan (the ledger still boots). */
function manifestNetworks(path: string): ChainNetwork[] {
  try {
    const manifest = loadChainManifest(resolve(path));
    return [{ network: manifest.network, chainId: manifest.chainId, rpcUrls: [manifest.rpcUrl] }];
  } catch {
    return [];
  }
}
