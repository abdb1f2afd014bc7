import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { loadChainManifest } from '@mp/chain';
import { TEST_DATABASE_URL } from './facilitator';

const ROOT = path.resolve(__dirname, '../..');

export interface TestMerchant {
  merchantId: string;
  keyId: string;
  apiKey: string;
  webhookSecret: string;
}

export interface MerchantOptions {
  /** `<network>:<address>` the merchant is paid at; default: the test chain's merchant account */
  receivingAddresses?: string[];
  /** settlements may pay any address */
  allowAnyPayTo?: boolean;
}

/** scripts/merchants.mjs (the facilitator's merchant CLI) against the test database; its --json output. */
function merchantsCli(...args: string[]): string {
  const r = spawnSync(process.execPath, ['scripts/merchants.mjs', ...args, '--json'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: TEST_DATABASE_URL }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`merchants.mjs ${args[0]} failed: ${r.stderr}`);
  return r.stdout;
}

/** Where the test chain pays its merchant (manifest.accounts.merchant), as `<network>:<address>`. */
export function testMerchantReceivingAddress(): string {
  const manifest = loadChainManifest(process.env.CHAIN_MANIFEST);
  return `${manifest.network}:${manifest.accounts.merchant.address}`;
}

/**
 * A merchant with an API key, and a webhook URL when given. It declares the test chain's merchant account as its
 * receiving address unless told otherwise: settlements to an undeclared payTo are refused.
 */
export function createMerchant(name: string, webhookUrl?: string, options: MerchantOptions = {}): TestMerchant {
  const addresses = options.receivingAddresses ?? [testMerchantReceivingAddress()];
  return JSON.parse(
    merchantsCli(
      'create',
      '--name',
      name,
      ...(webhookUrl ? ['--webhook-url', webhookUrl] : []),
      ...addresses.flatMap((a) => ['--receiving-address', a]),
      ...(options.allowAnyPayTo ? ['--allow-any-pay-to'] : []),
    ),
  ) as TestMerchant;
}

/** Declares one more address (`<network>:<address>`) the merchant is paid at. */
export function declareReceivingAddress(merchantId: string, address: string): void {
  merchantsCli('receiving-addresses', 'add', merchantId, address);
}

/** Where the merchant's webhooks go. */
export function setWebhook(merchantId: string, url: string): void {
  merchantsCli('set-webhook', merchantId, url);
}

export function revokeKey(keyId: string): void {
  merchantsCli('keys', 'revoke', keyId);
}
