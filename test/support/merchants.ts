import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { TEST_DATABASE_URL } from './facilitator';

const ROOT = path.resolve(__dirname, '../..');

export interface TestMerchant {
  merchantId: string;
  keyId: string;
  apiKey: string;
  webhookSecret: string;
}

/** scripts/merchants.mjs (the facilitator's merchant CLI) against the test database; its --json output. */
function merchantsCli(...args: string[]): string {
  const r = spawnSync(process.execPath, ['scripts/merchants.mjs', ...args, '--json'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: TEST_DATABASE_URL }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`merchants.mjs ${args[0]} failed: ${r.stderr}`);
  return r.stdout;
}

/** A merchant with an API key, and a webhook URL when given. */
export function createMerchant(name: string, webhookUrl?: string): TestMerchant {
  return JSON.parse(merchantsCli('create', '--name', name, ...(webhookUrl ? ['--webhook-url', webhookUrl] : []))) as TestMerchant;
}

/** Where the merchant's webhooks go. */
export function setWebhook(merchantId: string, url: string): void {
  merchantsCli('set-webhook', merchantId, url);
}

export function revokeKey(keyId: string): void {
  merchantsCli('keys', 'revoke', keyId);
}
