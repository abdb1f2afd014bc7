import { resolve } from 'node:path';
import { z } from 'zod';
import { ConfigError, env, loadConfig } from '@mp/platform';
import { loadChainManifest } from '@mp/chain';
import { parsePeriod, type Period } from '@mp/billing';

export const MERCHANT_CONFIG = Symbol('MERCHANT_CONFIG');

const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be a 0x-prefixed address');

const envSchema = z.object({
  MERCHANT_PORT: env.port(4040),
  MERCHANT_HOST: z.string().default('127.0.0.1'),
  MERCHANT_PUBLIC_URL: z
    .string()
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .optional(),
  DATABASE_URL: z.string().default('postgresql://postgres@127.0.0.1:5432/machine_payments'),
  DATABASE_POOL_SIZE: env.int(10, 1),
  FACILITATOR_URL: env.url('http://127.0.0.1:4020'),
  FACILITATOR_API_KEY: z.string().regex(/^\S+$/, 'must be one token without spaces').optional(),
  CHAIN_MANIFEST: z.string().default('.local/chain.json'),
  MERCHANT_NETWORK: z
    .string()
    .regex(/^eip155:[1-9][0-9]*$/, 'must be eip155:<chainId>')
    .optional(),
  MERCHANT_ASSET: address.optional(),
  MERCHANT_ASSET_NAME: z.string().min(1).optional(),
  MERCHANT_ASSET_VERSION: z.string().min(1).optional(),
  MERCHANT_PAY_TO: address.optional(),
  MERCHANT_PRICE: z
    .string()
    .regex(/^[1-9][0-9]*$/, 'must be a positive integer of atomic units')
    .default('10000'),
  MERCHANT_HAIKU_PRICE: z
    .string()
    .regex(/^[1-9][0-9]*$/, 'must be a positive integer of atomic units')
    .default('5000'),
  MERCHANT_A2A_SETTLE_RETRY_MS: env.int(10_000, 0),
  MERCHANT_A2A_RECOVER_AFTER_MS: env.int(120_000, 0),
  MERCHANT_FACILITATOR_TIMEOUT_MS: env.int(10_000, 1),
  MPP_REALM: z.string().min(1).default('merchant-agent.local'),
  MERCHANT_SESSION_UNIT_PRICE: z
    .string()
    .regex(/^[1-9][0-9]*$/, 'must be a positive integer of atomic units')
    .default('1000'),
  MERCHANT_SESSION_SUGGESTED_DEPOSIT: z
    .string()
    .regex(/^[1-9][0-9]*$/, 'must be a positive integer of atomic units')
    .default('24000'),
  MERCHANT_SESSION_VOUCHER_WAIT_MS: env.int(60_000, 1),
  MERCHANT_STRIPE_NETWORK_ID: z.string().min(1).optional(),
  MERCHANT_STRIPE_PRICE: z
    .string()
    .regex(/^[1-9][0-9]{0,7}$/, "must be a positive integer of the currency's minor units")
    .default('50'),
  MERCHANT_STRIPE_CURRENCY: z
    .string()
    .regex(/^[a-z]{3}$/, 'must be a lowercase ISO 4217 code')
    .default('usd'),
  LEDGER_URL: z
    .string()
    .url()
    .regex(/^https?:\/\//, 'must be an http(s) URL')
    .optional(),
  MERCHANT_SUBSCRIPTION_PLAN_ID: z.uuid('must be the UUID of a plan of the merchant in the ledger').optional(),
  MERCHANT_SUBSCRIPTION_PRODUCT: z
    .string()
    .regex(/^[a-z0-9][a-z0-9._-]{0,63}$/, "must be the plan's product: lowercase letters, digits, '.', '_' or '-'")
    .default('briefing'),
  MERCHANT_SUBSCRIPTION_AMOUNT: z
    .string()
    .regex(/^[1-9][0-9]*$/, 'must be a positive integer of atomic units')
    .default('100000'),
  MERCHANT_SUBSCRIPTION_PERIOD_UNIT: z.enum(['day', 'week', 'month']).default('month'),
  MERCHANT_SUBSCRIPTION_PERIOD_COUNT: z
    .string()
    .regex(/^[1-9][0-9]*$/, 'must be a positive integer')
    .default('1'),
  MERCHANT_SUBSCRIPTION_TERM_PERIODS: env.int(12, 1),
  MERCHANT_SUBSCRIPTION_SKILLS: z
    .string()
    .regex(/^([a-z0-9-]+(,[a-z0-9-]+)*)?$/, 'must be skill ids separated by commas')
    .default('forecast'),
  MERCHANT_PREPAID_TOP_UP_AMOUNT: z
    .string()
    .regex(/^[1-9][0-9]{0,30}$/, 'must be a positive integer of atomic units')
    .optional(),
  MERCHANT_BATCH_PRICE: z
    .string()
    .regex(/^[1-9][0-9]{0,30}$/, 'must be a positive integer of atomic units')
    .optional(),
  MERCHANT_BATCH_MIN_DEPOSIT: z
    .string()
    .regex(/^[1-9][0-9]{0,30}$/, 'must be a positive integer of atomic units')
    .optional(),
  // the contract's bounds: 15 minutes to 30 days
  MERCHANT_BATCH_WITHDRAW_DELAY_SECONDS: z.coerce.number().int().min(900).max(2_592_000).default(900),
  MERCHANT_BATCH_STORAGE_DIR: z.string().min(1).default('.local/batch-settlement'),
  MERCHANT_BATCH_SETTLE_EVERY_SECONDS: env.int(300, 0),
  MERCHANT_METERED_UNIT_PRICE: z
    .string()
    .regex(/^[1-9][0-9]{0,30}$/, 'must be a positive integer of atomic units')
    .default('100'),
});

export interface MerchantConfig {
  port: number;
  host: string;
  /** Where buyers reach this agent (no trailing slash): the A2A card's interface URLs and the payments' resource URLs. */
  publicUrl: string;
  databaseUrl: string;
  databasePoolSize: number;
  facilitatorUrl: string;
  /** The merchant's API key for the facilitator's /verify and /settle (sent as a Bearer token); unset in open mode. */
  facilitatorApiKey?: string;
  /** How long any one call to the facilitator may take (headers and body); a settlement that times out is an unknown outcome. */
  facilitatorTimeoutMs: number;
  /** What the paid endpoint charges: atomic units of one EIP-3009 token on one network. */
  price: { network: `${string}:${string}`; asset: string; amount: string; eip712: { name: string; version: string }; payTo: string };
  a2a: {
    /** What the A2A `haiku` skill charges, in atomic units of the price's asset (the `forecast` skill charges `price.amount`). */
    haikuPrice: string;
    /**
     * How often a settlement whose outcome the facilitator did not know yet is asked again (its task waits in
     * working until then); 0: not in this process.
     */
    settleRetryMs: number;
    /**
     * How long a payment may stay `submitted` or `verified` before the agent takes it for stopped (a crash in the
     * middle of its turn) and settles it itself; longer than a live turn can take.
     */
    recoverAfterMs: number;
  };
  mpp: {
    /** the protection space of the MPP challenges (`realm`) */
    realm: string;
    /** the stripe offer, made only when MERCHANT_STRIPE_NETWORK_ID names the seller's Stripe profile */
    stripe?: { networkId: string; amount: string; currency: string };
    /** the metered forecast stream paid through an MPP evm session (one unit = one forecast hour) */
    session: {
      /** atomic units of the price asset per forecast hour */
      unitPrice: string;
      /** the deposit the challenge suggests opening the channel with */
      suggestedDeposit: string;
      /** how long a stream waits for the voucher it asked for before it ends (Tempo: about 60 s) */
      voucherWaitMs: number;
    };
  };
  /** The subscription the agent sells (MPP `subscription` intent); unset unless MERCHANT_SUBSCRIPTION_PLAN_ID names a plan. */
  subscription?: SubscriptionConfig;
  /** Prepaid balances in the ledger and the metered skill they pay for; unset unless MERCHANT_PREPAID_TOP_UP_AMOUNT is set. */
  prepaid?: PrepaidConfig;
  /** The x402 batch-settlement route (GET /paid/metered-forecast); unset unless MERCHANT_BATCH_PRICE is set. */
  batchSettlement?: BatchSettlementConfig;
}

export interface BatchSettlementConfig {
  /** atomic units of the price asset each call charges (a voucher; nothing goes on chain per call) */
  price: string;
  /** the smallest deposit a payer's first call opens its channel with (the 402's `extra.minDeposit`) */
  minDeposit: string;
  /** the channel's withdrawDelay: how long a payer's own withdrawal waits, so the merchant can claim first */
  withdrawDelaySeconds: number;
  /** where the channels and their latest vouchers are kept (the official file storage): the merchant's claim to the money */
  storageDir: string;
  /** how often the vouchers are claimed and the claimed total settled to the merchant; 0: never on a timer */
  settleEverySeconds: number;
}

export interface PrepaidConfig {
  /** atomic units of the price asset one `top-up` adds to the payer's balance (paid with x402) */
  topUpAmount: string;
  /** atomic units the metered skill costs per unit (a word) */
  unitPrice: string;
  /** the ledger asset of the balances: `<network>/<asset, lowercase>`, as the ledger books the price asset's payments */
  ledgerAsset: string;
  /** where the ledger keeps the balances, with the merchant's API key (FACILITATOR_API_KEY: one key for both) */
  ledgerUrl: string;
  apiKey: string;
}

export interface SubscriptionConfig {
  /** the ledger plan the subscription is bound to (the challenge's `opaque.plan`): the ledger learns the product from it */
  planId: string;
  /** the plan's product: what GET /entitlements is asked about */
  product: string;
  /** atomic units of the price asset, per period */
  amount: string;
  period: Period;
  /** how many periods one evm grant covers: its subscriptionExpires lies that far ahead of the challenge */
  termPeriods: number;
  /** the A2A skills an entitled payer is served without paying per call */
  skills: string[];
  /** where the ledger answers GET /entitlements, with the merchant's API key (FACILITATOR_API_KEY: one key for both) */
  ledgerUrl: string;
  apiKey: string;
}

/** The merchant's asset and wallet come from the environment; what is unset comes from the local chain manifest. */
export function loadMerchantConfig(environment: NodeJS.ProcessEnv = process.env): MerchantConfig {
  const e = loadConfig(envSchema, environment);
  const complete = e.MERCHANT_NETWORK && e.MERCHANT_ASSET && e.MERCHANT_ASSET_NAME && e.MERCHANT_ASSET_VERSION && e.MERCHANT_PAY_TO;
  const local = complete ? undefined : localDefaults(e.CHAIN_MANIFEST);
  const subscription = e.MERCHANT_SUBSCRIPTION_PLAN_ID === undefined ? undefined : subscriptionConfig(e, e.MERCHANT_SUBSCRIPTION_PLAN_ID);
  const network = (e.MERCHANT_NETWORK ?? local!.network) as `${string}:${string}`;
  const asset = e.MERCHANT_ASSET ?? local!.asset;
  const prepaid =
    e.MERCHANT_PREPAID_TOP_UP_AMOUNT === undefined ? undefined : prepaidConfig(e, e.MERCHANT_PREPAID_TOP_UP_AMOUNT, `${network}/${asset.toLowerCase()}`);
  return {
    port: e.MERCHANT_PORT,
    host: e.MERCHANT_HOST,
    publicUrl: (e.MERCHANT_PUBLIC_URL ?? `http://${e.MERCHANT_HOST}:${e.MERCHANT_PORT}`).replace(/\/+$/, ''),
    databaseUrl: e.DATABASE_URL,
    databasePoolSize: e.DATABASE_POOL_SIZE,
    facilitatorUrl: e.FACILITATOR_URL,
    facilitatorApiKey: e.FACILITATOR_API_KEY,
    facilitatorTimeoutMs: e.MERCHANT_FACILITATOR_TIMEOUT_MS,
    price: {
      network,
      asset,
      amount: e.MERCHANT_PRICE,
      eip712: { name: e.MERCHANT_ASSET_NAME ?? local!.name, version: e.MERCHANT_ASSET_VERSION ?? local!.version },
      payTo: e.MERCHANT_PAY_TO ?? local!.payTo,
    },
    a2a: { haikuPrice: e.MERCHANT_HAIKU_PRICE, settleRetryMs: e.MERCHANT_A2A_SETTLE_RETRY_MS, recoverAfterMs: e.MERCHANT_A2A_RECOVER_AFTER_MS },
    mpp: {
      realm: e.MPP_REALM,
      session: {
        unitPrice: e.MERCHANT_SESSION_UNIT_PRICE,
        suggestedDeposit: e.MERCHANT_SESSION_SUGGESTED_DEPOSIT,
        voucherWaitMs: e.MERCHANT_SESSION_VOUCHER_WAIT_MS,
      },
      ...(e.MERCHANT_STRIPE_NETWORK_ID && {
        stripe: { networkId: e.MERCHANT_STRIPE_NETWORK_ID, amount: e.MERCHANT_STRIPE_PRICE, currency: e.MERCHANT_STRIPE_CURRENCY },
      }),
    },
    ...(subscription && { subscription }),
    ...(prepaid && { prepaid }),
    ...(e.MERCHANT_BATCH_PRICE && {
      batchSettlement: {
        price: e.MERCHANT_BATCH_PRICE,
        // room for a hundred calls unless said otherwise: the official server's own hint is ten
        minDeposit: e.MERCHANT_BATCH_MIN_DEPOSIT ?? (BigInt(e.MERCHANT_BATCH_PRICE) * 100n).toString(),
        withdrawDelaySeconds: e.MERCHANT_BATCH_WITHDRAW_DELAY_SECONDS,
        storageDir: resolve(e.MERCHANT_BATCH_STORAGE_DIR),
        settleEverySeconds: e.MERCHANT_BATCH_SETTLE_EVERY_SECONDS,
      },
    }),
  };
}

/** Balances live in the ledger, which serves only the merchant's API key. */
function prepaidConfig(e: z.infer<typeof envSchema>, topUpAmount: string, ledgerAsset: string): PrepaidConfig {
  const problems: string[] = [];
  if (!e.LEDGER_URL) problems.push('LEDGER_URL: required with MERCHANT_PREPAID_TOP_UP_AMOUNT (the balances are kept by the ledger)');
  if (!e.FACILITATOR_API_KEY) problems.push("FACILITATOR_API_KEY: required with MERCHANT_PREPAID_TOP_UP_AMOUNT (the ledger takes the merchant's API key)");
  if (problems.length) throw new ConfigError(problems);
  return { topUpAmount, unitPrice: e.MERCHANT_METERED_UNIT_PRICE, ledgerAsset, ledgerUrl: e.LEDGER_URL!.replace(/\/+$/, ''), apiKey: e.FACILITATOR_API_KEY! };
}

/** The subscription needs the ledger (entitlements) and the merchant's API key (the ledger serves no anonymous caller). */
function subscriptionConfig(e: z.infer<typeof envSchema>, planId: string): SubscriptionConfig {
  const problems: string[] = [];
  if (!e.LEDGER_URL) problems.push('LEDGER_URL: required with MERCHANT_SUBSCRIPTION_PLAN_ID (entitlements are asked of the ledger)');
  if (!e.FACILITATOR_API_KEY) problems.push("FACILITATOR_API_KEY: required with MERCHANT_SUBSCRIPTION_PLAN_ID (the ledger takes the merchant's API key)");
  let period: Period | undefined;
  try {
    period = parsePeriod(e.MERCHANT_SUBSCRIPTION_PERIOD_UNIT, e.MERCHANT_SUBSCRIPTION_PERIOD_COUNT);
  } catch (error) {
    problems.push(`MERCHANT_SUBSCRIPTION_PERIOD_COUNT: ${(error as Error).message}`);
  }
  if (problems.length) throw new ConfigError(problems);
  return {
    planId,
    product: e.MERCHANT_SUBSCRIPTION_PRODUCT,
    amount: e.MERCHANT_SUBSCRIPTION_AMOUNT,
    period: period!,
    termPeriods: e.MERCHANT_SUBSCRIPTION_TERM_PERIODS,
    skills: e.MERCHANT_SUBSCRIPTION_SKILLS.split(',').filter(Boolean),
    ledgerUrl: e.LEDGER_URL!.replace(/\/+$/, ''),
    apiKey: e.FACILITATOR_API_KEY!,
  };
}

function localDefaults(manifestPath: string) {
  try {
    const manifest = loadChainManifest(resolve(manifestPath));
    const { address, name, version } = manifest.tokens.usdc;
    return { network: manifest.network, asset: address, name, version, payTo: manifest.accounts.merchant.address };
  } catch (error) {
    throw new ConfigError([
      `CHAIN_MANIFEST: cannot load ${manifestPath} (${(error as Error).message}); start the local chain with \`npm run chain\`, or set MERCHANT_NETWORK, MERCHANT_ASSET, MERCHANT_ASSET_NAME, MERCHANT_ASSET_VERSION and MERCHANT_PAY_TO`,
    ]);
  }
}
