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
  }

  async onModuleDestroy(): Promise<void> {
    await this.$disconnect();
  }
}
