import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { TableGrowth } from '@mp/db';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { PipelinedQuery } from './pipelined-query';

/**
 * Runs a named statement: prepared once per connection, then only its parameters travel. The transaction's BEGIN goes
 * with its first statement; `commit` sends COMMIT with this one (the caller's last, whose answer decides nothing more).
 */
export type Statement = <R>(name: string, text: string, values: unknown[], options?: { commit?: boolean }) => Promise<R[]>;

/**
 * The write path's own small pool of plain pg connections (the driver Prisma's adapter wraps), sized to the
 * writer's concurrency. Measured on the hot account, a transaction through Prisma's interactive transactions
 * cost 6.4 ms, 4.5 of them Prisma's own work and planning, all of it while the account row is locked; with
 * prepared statements on a plain connection the lock is held for the database's work only. Reads stay on Prisma.
 * `npm run bench:ledger` measures this path (2026-12-01, 2 vCPU: ~3,300 single transfers/s, ~18,400/s in batches of
 * 100, ~28,600/s in batches of 1000); the statements run here are SQL for that reason.
 */
@Injectable()
export class WritePool implements OnApplicationShutdown {
  private readonly logger = new Logger(WritePool.name);
  private readonly pool: pg.Pool;
  /** Its connections plan their statements again after the tables have grown (TableGrowth). */
  private readonly growth = new TableGrowth((grown) => this.logger.log(`write connections plan their statements again: ${grown.join(', ')}`));
  private readonly plannedIn = new WeakMap<pg.PoolClient, number>();

  constructor(@Inject(LEDGER_CONFIG) config: LedgerConfig) {
    this.pool = new pg.Pool({
      connectionString: config.databaseUrl,
      max: config.writeConcurrency + 1,
      application_name: 'ledger-writer',
      options: writeConnectionOptions(config.databaseUrl),
    });
    // An idle connection that breaks (a database restart) is dropped by the pool; the next write opens another.
    this.pool.on('error', (error) => this.logger.warn(`an idle write connection failed: ${error.message}`));
  }

  /**
   * Runs `fn` in one transaction (READ COMMITTED), committed when it returns (or with its statement that asked to) and
   * rolled back when it throws. BEGIN and COMMIT travel with statements (PipelinedQuery): a write of two statements is
   * two round trips.
   */
  async transaction<T>(fn: (run: Statement) => Promise<T>): Promise<T> {
    const client = await this.pool.connect();
    let begun = false;
    let committed = false;
    let broken: Error | undefined;
    try {
      await this.planAgainIfGrown(client);
      const run: Statement = async <R>(name: string, text: string, values: unknown[], options?: { commit?: boolean }) => {
        if (committed) throw new Error(`${name} after the transaction's COMMIT`);
        const wrap = { begin: !begun, commit: options?.commit === true };
        begun = true;
        const rows = await PipelinedQuery.run<R>(client, { name, text, values }, wrap);
        committed = wrap.commit;
        return rows;
      };
      const result = await fn(run);
      if (begun && !committed) await client.query('COMMIT');
      return result;
    } catch (error) {
      // A statement that failed to parse may be marked prepared on this connection (PipelinedQuery): drop it.
      if (isStatementError(error)) broken = error as Error;
      if (begun && !committed) await client.query('ROLLBACK').catch((e: Error) => (broken = e));
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /** Measures the tables on this connection (at most every 500 ms), and discards its plans if they have grown. */
  private async planAgainIfGrown(client: pg.PoolClient): Promise<void> {
    // a failed read leaves the plans as they are: the write goes on, and a broken connection fails it by itself
    await this.growth
      .check(async (sql) => (await client.query<{ table: string; bytes: number }>(sql)).rows)
      .catch((error: Error) => this.logger.warn(`could not read the tables' sizes: ${error.message}`));
    const planned = this.plannedIn.get(client);
    // first used now: whatever it prepares is planned at the present size
    if (planned !== undefined && planned !== this.growth.generation) await client.query('DISCARD PLANS');
    this.plannedIn.set(client, this.growth.generation);
  }

  /** After the HTTP server closed, so that requests still being answered keep their connections. */
  onApplicationShutdown(): Promise<void> {
    return this.pool.end();
  }
}

/**
 * The write connections' session settings, after any the database URL's `options` sets.
 *
 * The statements here take arrays whose lengths vary with the batch, so PostgreSQL kept planning them afresh (a custom
 * plan per execution); their generic plans are as good, and single transfers at 32 clients went from ~1,300 to
 * ~1,500/s with PostgreSQL's CPU per transfer 0.34 → 0.29 ms (bench:ledger, 2026-12-03).
 *
 * A generic plan is made once per connection, from the statistics of that moment, and kept. Made while the tables were
 * small (a new deployment, the bench's set-up), it hash-joined whole scans of ledger.transfers and ledger.accounts into
 * every transaction for the connection's life, slower as the tables grew: a hot account's transactions took 1.1 → 2.4
 * ms in the database within 4 s. Every statement here looks rows up by key, so the planner is held to index lookups
 * and nested loops whatever the statistics say (write-plans.e2e-spec.ts). Which index is still the tables' size's to
 * decide, so the connections plan again as the tables grow (TableGrowth).
 *
 * JIT off: a plan that cannot avoid a disabled node is costed at 10^10, far above jit_above_cost, and PostgreSQL compiled
 * it on every execution. TableGrowth's read of the tables' sizes (a scan of pg_class) took 40–130 ms that way against
 * 0.3 ms (2026-12-04); no statement here gains anything from JIT.
 */
export function writeConnectionOptions(databaseUrl: string): string {
  const own = '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c enable_hashjoin=off -c enable_mergejoin=off -c jit=off';
  return [new URL(databaseUrl).searchParams.get('options'), own].filter(Boolean).join(' ');
}

/** Syntax errors, undefined objects and unknown prepared statements (classes 42 and 26). */
function isStatementError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('42') || code.startsWith('26'));
}
