#!/usr/bin/env node
// Test fixture: merchants written straight to the test database, for specs that need one before (or without) a
// running facilitator. Run synchronously by test/support/merchants.ts, so specs keep their plain calls; the
// facilitator's own path (the operator API, which scripts/merchants.mjs uses) is tested in admin and merchants specs.
//
//   node test/support/merchant-fixture.mjs '<json command>'
//     { "op": "create", "name", "webhookUrl"?, "receivingAddresses": ["<network>:<address>"], "allowAnyPayTo"? }
//     { "op": "declare", "merchantId", "address": "<network>:<address>" }
//     { "op": "set-webhook", "merchantId", "url" }
//     { "op": "revoke", "keyId" }
// Prints the result as JSON. Keys and secrets have the facilitator's formats (apps/facilitator/src/merchants/api-key.ts).
import { createHash, randomBytes } from 'node:crypto';
import pg from 'pg';

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';
const command = JSON.parse(process.argv[2]);
const db = new pg.Client({ connectionString: process.env.DATABASE_URL, application_name: 'merchant-fixture' });

function apiKey() {
  const base32 = (n) => [...randomBytes(n)].map((b) => ALPHABET[b & 31]).join('');
  const prefix = base32(8);
  const key = `mpk_${prefix}_${base32(32)}`;
  return { key, prefix, hash: createHash('sha256').update(key, 'utf8').digest('hex') };
}

function split(caip10) {
  const at = caip10.lastIndexOf(':');
  return { network: caip10.slice(0, at), address: caip10.slice(at + 1).toLowerCase() };
}

const declare = (merchantId, caip10) => {
  const { network, address } = split(caip10);
  return db.query(`INSERT INTO facilitator.merchant_receiving_addresses (merchant_id, network, address) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`, [
    merchantId,
    network,
    address,
  ]);
};

const ops = {
  async create({ name, webhookUrl = null, receivingAddresses = [], allowAnyPayTo = false }) {
    const webhookSecret = `whsec_${randomBytes(32).toString('base64')}`;
    await db.query('BEGIN');
    const { rows } = await db.query(
      `INSERT INTO facilitator.merchants (name, webhook_url, webhook_secret, allow_any_pay_to) VALUES ($1, $2, $3, $4) RETURNING id`,
      [name, webhookUrl, webhookSecret, allowAnyPayTo],
    );
    const merchantId = rows[0].id;
    for (const address of receivingAddresses) await declare(merchantId, address);
    const { key, prefix, hash } = apiKey();
    const { rows: keys } = await db.query(`INSERT INTO facilitator.api_keys (merchant_id, prefix, hash, name) VALUES ($1, $2, $3, 'default') RETURNING id`, [
      merchantId,
      prefix,
      hash,
    ]);
    await db.query('COMMIT');
    return { merchantId, keyId: keys[0].id, apiKey: key, webhookSecret };
  },
  async declare({ merchantId, address }) {
    await declare(merchantId, address);
    return {};
  },
  async 'set-webhook'({ merchantId, url }) {
    await db.query(`UPDATE facilitator.merchants SET webhook_url = $2 WHERE id = $1`, [merchantId, url]);
    return {};
  },
  async revoke({ keyId }) {
    await db.query(`UPDATE facilitator.api_keys SET revoked_at = coalesce(revoked_at, now()) WHERE id = $1`, [keyId]);
    return {};
  },
};

await db.connect();
try {
  console.log(JSON.stringify(await ops[command.op](command)));
} finally {
  await db.end();
}
