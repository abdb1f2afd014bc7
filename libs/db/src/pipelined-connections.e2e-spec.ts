import net from 'node:net';
import { randomBytes } from 'node:crypto';

import pg from 'pg';

import { PipelinedConnections } from './pipelined-connections';

// any database of the server will do: these statements touch no table
const url = new URL(process.env.DATABASE_URL || 'postgresql://postgres@127.0.0.1:5432/machine_payments_test');
url.pathname = '/postgres';
const connectionString = url.toString();

describe('PipelinedConnections', () => {
  const applicationName = `mp-pipelined-${randomBytes(3).toString('hex')}`;
  let admin: pg.Client;
  const backends = async () =>
    (await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = $1`, [applicationName])).rows.map((r) => r.pid);
  const open = (max: number, idleTimeoutMillis = 10_000) =>
    new PipelinedConnections({ connectionString, application_name: applicationName, max, idleTimeoutMillis, connectionTimeoutMillis: 5_000 });

  beforeAll(async () => {
    admin = new pg.Client({ connectionString });
    await admin.connect();
  });
  afterAll(async () => {
    await admin?.end();
  });

  it('writes a lone statement at once and the ones that join it in that turn of the event loop together, and answers each its own rows', async () => {
    const connections = open(1);
    try {
      await connections.query({ name: 'spec_echo', text: 'SELECT $1::int AS n', values: [0] });
      // the socket's own write methods, below its cork: one call per write that leaves
      const socket = net.Socket.prototype as unknown as Record<'_write' | '_writev', (...args: unknown[]) => void>;
      const writes = [vi.spyOn(socket, '_write'), vi.spyOn(socket, '_writev')];
      let answers: { n: number }[][];
      try {
        answers = await Promise.all(
          Array.from({ length: 20 }, (_, i) => connections.query<{ n: number }>({ name: 'spec_echo', text: 'SELECT $1::int AS n', values: [i] })),
        );
        expect(writes.reduce((sum, spy) => sum + spy.mock.calls.length, 0)).toBe(2);
      } finally {
        for (const spy of writes) spy.mockRestore();
      }
      expect(answers.map(([row]) => row.n)).toEqual(Array.from({ length: 20 }, (_, i) => i));
      expect(await backends()).toHaveLength(1);
    } finally {
      await connections.end();
    }
  });

  it('fails only the statement that failed, and the ones behind it on the connection still run', async () => {
    const connections = open(1);
    try {
      const results = await Promise.allSettled([
        connections.query<{ n: number }>({ text: 'SELECT 1 AS n' }),
        connections.query({ text: 'SELECT 1 / $1::int AS n', values: [0] }),
        connections.query<{ n: number }>({ text: 'SELECT 3 AS n' }),
      ]);
      expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
      expect((results[1] as PromiseRejectedResult).reason.message).toMatch(/division by zero/);
      expect((results[2] as PromiseFulfilledResult<{ n: number }[]>).value).toEqual([{ n: 3 }]);
    } finally {
      await connections.end();
    }
  });

  it('opens at most `max` connections, a new one only while the others are full, and replaces one that broke', async () => {
    const connections = open(2);
    try {
      await connections.query({ text: 'SELECT 1' });
      await connections.query({ text: 'SELECT 1' });
      expect(await backends()).toHaveLength(1); // the first was idle again
      // eight in flight on one connection before the next opens another
      const sleeps = Array.from({ length: 8 }, () => connections.query({ text: 'SELECT pg_sleep(0.05)' }));
      expect(await backends()).toHaveLength(1);
      await Promise.all([...sleeps, ...Array.from({ length: 4 }, () => connections.query({ text: 'SELECT pg_sleep(0.05)' }))]);
      const [first, second] = await backends();
      expect(second).toBeDefined();
      expect(await backends()).toHaveLength(2);

      // a database restart, as a connection sees it
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ANY($1::int[])', [[first, second]]);
      for (let i = 0; i < 50 && (await backends()).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
      await new Promise((r) => setTimeout(r, 50));
      expect(await connections.query<{ n: number }>({ text: 'SELECT 7 AS n' })).toEqual([{ n: 7 }]);
      expect(await backends()).toHaveLength(1);
    } finally {
      await connections.end();
    }
    for (let i = 0; i < 50 && (await backends()).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    expect(await backends()).toEqual([]);
  });

  it('closes a connection idle for idleTimeoutMillis', async () => {
    const connections = open(1, 100);
    try {
      await connections.query({ text: 'SELECT 1' });
      expect(await backends()).toHaveLength(1);
      for (let i = 0; i < 50 && (await backends()).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await backends()).toEqual([]);
      expect(await connections.query<{ n: number }>({ text: 'SELECT 2 AS n' })).toEqual([{ n: 2 }]);
    } finally {
      await connections.end();
    }
  });
});
