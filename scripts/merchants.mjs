#!/usr/bin/env node
// Merchant accounts and API keys of the facilitator, straight in PostgreSQL (schema `facilitator`).
//
//   node scripts/merchants.mjs create --name <name> [--webhook-url <url>] [--key-name <name>]
//        [--receiving-address <network>:<address>]... [--receiving-address-of-chain <manifest.json>]
//        [--allow-any-pay-to] [--key-file <path>]
//   node scripts/merchants.mjs keys create --merchant <merchantId> [--name <name>]
//   node scripts/merchants.mjs keys revoke <keyId>
//   node scripts/merchants.mjs set-webhook <merchantId> <url|none>
//   node scripts/merchants.mjs disable <merchantId>
//   node scripts/merchants.mjs rotate-mpp-secret <merchantId>
//   node scripts/merchants.mjs receiving-addresses add|remove <merchantId> <network>:<address>
//   node scripts/merchants.mjs receiving-addresses list <merchantId>
//   node scripts/merchants.mjs allow-any-pay-to <merchantId> on|off
//   node scripts/merchants.mjs list
//
// A keyed merchant's settlements may pay only the receiving addresses it declared (CAIP-10: a CAIP-2 network and an
// address, e.g. eip155:8453:0xAbC…), unless allow-any-pay-to is on. --key-file writes FACILITATOR_API_KEY=<key> to a
// new file (mode 600) for a merchant agent to read, instead of only printing it. --receiving-address-of-chain declares
// the merchant account of a local chain's manifest (scripts/chain.mjs), as docker/compose.yml does.
// Add --json for machine-readable output. API keys and the webhook secret are printed once, when they are made,
// and never again: the database keeps only the key's sha256 (the webhook secret is kept, to sign with).
// DATABASE_URL defaults to postgresql://postgres@127.0.0.1:5432/machine_payments.
// Exit codes: 0 done, 1 failed (not found, database error), 2 usage error.
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { allowPrivateFromEnv, checkWebhookUrl } from './lib/webhook-destination.mjs';
import { getAddress } from 'viem';

const USAGE = `usage:
  node scripts/merchants.mjs create --name <name> [--webhook-url <url>] [--key-name <name>]
       [--receiving-address <network>:<address>]... [--receiving-address-of-chain <manifest.json>]
       [--allow-any-pay-to] [--key-file <path>] [--json]
  node scripts/merchants.mjs keys create --merchant <merchantId> [--name <name>] [--json]
  node scripts/merchants.mjs keys revoke <keyId> [--json]
  node scripts/merchants.mjs set-webhook <merchantId> <url|none> [--json]
  node scripts/merchants.mjs disable <merchantId> [--json]
  node scripts/merchants.mjs rotate-mpp-secret <merchantId> [--json]
  node scripts/merchants.mjs receiving-addresses add|remove <merchantId> <network>:<address> [--json]
  node scripts/merchants.mjs receiving-addresses list <merchantId> [--json]
  node scripts/merchants.mjs allow-any-pay-to <merchantId> on|off [--json]
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

// Loopback, private, link-local and metadata destinations are refused unless WEBHOOK_ALLOW_PRIVATE=true (as the
// facilitator's setting): code webhook_destination_not_allowed. The facilitator checks resolved addresses again on every send.
function webhookUrl(value) {
  const checked = checkWebhookUrl(value, allowPrivateFromEnv());
  if (!checked.ok) throw new UsageError(`${checked.code}: ${checked.reason}`);
  return checked.url;
}

function text(value, what) {
  if (typeof value !== 'string' || !value.trim() || value.length > 200) throw new UsageError(`${what} must be 1 to 200 characters`);
  return value.trim();
}

/**
 * `<network>:<address>` (CAIP-10), as apps/facilitator/src/merchants/receiving-addresses.ts checks it: an eip155
 * network and a non-zero address in any case (a mixed-case one must carry a valid checksum). Stored lowercase.
 */
function receivingAddress(value) {
  const match = /^(eip155:[1-9][0-9]{0,19}):(0x[0-9a-fA-F]{40})$/.exec(value ?? '');
  if (!match) throw new UsageError(`a receiving address is <network>:<address>, e.g. eip155:8453:0x…; got ${JSON.stringify(value ?? '')}`);
  const [, network, address] = match;
  const checksummed = getAddress(address.toLowerCase());
  if (/^0x0{40}$/.test(address)) throw new UsageError('the zero address cannot receive payments');
  const digits = address.slice(2);
  if (digits !== digits.toLowerCase() && digits !== digits.toUpperCase() && address !== checksummed) {
    throw new UsageError(`${address} has a wrong EIP-55 checksum (did you mean ${checksummed}?)`);
  }
  return { network, address: checksummed };
}

/** `<network>:<address>` of the merchant account in a local chain's manifest (written by scripts/chain.mjs). */
function chainMerchantAddress(manifestPath) {
  let manifest;
  try {
    manifest = JSON.parse(readFileSync(manifestPath, 'utf8'));
  } catch (error) {
    throw new Failure(`cannot read the chain manifest ${manifestPath}: ${error.message}`);
  }
  if (typeof manifest?.network !== 'string' || typeof manifest?.accounts?.merchant?.address !== 'string') {
    throw new Failure(`${manifestPath} names no network and merchant account`);
  }
  return `${manifest.network}:${manifest.accounts.merchant.address}`;
}

/** FACILITATOR_API_KEY=<key> in a new file only its owner reads; an existing file (a key made earlier) is left alone. */
function writeKeyFile(path, apiKey) {
  try {
    writeFileSync(path, `FACILITATOR_API_KEY=${apiKey}\n`, { mode: 0o600, flag: 'wx' });
  } catch (error) {
    throw new Failure(error.code === 'EEXIST' ? `${path} exists already (a key made earlier): nothing was created` : `cannot write ${path}: ${error.message}`);
  }
}

async function declareAddress(db, merchantId, { network, address }) {
  await db.query(
    `INSERT INTO facilitator.merchant_receiving_addresses (merchant_id, network, address) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
    [merchantId, network, address.toLowerCase()],
  );
}

