import { execFile, spawnSync } from 'node:child_process';
import path from 'node:path';
import { loadChainManifest } from '@mp/chain';
import { TEST_DATABASE_URL, TEST_OPERATOR_TOKEN } from './facilitator';

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

/** test/support/merchant-fixture.mjs against the test database, synchronously (specs call these without awaiting). */
function fixture(command: Record<string, unknown>): any {
  const r = spawnSync(process.execPath, [path.join(__dirname, 'merchant-fixture.mjs'), JSON.stringify(command)], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: TEST_DATABASE_URL },
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`merchant fixture ${String(command.op)} failed: ${r.stderr}`);
  return JSON.parse(r.stdout);
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
  return fixture({
    op: 'create',
    name,
    webhookUrl,
    receivingAddresses: options.receivingAddresses ?? [testMerchantReceivingAddress()],
    allowAnyPayTo: options.allowAnyPayTo,
  });
}

/** Declares one more address (`<network>:<address>`) the merchant is paid at. */
export function declareReceivingAddress(merchantId: string, address: string): void {
  fixture({ op: 'declare', merchantId, address });
}

/** Where the merchant's webhooks go. */
export function setWebhook(merchantId: string, url: string): void {
  fixture({ op: 'set-webhook', merchantId, url });
}

export function revokeKey(keyId: string): void {
  fixture({ op: 'revoke', keyId });
}

export interface CliResult {
  /** the exit code (null when killed by a signal) */
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * scripts/merchants.mjs against a facilitator's operator API, asynchronously: the facilitator often runs in the
 * test's own process, which a synchronous spawn would block.
 */
export function merchantsCli(facilitatorUrl: string, ...args: string[]): Promise<CliResult> {
  return new Promise((resolve) =>
    execFile(
      process.execPath,
      ['scripts/merchants.mjs', ...args],
      { cwd: ROOT, env: { ...process.env, FACILITATOR_URL: facilitatorUrl, OPERATOR_TOKEN: TEST_OPERATOR_TOKEN }, encoding: 'utf8' },
      (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr }),
    ),
  );
}
