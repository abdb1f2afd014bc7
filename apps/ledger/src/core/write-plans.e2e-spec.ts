import { randomBytes } from 'node:crypto';

import pg from 'pg';
import { TABLE_SIZES_SQL, TableGrowth } from '@mp/db';

import { dropDatabase, migrateDeploy } from '../../../../scripts/lib/database.mjs';
import { DUE_SQL, LOCK_SQL, TAKE_SQL, UPDATE_SQL } from './expiry.store';
import { LOCK_AND_READ_SQL, WRITE_SQL } from './transfer.store';
import type { LedgerConfig } from '../ledger.config';
import { WritePool, writeConnectionOptions, type Statement } from './write-pool';

const BASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';

const STATEMENTS = { LOCK_AND_READ_SQL, WRITE_SQL, DUE_SQL, LOCK_SQL, TAKE_SQL, UPDATE_SQL };

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
  'Index Name'?: string;
  Plans?: PlanNode[];
}

const nodesOf = (node: PlanNode): PlanNode[] => [node, ...(node.Plans ?? []).flatMap(nodesOf)];

/** What in a statement's generic plan reads a whole table or joins by hashing or merging, as `Seq Scan on accounts`. */
async function scansAndJoins(options: string, url: string, sql: string): Promise<string[]> {
  const client = new pg.Client({ connectionString: url, options });
  await client.connect();
  try {
    await client.query(`PREPARE statement AS ${sql}`);
    const parameters = Math.max(...[...sql.matchAll(/\$(\d+)/g)].map((m) => Number(m[1])));
    await client.query('BEGIN'); // the plans of the writes are read without running them
    const [{ 'QUERY PLAN': plans }] = (
      await client.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `EXPLAIN (FORMAT JSON) EXECUTE statement(${Array.from({ length: parameters }, () => 'NULL').join(', ')})`,
      )
    ).rows;
    await client.query('ROLLBACK');
    return nodesOf(plans[0].Plan)
      .filter((n) => (n['Node Type'] === 'Seq Scan' && n['Relation Name']) || n['Node Type'] === 'Hash Join' || n['Node Type'] === 'Merge Join')
      .map((n) => `${n['Node Type']}${n['Relation Name'] ? ` on ${n['Relation Name']}` : ''}`);
  } finally {
    await client.end();
  }
}

// A generic plan is kept for the connection's life: one made while the tables are empty must still look rows up by key.
describe('the write connections’ plans, made on empty tables', () => {
  const u = new URL(BASE_URL);
  u.pathname = `/mp_write_plans_${randomBytes(5).toString('hex')}`;
  const url = u.toString();

  beforeAll(async () => {
    await migrateDeploy({ databaseUrl: url, quiet: true });
  });
  afterAll(async () => {
    await dropDatabase(url);
  });

  it.each(Object.keys(STATEMENTS))('%s: index lookups and nested loops only', async (name) => {
    expect(await scansAndJoins(writeConnectionOptions(url), url, STATEMENTS[name as keyof typeof STATEMENTS])).toEqual([]);
  });

  it('compiles nothing: the read of the tables’ sizes, whose scan of pg_class is disabled there, runs without JIT', async () => {
    const client = new pg.Client({ connectionString: url, options: writeConnectionOptions(url) });
    await client.connect();
    try {
      const [{ 'QUERY PLAN': plans }] = (await client.query<{ 'QUERY PLAN': Record<string, unknown>[] }>(`EXPLAIN (ANALYZE, FORMAT JSON) ${TABLE_SIZES_SQL}`))
        .rows;
      expect(plans[0]).not.toHaveProperty('JIT');
    } finally {
      await client.end();
    }
  });

  it('without the planner held to them, the generic plans of the transfer path scan whole tables', async () => {
    const genericOnly = '-c plan_cache_mode=force_generic_plan';
    const found = [...(await scansAndJoins(genericOnly, url, LOCK_AND_READ_SQL)), ...(await scansAndJoins(genericOnly, url, WRITE_SQL))];
    expect(found).toEqual(expect.arrayContaining(['Seq Scan on accounts']));
  });
});

// Which index a lookup takes is the planner's to decide from the tables' size, and a connection keeps its plans
// (TableGrowth).
describe('the write pool, as the tables grow', () => {
  const u = new URL(BASE_URL);
  u.pathname = `/mp_write_growth_${randomBytes(5).toString('hex')}`;
  const url = u.toString();
  let pool: WritePool;

  beforeAll(async () => {
    await migrateDeploy({ databaseUrl: url, quiet: true });
    pool = new WritePool({ databaseUrl: url, writeConcurrency: 1 } as LedgerConfig);
  });
  afterAll(async () => {
    await pool.onApplicationShutdown();
    await dropDatabase(url);
  });

  /** The backend that runs the lock-and-read, and the indexes its plan reads ledger.transfers by. */
  const lockAndRead = () =>
    pool.transaction(async (run: Statement) => {
      await run('ledger_lock_and_read', LOCK_AND_READ_SQL, [[], [], [], [], [], []]);
      const [{ pid }] = await run<{ pid: number }>('backend', 'SELECT pg_backend_pid() AS pid', []);
      const [{ 'QUERY PLAN': plans }] = await run<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        'lock_and_read_plan',
        `EXPLAIN (FORMAT JSON) EXECUTE ledger_lock_and_read(${Array.from({ length: 6 }, () => 'NULL').join(', ')})`,
        [],
      );
      const indexes = nodesOf(plans[0].Plan).flatMap((n) => (n['Relation Name'] === 'transfers' ? [n['Index Name']] : []));
      return { pid, indexes: [...new Set(indexes)].sort() };
    });

  it('plans again on the same connection once a table has more than doubled, looking transfers up by their key', async () => {
    const empty = await lockAndRead();
    // on an empty table, a transfer is looked up by merchant and its id filtered: every transfer of the merchant read
    expect(empty.indexes).toContain('transfers_merchant_ts_idx');

    const db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query(`INSERT INTO ledger.accounts (merchant_id, id, asset, code, flags, normal_balance)
                    SELECT '00000000-0000-4000-8000-000000000001', gen_random_uuid(), 'USD', 1, 0, 'debit' FROM generate_series(1, 2)`);
    await db.query(`INSERT INTO ledger.transfers (merchant_id, id, debit_account_key, credit_account_key, amount, asset, code, flags, ts,
                                                  debit_debits_posted, debit_credits_posted, credit_debits_posted, credit_credits_posted)
                    SELECT '00000000-0000-4000-8000-000000000001', gen_random_uuid(), (SELECT min(key) FROM ledger.accounts),
                           (SELECT max(key) FROM ledger.accounts), 1, 'USD', 1, 0, now(), 0, 0, 0, 0
                      FROM generate_series(1, 2000)`);
    await db.end();

    // a transaction reads the sizes, at most every 500 ms, and discards its connection's plans once they have grown
    await vi.waitFor(async () => expect((await lockAndRead()).indexes).toEqual(['transfers_pending_id_key', 'transfers_pkey']), {
      timeout: 10_000,
      interval: 200,
    });
    expect((await lockAndRead()).pid).toBe(empty.pid);
  });

  it('fails no write when the sizes cannot be read: the plans stay as they are', async () => {
    const check = vi.spyOn(TableGrowth.prototype, 'check').mockRejectedValueOnce(new Error('connection lost reading the sizes'));
    try {
      expect((await lockAndRead()).indexes).toEqual(['transfers_pending_id_key', 'transfers_pkey']);
      expect(check).toHaveBeenCalledTimes(1);
    } finally {
      check.mockRestore();
    }
  });
});
