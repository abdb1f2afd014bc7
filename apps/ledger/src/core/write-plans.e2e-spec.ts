import { randomBytes } from 'node:crypto';

import pg from 'pg';

import { dropDatabase, migrateDeploy } from '../../../../scripts/lib/database.mjs';
import { DUE_SQL, LOCK_SQL, TAKE_SQL, UPDATE_SQL } from './expiry.store';
import { LOCK_AND_READ_SQL, WRITE_SQL } from './transfer.store';
import { writeConnectionOptions } from './write-pool';

const BASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';

const STATEMENTS = { LOCK_AND_READ_SQL, WRITE_SQL, DUE_SQL, LOCK_SQL, TAKE_SQL, UPDATE_SQL };

interface PlanNode {
  'Node Type': string;
  'Relation Name'?: string;
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

  it('without the planner held to them, the generic plans of the transfer path scan whole tables', async () => {
    const genericOnly = '-c plan_cache_mode=force_generic_plan';
    const found = [...(await scansAndJoins(genericOnly, url, LOCK_AND_READ_SQL)), ...(await scansAndJoins(genericOnly, url, WRITE_SQL))];
    expect(found).toEqual(expect.arrayContaining(['Seq Scan on accounts']));
  });
});
