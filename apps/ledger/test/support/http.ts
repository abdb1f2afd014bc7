import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { TEST_DATABASE_URL } from './ledger-app';

const ROOT = path.resolve(__dirname, '../../../..');

export interface TestMerchant {
  merchantId: string;
  keyId: string;
  apiKey: string;
  webhookSecret: string;
}

/** scripts/merchants.mjs (the facilitator's merchant CLI) against the test database. */
function merchantsCli(...args: string[]): string {
  const r = spawnSync(process.execPath, ['scripts/merchants.mjs', ...args, '--json'], { cwd: ROOT, env: { ...process.env, DATABASE_URL: TEST_DATABASE_URL }, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`merchants.mjs ${args[0]} failed: ${r.stderr}`);
  return r.stdout;
}

/** A merchant with an API key. */
export function createMerchant(name: string): TestMerchant {
  return JSON.parse(merchantsCli('create', '--name', name)) as TestMerchant;
}

/** Where the merchant's webhooks go (the facilitator delivers them). */
export function setWebhook(merchantId: string, url: string): void {
  merchantsCli('set-webhook', merchantId, url);
}

export function revokeKey(keyId: string): void {
  merchantsCli('keys', 'revoke', keyId);
}

export interface Answer {
  status: number;
  body: any;
  headers: Headers;
}

/** A JSON request; `key` goes in Authorization: Bearer unless `keyHeader` says X-API-Key. A string body is sent as is. */
export async function call(url: string, init: { method?: string; body?: unknown; key?: string; keyHeader?: 'authorization' | 'x-api-key' } = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  if (init.key !== undefined) headers[init.keyHeader ?? 'authorization'] = init.keyHeader === 'x-api-key' ? init.key : `Bearer ${init.key}`;
  const response = await fetch(url, {
    method: init.method ?? (init.body === undefined ? 'GET' : 'POST'),
    headers,
    body: init.body === undefined ? undefined : typeof init.body === 'string' ? init.body : JSON.stringify(init.body),
  });
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, body, headers: response.headers };
}
