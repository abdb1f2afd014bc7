import { createHash, randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

import pg from 'pg';

import { dropDatabase, MIGRATIONS_DIR, migrateDeploy } from '../../../scripts/lib/database.mjs';

const BASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';

function freshUrl(): string {
  const u = new URL(BASE_URL);
  u.pathname = `/mp_migrate_test_${randomBytes(5).toString('hex')}`;
  return u.toString();
}

async function query<T extends pg.QueryResultRow>(url: string, sql: string, params: unknown[] = []): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, params)).rows;
  } finally {
    await client.end();
  }
}

const migrationNames = fs
  .readdirSync(MIGRATIONS_DIR, { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name)
  .sort();

describe('scripts/lib/database.mjs migrateDeploy', () => {
  const url = freshUrl();

  afterAll(async () => {
    await dropDatabase(url);
  });

  it('creates the database and applies every migration', async () => {
    const result = await migrateDeploy({ databaseUrl: url, quiet: true });
    expect(result.created).toBe(true);
    expect(result.applied).toEqual(migrationNames);
    expect(migrationNames[0]).toMatch(/^\d{14}_init$/);
  });

  it('creates one PostgreSQL schema per app', async () => {
    const rows = await query<{ nspname: string }>(url, `SELECT nspname FROM pg_namespace WHERE nspname = ANY($1) ORDER BY 1`, [
      ['facilitator', 'ledger', 'merchant'],
    ]);
    expect(rows.map((r) => r.nspname)).toEqual(['facilitator', 'ledger', 'merchant']);
  });

  it('creates the facilitator tables with snake_case columns and NUMERIC(78,0) money', async () => {
    const tables = await query<{ table_name: string }>(url, `SELECT table_name FROM information_schema.tables WHERE table_schema = 'facilitator' ORDER BY 1`);
    expect(tables.map((t) => t.table_name)).toEqual([
      'api_keys',
      'batch_channels',
      'batch_settlement_operations',
      'chain_cursors',
      'channel_events',
      'merchant_receiving_addresses',
      'merchants',
      'mpp_claims',
      'mpp_secrets',
      'outbox_cursors',
      'payment_events',
      'payment_idempotency_keys',
      'payment_transactions',
      'payments',
      'refunds',
      'session_channels',
      'session_charges',
      'session_deposits',
      'session_operations',
      'stripe_events',
      'stripe_subscription_invoices',
      'stripe_subscriptions',
      'subscription_authorizations',
      'subscription_charges',
      'subscriptions',
      'webhook_deliveries',
      'webhook_delivery_attempts',
    ]);

    const amount = await query<{ data_type: string; numeric_precision: number; numeric_scale: number }>(
      url,
      `SELECT data_type, numeric_precision, numeric_scale FROM information_schema.columns
        WHERE table_schema = 'facilitator' AND table_name = 'payments' AND column_name = 'amount'`,
    );
    expect(amount).toEqual([{ data_type: 'numeric', numeric_precision: 78, numeric_scale: 0 }]);
  });

  it('has the unique constraint on (network, asset, payer, authorization_nonce) and an index on tx_hash', async () => {
    const rows = await query<{ indexname: string; indexdef: string }>(
      url,
      `SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = 'facilitator' AND tablename = 'payments' ORDER BY 1`,
    );
    const byName = Object.fromEntries(rows.map((r) => [r.indexname, r.indexdef]));
    expect(byName.payments_authorization_key).toMatch(/^CREATE UNIQUE INDEX .*\(network, asset, payer, authorization_nonce\)$/);
    // not unique: one batch transaction settles several payments
    expect(byName.payments_tx_hash_idx).toMatch(/^CREATE INDEX .*\(tx_hash\)$/);
    expect(byName.payments_state_updated_at_idx).toMatch(/\(state, updated_at\)$/);
  });

  it('records migrations in _prisma_migrations the way prisma migrate deploy does', async () => {
    const rows = await query<{ migration_name: string; checksum: string; finished_at: Date | null; rolled_back_at: Date | null }>(
      url,
      `SELECT migration_name, checksum, finished_at, rolled_back_at FROM _prisma_migrations ORDER BY migration_name`,
    );
    expect(rows.map((r) => r.migration_name)).toEqual(migrationNames);
    for (const row of rows) {
      const sql = fs.readFileSync(path.join(MIGRATIONS_DIR, row.migration_name, 'migration.sql'));
      expect(row.checksum).toBe(createHash('sha256').update(sql).digest('hex'));
      expect(row.finished_at).toBeInstanceOf(Date);
      expect(row.rolled_back_at).toBeNull();
    }
  });

  it('applies nothing the second time', async () => {
    const result = await migrateDeploy({ databaseUrl: url, quiet: true });
    expect(result).toEqual({ applied: [], created: false });
    const [{ n }] = await query<{ n: string }>(url, 'SELECT count(*) AS n FROM _prisma_migrations');
    expect(Number(n)).toBe(migrationNames.length);
  });
});

describe('concurrent migrateDeploy on a fresh database', () => {
  const url = freshUrl();

  afterAll(async () => {
    await dropDatabase(url);
  });

  it('creates the database once and applies each migration once', async () => {
    const results = await Promise.all([1, 2, 3].map(() => migrateDeploy({ databaseUrl: url, quiet: true })));
    expect(results.flatMap((r) => r.applied).sort()).toEqual(migrationNames);
    expect(results.filter((r) => r.created)).toHaveLength(1);
    const rows = await query<{ migration_name: string }>(url, 'SELECT migration_name FROM _prisma_migrations');
    expect(rows).toHaveLength(migrationNames.length);
  });
});
