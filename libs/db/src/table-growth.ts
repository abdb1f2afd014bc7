/** Every ordinary table of the database outside PostgreSQL's own schemas, with its size on disk. */
export const TABLE_SIZES_SQL = `SELECT c.oid::regclass::text AS "table", pg_relation_size(c.oid)::float8 AS bytes
  FROM pg_class c
 WHERE c.relkind = 'r' AND c.relpersistence = 'p'
   AND c.relnamespace NOT IN ('pg_catalog'::regnamespace, 'information_schema'::regnamespace)`;

/** Growth that starts no generation: a plan made before it looks rows up in tables this small quickly whatever it is. */
const GROWTH_FLOOR_BYTES = 64 * 1024;

/** How often the sizes are read at most, while statements run. */
const CHECK_INTERVAL_MS = 500;

/** Runs TABLE_SIZES_SQL and gives its rows. */
export type ReadTableSizes = (sql: string) => Promise<{ table: string; bytes: number }[]>;

/**
 * Generations of the tables' sizes, for connections that keep prepared statements: a new one starts whenever a table
 * has more than doubled since the last one began, by at least 64 kB. A connection planned in an earlier generation
 * should plan again (`DISCARD PLANS`) before its next statement.
 *
 * Why: PostgreSQL keeps a prepared statement's generic plan for the connection's life, made from the tables' size when
 * it was planned. On a table of a few hundred rows the planner costs a lookup by the primary key and one by another
 * index whose leading column the statement also names the same, and may take the other: then every later lookup reads
 * all the rows that share that column. Measured here (2026-12-04): the ledger's lock of a batch of 100 took 370 ms at
 * 56,000 transfers, 3 ms planned again. ANALYZE invalidates plans too, but only where autovacuum runs, and up to a
 * minute later. Sizes double a few dozen times per table in a database's life, so plans are made again rarely.
 */
export class TableGrowth {
  /** The present generation: the number of times a table has more than doubled. */
  generation = 0;
  private readonly sizes = new Map<string, number>();
  private checkedAt = -Infinity;

  /** `onGrowth` is told which tables grew, as `facilitator.payments 96 kB → 224 kB`, when a generation starts. */
  constructor(private readonly onGrowth: (grown: string[]) => void = () => undefined) {}

  /**
   * Reads the sizes through `read` unless they were read in the last 500 ms, and starts a generation if a table has
   * grown enough. Call it where statements run: an idle database is not measured.
   */
  async check(read: ReadTableSizes): Promise<void> {
    const now = performance.now();
    if (now - this.checkedAt < CHECK_INTERVAL_MS) return;
    this.checkedAt = now;
    const rows = await read(TABLE_SIZES_SQL);
    const grown = rows.flatMap(({ table, bytes }) => {
      const before = this.sizes.get(table) ?? 0;
      return bytes > 2 * before && bytes - before > GROWTH_FLOOR_BYTES ? [`${table} ${kB(before)} → ${kB(bytes)}`] : [];
    });
    if (!grown.length) return;
    for (const { table, bytes } of rows) this.sizes.set(table, bytes);
    this.generation++;
    this.onGrowth(grown);
  }
}

const kB = (bytes: number) => `${Math.round(bytes / 1024)} kB`;