async function merchantExists(db, merchantId) {
  const { rows } = await db.query(`SELECT 1 FROM facilitator.merchants WHERE id = $1`, [merchantId]);
  if (!rows.length) throw new Failure(`no merchant ${merchantId}`);
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
    const addresses = (values['receiving-address'] ?? []).map(receivingAddress);
    if (values['receiving-address-of-chain'] !== undefined) addresses.push(receivingAddress(chainMerchantAddress(values['receiving-address-of-chain'])));
    const allowAnyPayTo = values['allow-any-pay-to'];
    // Standard Webhooks: whsec_ + base64 of the HMAC key
    const secret = `whsec_${randomBytes(32).toString('base64')}`;
    await db.query('BEGIN');
    try {
      const { rows } = await db.query(
        `INSERT INTO facilitator.merchants (name, webhook_url, webhook_secret, allow_any_pay_to) VALUES ($1, $2, $3, $4) RETURNING id`,
        [name, url, secret, allowAnyPayTo],
      );
      const merchantId = rows[0].id;
      for (const address of addresses) await declareAddress(db, merchantId, address);
      const key = await insertKey(db, merchantId, values['key-name'] === undefined ? 'default' : text(values['key-name'], '--key-name'));
      // Written before the commit: a file that cannot be written leaves no merchant behind. `wx`: never overwrite a key.
      if (values['key-file'] !== undefined) writeKeyFile(values['key-file'], key.apiKey);
      await db.query('COMMIT');
      const receivingAddresses = addresses.map((a) => `${a.network}:${a.address}`);
      return {
        result: { merchantId, name, webhookUrl: url, keyId: key.keyId, apiKey: key.apiKey, webhookSecret: secret, receivingAddresses, allowAnyPayTo },
        lines: [
          `merchant        ${merchantId}  ${name}`,
          `webhook url     ${url ?? '(none)'}`,
          `receiving       ${allowAnyPayTo ? 'any address (allow-any-pay-to)' : receivingAddresses.join(', ') || '(none declared: every settlement is refused until one is)'}`,
          `api key id      ${key.keyId}`,
          `api key         ${key.apiKey}${values['key-file'] !== undefined ? `  (written to ${values['key-file']})` : ''}`,
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

  async 'receiving-addresses add'(db, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const declared = receivingAddress(positionals[1]);
    await merchantExists(db, merchantId);
    await declareAddress(db, merchantId, declared);
    return { result: { merchantId, ...declared }, lines: [`merchant ${merchantId}: receives at ${declared.network}:${declared.address}`] };
  },

  async 'receiving-addresses remove'(db, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const { network, address } = receivingAddress(positionals[1]);
    const { rowCount } = await db.query(
      `DELETE FROM facilitator.merchant_receiving_addresses WHERE merchant_id = $1 AND network = $2 AND address = $3`,
      [merchantId, network, address.toLowerCase()],
    );
    if (!rowCount) throw new Failure(`merchant ${merchantId} has no receiving address ${network}:${address}`);
    return { result: { merchantId, network, address, removed: true }, lines: [`merchant ${merchantId}: no longer receives at ${network}:${address}`] };
  },

  async 'receiving-addresses list'(db, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    const { rows: merchant } = await db.query(`SELECT allow_any_pay_to FROM facilitator.merchants WHERE id = $1`, [merchantId]);
    if (!merchant.length) throw new Failure(`no merchant ${merchantId}`);
    const addresses = await receivingAddressesOf(db, merchantId);
    return {
      result: { merchantId, allowAnyPayTo: merchant[0].allow_any_pay_to, receivingAddresses: addresses },
      lines: [`allow any payTo  ${merchant[0].allow_any_pay_to ? 'on' : 'off'}`, ...(addresses.length ? addresses : ['(no receiving addresses)'])],
    };
  },

  async 'allow-any-pay-to'(db, { positionals }) {
    const merchantId = uuid(positionals[0], 'the merchant id');
    if (positionals[1] !== 'on' && positionals[1] !== 'off') throw new UsageError('allow-any-pay-to takes on or off');
    const allow = positionals[1] === 'on';
    const { rowCount } = await db.query(`UPDATE facilitator.merchants SET allow_any_pay_to = $2 WHERE id = $1`, [merchantId, allow]);
    if (!rowCount) throw new Failure(`no merchant ${merchantId}`);
    return {
      result: { merchantId, allowAnyPayTo: allow },
      lines: [`merchant ${merchantId}: ${allow ? 'settlements may pay any address' : 'settlements may pay only its receiving addresses'}`],
    };
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
      `SELECT id, name, webhook_url, allow_any_pay_to, created_at, disabled_at FROM facilitator.merchants ORDER BY created_at, id`,
    );
    const { rows: addresses } = await db.query(`SELECT merchant_id, network, address FROM facilitator.merchant_receiving_addresses ORDER BY network, address`);
    const { rows: keys } = await db.query(
      `SELECT id, merchant_id, prefix, name, created_at, last_used_at, revoked_at FROM facilitator.api_keys ORDER BY created_at, id`,
    );
    const result = merchants.map((m) => ({
      merchantId: m.id,
      name: m.name,
      webhookUrl: m.webhook_url,
      allowAnyPayTo: m.allow_any_pay_to,
      receivingAddresses: addresses.filter((a) => a.merchant_id === m.id).map((a) => `${a.network}:${getAddress(a.address)}`),
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
      lines.push(`  receiving    ${m.allowAnyPayTo ? 'any address' : m.receivingAddresses.join(', ') || '(none)'}`);
      for (const k of m.keys) {
        lines.push(`  key ${k.keyId}  ${k.key}  ${k.name ?? ''}  created ${date(k.createdAt)}  last used ${date(k.lastUsedAt)}${k.revokedAt ? `  REVOKED ${date(k.revokedAt)}` : ''}`);
      }
    }
    return { result, lines };
  },
};

async function receivingAddressesOf(db, merchantId) {
  const { rows } = await db.query(`SELECT network, address FROM facilitator.merchant_receiving_addresses WHERE merchant_id = $1 ORDER BY network, address`, [merchantId]);
  return rows.map((r) => `${r.network}:${getAddress(r.address)}`);
}

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
        'receiving-address': { type: 'string', multiple: true },
        'allow-any-pay-to': { type: 'boolean', default: false },
        'key-file': { type: 'string' },
        'receiving-address-of-chain': { type: 'string' },
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
  const grouped = first === 'keys' || first === 'receiving-addresses';
  const name = grouped ? `${first} ${second ?? ''}` : first;
  const command = commands[name];
  if (!command) throw new UsageError(first ? `unknown command: ${name}` : 'no command given');
  const positionals = grouped ? rest : [second, ...rest].filter((p) => p !== undefined);

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
