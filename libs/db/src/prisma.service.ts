import { Inject, Injectable, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { PrismaPg } from '@prisma/adapter-pg';

import { PrismaClient } from './generated/client';
import { DB_OPTIONS, DbOptions, resolveDbOptions } from './options';

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
