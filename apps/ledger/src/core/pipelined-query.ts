import pg from 'pg';

/** What pg's Query does with the connection when it sends a prepared statement (not in its type definitions). */
interface ExtendedProtocol {
  parse(options: { text: string; name?: string }): void;
  bind(options: { statement?: string; portal?: string; values?: unknown[] }): void;
  execute(options: { portal?: string; rows?: number }): void;
}

interface QueryInternals {
  prepare(connection: ExtendedProtocol): void;
}

/**
 * A prepared statement sent with `BEGIN` before it, `COMMIT` after it, or both, in one pipeline (one Sync): one round
 * trip instead of two or three. PostgreSQL runs the messages before a Sync in order and stops at the first error, so
 * a failed statement is never committed: the transaction is left aborted, and the caller rolls it back.
 *
 * Hand-written over pg's Query because pg sends one statement per round trip and the ledger's writer pays for each:
 * its transactions wait on the event loop of a process busy with HTTP, 1–2 ms per round trip at 32 clients
 * (bench:ledger).
 */
export class PipelinedQuery extends pg.Query {
  private constructor(
    config: pg.QueryConfig,
    private readonly wrap: { begin: boolean; commit: boolean },
    callback: (error: Error | null, results: pg.QueryResult | pg.QueryResult[]) => void,
  ) {
    super(config, undefined, callback as never);
  }

  /** The statement's rows; rejected with the first error of the pipeline. */
  static run<R>(client: pg.ClientBase, config: pg.QueryConfig, wrap: { begin: boolean; commit: boolean }): Promise<R[]> {
    return new Promise((resolve, reject) => {
      // pg answers a submittable through its callback, not a promise
      void client.query(
        new PipelinedQuery(config, wrap, (error, results) => {
          if (error) return reject(error);
          const all = Array.isArray(results) ? results : [results];
          resolve((all[wrap.begin ? 1 : 0]?.rows ?? []) as R[]);
        }),
      );
    });
  }

  /** Called by pg (Query.submit) with the connection corked, so everything leaves in one write. */
  prepare(connection: ExtendedProtocol): void {
    const command = (text: string) => {
      connection.parse({ text });
      connection.bind({});
      connection.execute({});
    };
    if (this.wrap.begin) command('BEGIN');
    const prepare = (pg.Query.prototype as unknown as QueryInternals).prepare;
    if (!this.wrap.commit) return prepare.call(this, connection);
    // Query.prepare ends with the statement's execute, then sync: COMMIT goes between them.
    const execute = connection.execute;
    connection.execute = (options) => {
      execute.call(connection, options);
      connection.execute = execute;
      command('COMMIT');
    };
    try {
      prepare.call(this, connection);
    } finally {
      delete (connection as Partial<ExtendedProtocol>).execute; // back to the prototype's
    }
  }
}
