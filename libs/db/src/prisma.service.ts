import { Inject, Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';
import type pg from 'pg';

import { PrismaClient } from './generated/client';
import { DB_OPTIONS, DbOptions, resolveDbOptions, type ResolvedDbOptions } from './options';
import { PipelinedConnections } from './pipelined-connections';

/** Connections of PrismaService.prepared at most (never more than DATABASE_POOL_SIZE). */
const PREPARED_CONNECTIONS_MAX = 4;

/**
 * The Prisma client for the whole database (all PostgreSQL schemas), over a pg pool through the
 * `@prisma/adapter-pg` driver adapter. No engine binary is involved.
 *
 * In Nest, get it from {@link DbModule}; outside Nest, `new PrismaService({ url })` and call
 * `$connect()` / `$disconnect()` yourself.
 */
@Injectable()
export class PrismaService extends PrismaClient implements OnModuleInit, OnModuleDestroy {
  readonly poolSize: number;
  private readonly resolved: ResolvedDbOptions;
  private preparedConnections: PipelinedConnections | undefined;

  constructor(@Optional() @Inject(DB_OPTIONS) options?: DbOptions) {
    const resolved = resolveDbOptions(options ?? {});
    const adapter = new PrismaPg({
      connectionString: resolved.url,
      max: resolved.poolSize,
      idleTimeoutMillis: resolved.idleTimeoutMs,
      connectionTimeoutMillis: resolved.connectionTimeoutMs,
      application_name: resolved.applicationName,
    });
    super({ adapter });
    this.poolSize = resolved.poolSize;
    this.resolved = resolved;
  }

  /**
   * Runs a named statement on a plain pg connection: prepared once per connection, then only its parameters travel.
   * For a hot path's few statements only, where Prisma Client's own work per query costs more than the database's:
   * measured here (2026-12-03, 2 vCPU, a one-row SELECT by key), 0.6–1.0 CPU-ms and 0.9–1.1 ms on the wall through
   * Prisma Client's query builder, 0.4–0.6 and 0.8 through its raw queries, 0.2 and 0.4–0.5 this way. The connections
   * are a few of their own (at most PREPARED_CONNECTIONS_MAX), opened on first use, in pipeline mode
   * (PipelinedConnections): concurrent statements share a connection and a socket write.
   */
  prepared<R>(name: string, text: string, values: unknown[]): Promise<R[]> {
    this.preparedConnections ??= this.openPreparedConnections();
    return this.preparedConnections.query<R & pg.QueryResultRow>({ name, text, values });
  }

  override async $disconnect(): Promise<void> {
    const connections = this.preparedConnections;
    this.preparedConnections = undefined;
    await Promise.all([super.$disconnect(), connections?.end()]);
  }

  private openPreparedConnections(): PipelinedConnections {
    const { url, poolSize, idleTimeoutMs, connectionTimeoutMs, applicationName } = this.resolved;
    return new PipelinedConnections({
      connectionString: url,
      max: Math.min(PREPARED_CONNECTIONS_MAX, poolSize),
      idleTimeoutMillis: idleTimeoutMs,
      connectionTimeoutMillis: connectionTimeoutMs,
      application_name: applicationName,
    });
  }

  async onModuleInit(): Promise<void> {
    await this.$connect();
    // The first query through the client pays for warming up Prisma's WebAssembly query compiler (0.3-0.5 s measured on
    // a loaded 2-core machine): paid here, at boot, rather than by the first request. Best effort: a database that is
    // not reachable yet is the readiness check's business. Any table will do; every app's database has this one.
    await this.outboxCursor.findFirst({ select: { name: true } }).catch(() => undefined);
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
  }
}
