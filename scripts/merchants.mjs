#!/usr/bin/env node
// Merchant accounts and API keys of the facilitator, straight in PostgreSQL (schema `facilitator`).
//
//   node scripts/merchants.mjs create --name <name> [--webhook-url <url>] [--key-name <name>]
//   node scripts/merchants.mjs keys create --merchant <merchantId> [--name <name>]
//   node scripts/merchants.mjs keys revoke <keyId>
//   node scripts/merchants.mjs set-webhook <merchantId> <url|none>
//   node scripts/merchants.mjs disable <merchantId>
//   node scripts/merchants.mjs rotate-mpp-secret <merchantId>
//   node scripts/merchants.mjs list
//
// Add --json for machine-readable output. API keys and the webhook secret are printed once, when they are made,
// and never again: the database keeps only the key's sha256 (the webhook secret is kept, to sign with).
// DATABASE_URL defaults to postgresql://postgres@127.0.0.1:5432/machine_payments.
// Exit codes: 0 done, 1 failed (not found, database error), 2 usage error.
import { createHash, randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import pg from 'pg';

const USAGE = `usage:
  node scripts/merchants.mjs create --name <name> [--webhook-url <url>] [--key-name <name>] [--json]
  node scripts/merchants.mjs keys create --merchant <merchantId> [--name <name>] [--json]
  node scripts/merchants.mjs keys revoke <keyId> [--json]
  node scripts/merchants.mjs set-webhook <merchantId> <url|none> [--json]
  node scripts/merchants.mjs disable <merchantId> [--json]
  node scripts/merchants.mjs rotate-mpp-secret <merchantId> [--json]
  node scripts/merchants.mjs list [--json]`;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

class UsageError extends Error {}
class Failure extends Error {}

/** Same format as apps/facilitator/src/merchants/api-key.ts: mpk_<8 base32>_<32 base32>, stored as sha256 hex. */
function newApiKey() {
  const base32 = (n) => [...randomBytes(n)].map((b) => ALPHABET[b & 31]).join('');
  const prefix = base32(8);
  const key = `mpk_${prefix}_${base32(32)}`;
  return { key, prefix, hash: createHash('sha256').update(key, 'utf8').digest('hex') };
}

function uuid(value, what) {
  if (typeof value !== 'string' || !UUID.test(value)) throw new UsageError(`${what} must be a UUID`);
  return value.toLowerCase();
}

function webhookUrl(value) {
  let url;
  try {
    url = new URL(value);
  } catch {
    throw new UsageError('the webhook URL is not a URL');
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new UsageError('the webhook URL must be http:// or https://');
  return url.toString();
}

function text(value, what) {
  if (typeof value !== 'string' || !value.trim() || value.length > 200) throw new UsageError(`${what} must be 1 to 200 characters`);
  return value.trim();
}

async function insertKey(db, merchantId, name) {
  const { key, prefix, hash } = newApiKey();
  const { rows } = await db.query(
    `INSERT INTO facilitator.api_keys (merchant_id, prefix, hash, name) VALUES ($1, $2, $3, $4) RETURNING id`,
    [merchantId, prefix, hash, name ?? null],
  );
  return { keyId: rows[0].id, apiKey: key, prefix };
}

const commands = {
  async create(db, { values }) {
    const name = text(values.name, '--name');
    const url = values['webhook-url'] === undefined ? null : webhookUrl(values['webhook-url']);
    const secret = randomBytes(32).toString('hex');
    await db.query('BEGIN');
    try {
      const { rows } = await db.query(
        `INSERT INTO facilitator.merchants (name, webhook_url, webhook_secret) VALUES ($1, $2, $3) RETURNING id`,
        [name, url, secret],
      );
      const merchantId = rows[0].id;
      const key = await insertKey(db, merchantId, values['key-name'] === undefined ? 'default' : text(values['key-name'], '--key-name'));
      await db.query('COMMIT');
      return {
        result: { merchantId, name, webhookUrl: url, keyId: key.keyId, apiKey: key.apiKey, webhookSecret: secret },
        lines: [
          `merchant        ${merchantId}  ${name}`,
          `webhook url     ${url ?? '(none)'}`,
          `api key id      ${key.keyId}`,
          `api key         ${key.apiKey}`,
          `webhook secret  ${secret}`,
          '',
          'The API key and the webhook secret are shown this once; store them now.',
        ],
      };
    } catch (error) {
      await db.query('ROLLBACK');
      throw error;
    }
  },

  async 'keys create'(db, { values }) {
    const merchantId = uuid(values.merchant, '--merchant');
    const { rows } = await db.query(`SELECT disabled_at FROM facilitator.merchants WHERE id = $1`, [merchantId]);
    if (!rows.length) throw new Failure(`no merchant ${merchantId}`);
    if (rows[0].disabled_at) throw new Failure(`merchant ${merchantId} is disabled`);
    const key = await insertKey(db, merchantId, values.name === undefined ? null : text(values.name, '--name'));
    return {
      result: { merchantId, keyId: key.keyId, apiKey: key.apiKey },
      lines: [`api key id  ${key.keyId}`, `api key     ${key.apiKey}`, '', 'The API key is shown this once; store it now.'],
    };
  },

  async 'keys revoke'(db, { positionals }) {
    const keyId = uuid(positionals[0], 'the key id');
    const { rows } = await db.query(
      `UPDATE facilitator.api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1 RETURNING revoked_at`,
      [keyId],
    );
    if (!rows.length) throw new Failure(`no API key ${keyId}`);
    return { result: { keyId, revokedAt: rows[0].revoked_at }, lines: [`revoked API key ${keyId}`] };
  },

  async 'set-webhook'(db, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    if (positionals[1] === undefined) throw new UsageError('give the webhook URL, or none');
    const url = positionals[1] === 'none' ? null : webhookUrl(positionals[1]);
    const { rowCount } = await db.query(`UPDATE facilitator.merchants SET webhook_url = $2 WHERE id = $1`, [merchantId, url]);
    if (!rowCount) throw new Failure(`no merchant ${merchantId}`);
    return { result: { merchantId, webhookUrl: url }, lines: [`merchant ${merchantId}: webhook url ${url ?? '(none)'}`] };
  },

  // The facilitator accepts the previous secret for an hour (the longest a challenge lives), then only the new one;
  // replicas pick the new one up within API_KEY_CACHE_MS.
  async 'rotate-mpp-secret'(db, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const { rows } = await db.query(`SELECT 1 FROM facilitator.merchants WHERE id = $1`, [merchantId]);
    if (!rows.length) throw new Failure(`no merchant ${merchantId}`);
    const { rows: rotated } = await db.query(
      `INSERT INTO facilitator.mpp_secrets (scope, secret) VALUES ($1, $2)
       ON CONFLICT (scope) DO UPDATE SET previous_secret = mpp_secrets.secret, secret = EXCLUDED.secret, rotated_at = now()
       RETURNING rotated_at`,
      [merchantId, randomBytes(32).toString('hex')],
    );
    return { result: { merchantId, rotatedAt: rotated[0].rotated_at }, lines: [`merchant ${merchantId}: MPP challenge secret rotated; the previous one is accepted for one more hour`] };
  },

  async disable(db, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const { rows } = await db.query(
      `UPDATE facilitator.merchants SET disabled_at = coalesce(disabled_at, now()) WHERE id = $1 RETURNING disabled_at`,
      [merchantId],
    );
    if (!rows.length) throw new Failure(`no merchant ${merchantId}`);
    return { result: { merchantId, disabledAt: rows[0].disabled_at }, lines: [`disabled merchant ${merchantId}: its keys no longer work and no more webhooks are sent`] };
  },

  async list(db) {
    const { rows: merchants } = await db.query(
      `SELECT id, name, webhook_url, created_at, disabled_at FROM facilitator.merchants ORDER BY created_at, id`,
    );
    const { rows: keys } = await db.query(
      `SELECT id, merchant_id, prefix, name, created_at, last_used_at, revoked_at FROM facilitator.api_keys ORDER BY created_at, id`,
    );
    const result = merchants.map((m) => ({
      merchantId: m.id,
      name: m.name,
      webhookUrl: m.webhook_url,
      createdAt: m.created_at,
      disabledAt: m.disabled_at,
      keys: keys
        .filter((k) => k.merchant_id === m.id)
        .map((k) => ({ keyId: k.id, key: `mpk_${k.prefix}_…`, name: k.name, createdAt: k.created_at, lastUsedAt: k.last_used_at, revokedAt: k.revoked_at })),
    }));
    const date = (d) => (d ? d.toISOString() : '-');
    const lines = result.length ? [] : ['no merchants'];
    for (const m of result) {
      lines.push(`${m.merchantId}  ${m.name}${m.disabledAt ? `  DISABLED ${date(m.disabledAt)}` : ''}`, `  webhook url  ${m.webhookUrl ?? '(none)'}`);
      for (const k of m.keys) {
        lines.push(`  key ${k.keyId}  ${k.key}  ${k.name ?? ''}  created ${date(k.createdAt)}  last used ${date(k.lastUsedAt)}${k.revokedAt ? `  REVOKED ${date(k.revokedAt)}` : ''}`);
      }
    }
    return { result, lines };
  },
};

async function main(argv) {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        name: { type: 'string' },
        'webhook-url': { type: 'string' },
        'key-name': { type: 'string' },
        merchant: { type: 'string' },
        json: { type: 'boolean', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new UsageError(error.message);
  }
  if (parsed.values.help) {
    console.log(USAGE);
    return;
  }
  const [first, second, ...rest] = parsed.positionals;
  const name = first === 'keys' ? `keys ${second ?? ''}` : first;
  const command = commands[name];
  if (!command) throw new UsageError(first ? `unknown command: ${name}` : 'no command given');
  const positionals = first === 'keys' ? rest : [second, ...rest].filter((p) => p !== undefined);

  const db = new pg.Client({ connectionString: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/machine_payments', application_name: 'merchants-cli' });
  await db.connect();
  try {
    const { result, lines } = await command(db, { values: parsed.values, positionals });
    console.log(parsed.values.json ? JSON.stringify(result, null, 2) : lines.join('\n'));
  } finally {
    await db.end();
  }
}

try {
  await main(process.argv.slice(2));
} catch (error) {
  if (error instanceof UsageError) {
    console.error(`merchants: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
  // Database errors name the problem, never the connection string (which may hold a password).
  const message = error instanceof Failure ? error.message : `${error.code ? `${error.code}: ` : ''}${error.message}`;
  console.error(`merchants: ${message}`);
  if (!(error instanceof Failure) && /relation .* does not exist/.test(error.message ?? '')) console.error('merchants: run `npm run db:migrate` first');
  process.exit(1);
}
