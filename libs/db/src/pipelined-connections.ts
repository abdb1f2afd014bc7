import pg from 'pg';

/**
 * Statements in flight on a connection before the next goes to another: filling one connection first lets more of
 * them share a write, and a few in a row cost its backend little more than one.
 */
const PIPELINE_DEPTH = 8;

/** A connection with the statements written to it and not answered yet. */
interface Connection {
  client: pg.Client;
  ready: Promise<pg.Client>;
  inFlight: number;
  corked: boolean;
  idle?: NodeJS.Timeout;
}

export interface PipelinedConnectionsOptions extends pg.ClientConfig {
  /** Connections at most. */
  max: number;
  /** Milliseconds a connection with nothing in flight is kept open. */
  idleTimeoutMillis: number;
}

/**
 * A few connections in pg's pipeline mode, for single statements outside transactions (PrismaService.prepared). A
 * statement is written without waiting for the answers to the ones before it on its connection, and the statements
 * that join a busy connection in one turn of the event loop leave in one socket write (the socket is corked until
 * `setImmediate`); one sent to an idle connection leaves at once, so a lone statement waits for nothing.
 *
 * Why not pg.Pool: a pooled connection carries one statement at a time, each its own socket write. Under 64 concurrent
 * /settle those writes were 16 % of the facilitator's CPU and the statements queued for the pool's 4 connections
 * (bench/README.md, "Pipelined statements").
 *
 * Each statement has its own Sync, so one failing does not affect the others. A statement is sent to the first
 * connection with fewer than PIPELINE_DEPTH in flight, else to a new connection while fewer than `max` are open, else
 * to the least busy one. A statement waiting on a row lock holds up the ones behind it on its connection, as a busy
 * pool held up the ones queued for it.
 */
export class PipelinedConnections {
  private readonly connections: Connection[] = [];
  private closed = false;

  constructor(private readonly options: PipelinedConnectionsOptions) {}

  async query<R extends pg.QueryResultRow>(config: pg.QueryConfig): Promise<R[]> {
    if (this.closed) throw new Error('the pipelined connections are closed');
    const connection = this.pick();
    // a statement alone on its connection leaves at once: only the ones that join it wait for the turn's end
    const alone = connection.inFlight++ === 0;
    if (connection.idle) clearTimeout(connection.idle);
    connection.idle = undefined;
    try {
      const client = await connection.ready;
      if (!alone) this.cork(connection, client);
      return (await client.query<R>(config)).rows;
    } finally {
      if (--connection.inFlight === 0 && !this.closed) {
        connection.idle = setTimeout(() => this.drop(connection, true), this.options.idleTimeoutMillis);
        connection.idle.unref();
      }
    }
  }

  async end(): Promise<void> {
    this.closed = true;
    await Promise.all([...this.connections].map((c) => this.drop(c, true)));
  }

  private pick(): Connection {
    let least: Connection | undefined;
    for (const c of this.connections) {
      if (c.inFlight < PIPELINE_DEPTH) return c;
      if (!least || c.inFlight < least.inFlight) least = c;
    }
    return least && this.connections.length >= this.options.max ? least : this.open();
  }

  private open(): Connection {
    const { max: _max, idleTimeoutMillis: _idle, ...clientConfig } = this.options;
    const client = new pg.Client({ ...clientConfig, pipeline: true });
    const connection: Connection = { client, ready: client.connect().then(() => client), inFlight: 0, corked: false };
    // a broken connection (a database restart) fails what it had in flight and is replaced on the next statement
    connection.ready.catch(() => this.drop(connection, false));
    client.on('error', () => void this.drop(connection, false));
    client.on('end', () => void this.drop(connection, false));
    this.connections.push(connection);
    return connection;
  }

  private cork(connection: Connection, client: pg.Client): void {
    if (connection.corked) return;
    // pg's Connection is not in its types; its socket is the stream its messages are written to
    const stream = (client as unknown as { connection: { stream: NodeJS.WritableStream & { cork(): void; uncork(): void } } }).connection.stream;
    connection.corked = true;
    stream.cork();
    setImmediate(() => {
      connection.corked = false;
      stream.uncork();
    });
  }

  private async drop(connection: Connection, end: boolean): Promise<void> {
    const i = this.connections.indexOf(connection);
    if (i >= 0) this.connections.splice(i, 1);
    if (connection.idle) clearTimeout(connection.idle);
    if (end) await connection.client.end().catch(() => undefined);
  }
}
