import { randomBytes } from 'node:crypto';

import pg from 'pg';

import { dropDatabase, ensureDatabase } from '../../../scripts/lib/database.mjs';
import { TableGrowth } from './table-growth';

const BASE_URL = process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';

describe('TableGrowth', () => {
  const u = new URL(BASE_URL);
  u.pathname = `/mp_table_growth_${randomBytes(5).toString('hex')}`;
  const url = u.toString();
  let db: pg.Client;

  beforeAll(async () => {
    await ensureDatabase(url);
    db = new pg.Client({ connectionString: url });
    await db.connect();
    await db.query('CREATE SCHEMA app; CREATE TABLE app.rows (id serial PRIMARY KEY, body text)');
  });
  afterAll(async () => {
    await db?.end();
    await dropDatabase(url);
  });

  /** Adds rows of about 1 kB each. */
  const grow = (rows: number) => db.query(`INSERT INTO app.rows (body) SELECT repeat('x', 1000) FROM generate_series(1, $1)`, [rows]);
  const pause = () => new Promise((r) => setTimeout(r, 550));

  it('starts a generation when a table has more than doubled, by at least 64 kB, and reads the sizes at most every 500 ms', async () => {
    const told: string[][] = [];
    const growth = new TableGrowth((grown) => told.push(grown));
    let reads = 0;
    const read = async (sql: string) => {
      reads++;
      return (await db.query<{ table: string; bytes: number }>(sql)).rows;
    };

    await grow(20); // about 24 kB: below the floor
    await growth.check(read);
    expect([growth.generation, reads]).toEqual([0, 1]);

    await grow(200);
    await growth.check(read); // within 500 ms of the last read: not read
    expect([growth.generation, reads]).toEqual([0, 1]);

    await pause();
    await growth.check(read);
    expect([growth.generation, reads]).toEqual([1, 2]);
    expect(told).toEqual([[expect.stringMatching(/^app\.rows 0 kB → \d+ kB$/)]]);

    await grow(100); // less than double
    await pause();
    await growth.check(read);
    expect(growth.generation).toBe(1);

    await grow(400); // more than double since the generation began
    await pause();
    await growth.check(read);
    expect(growth.generation).toBe(2);
    expect(told).toHaveLength(2);
  });
});
