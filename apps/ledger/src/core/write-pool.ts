import { Inject, Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import pg from 'pg';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { PipelinedQuery } from './pipelined-query';

/**
 * Runs a named statement: prepared once per connection, then only its parameters travel. The transaction's BEGIN goes
 * with its first statement; `commit` sends COMMIT with this one (the caller's last, whose answer decides nothing more).
 */
export type Statement = <R>(name: string, text: string, values: unknown[], options?: { commit?: boolean }) => Promise<R[]>;

/** The tables the write path's statements look rows up in (see retireStalePlans). */
const PLANNED_TABLES = ['ledger.transfers', 'ledger.accounts', 'ledger.failed_transfers', 'ledger.pending_timeouts'];
const TABLE_SIZES_SQL = `SELECT ARRAY[${PLANNED_TABLES.map((t) => `pg_relation_size('${t}')`).join(', ')}]::float8[] AS sizes`;

/** How often those sizes are read, while transactions run. */
const GROWTH_CHECK_MS = 500;

/** Growth that never retires a plan: a plan made before it looks up tables this small quickly whatever it is. */
const GROWTH_FLOOR_BYTES = 64 * 1024;

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
  /** Bumped when a table has grown to more than twice its size at the last bump (retireStalePlans). */
  private generation = 0;
  private readonly generationOf = new WeakMap<pg.PoolClient, number>();
  private sizesAtGeneration: number[] = [];
  private wroteSinceCheck = false;
  private closing = false;
  private readonly growthCheck = setInterval(() => void this.retireStalePlans(), GROWTH_CHECK_MS).unref();

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
    const client = await this.connect();
    this.wroteSinceCheck = true;
    let begun = false;
    let committed = false;
    let broken: Error | undefined;
    try {
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

  /** A connection of this generation: one of an earlier one is closed, and its plans with it. */
  private async connect(): Promise<pg.PoolClient> {
    for (;;) {
      const client = await this.pool.connect();
      // first used now, so its statements are prepared, and planned, in this generation
      if (!this.generationOf.has(client)) this.generationOf.set(client, this.generation);
      if (this.generationOf.get(client)! === this.generation) return client;
      client.release(true);
    }
  }

  /**
   * Starts a new generation of connections when a table the statements read has more than doubled since the last:
   * each connection keeps its plans for its life, and which index a plan looks a row up by depends on the table's
   * size when it was made. On a few hundred transfers, PostgreSQL looks a transfer up by ledger.transfers's
   * (merchant_id, ts, seq) index and filters on its id, which reads every transfer of the merchant; from about a
   * thousand, by its key (write-plans.e2e-spec.ts). Kept, such a plan made a batch of 100's lock take 370 ms
   * against 3 at 56,000 transfers (bench:ledger, 2026-12-04). Sizes double a few dozen times in a database's life,
   * so connections are rarely replaced; ANALYZE, which autovacuum runs when it is on, would invalidate the plans too.
   */
  async retireStalePlans(): Promise<void> {
    if (!this.wroteSinceCheck || this.closing) return;
    this.wroteSinceCheck = false;
    try {
      const { rows } = await this.pool.query<{ sizes: number[] }>(TABLE_SIZES_SQL);
      const sizes = rows[0].sizes;
      const grown = PLANNED_TABLES.flatMap((table, i) => {
        const before = this.sizesAtGeneration[i] ?? 0;
        return sizes[i] > 2 * before && sizes[i] - before > GROWTH_FLOOR_BYTES ? [`${table} ${kB(before)} → ${kB(sizes[i])}`] : [];
      });
      if (!grown.length) return;
      this.sizesAtGeneration = sizes;
      this.generation++;
      this.logger.log(`write connections replaced, to plan their statements again: ${grown.join(', ')}`);
    } catch (error) {
      // measured again after the next transaction
      if (!this.closing) this.logger.warn(`could not read the ledger's table sizes: ${(error as Error).message}`);
    }
  }

  /** After the HTTP server closed, so that requests still being answered keep their connections. */
  onApplicationShutdown(): Promise<void> {
    this.closing = true;
    clearInterval(this.growthCheck);
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
 * decide: connections are replaced as the tables grow (WritePool.retireStalePlans).
 */
export function writeConnectionOptions(databaseUrl: string): string {
  const own = '-c plan_cache_mode=force_generic_plan -c enable_seqscan=off -c enable_hashjoin=off -c enable_mergejoin=off';
  return [new URL(databaseUrl).searchParams.get('options'), own].filter(Boolean).join(' ');
}

const kB = (bytes: number) => `${Math.round(bytes / 1024)} kB`;

/** Syntax errors, undefined objects and unknown prepared statements (classes 42 and 26). */
function isStatementError(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('42') || code.startsWith('26'));
}
