// @mp/db — Prisma client module and helpers. Apps import Prisma types from here only, never from
// the generated folder (libs/db/src/generated/, produced by `node scripts/prisma-generate.mjs`).
export { DbModule, type DbModuleAsyncOptions } from './db.module';
export { PrismaService } from './prisma.service';
export { DB_OPTIONS, DEFAULT_DATABASE_URL, DEFAULT_POOL_SIZE, resolveDbOptions, type DbOptions, type ResolvedDbOptions } from './options';
export { isForeignKeyViolation, isRetryableTransactionError, isUniqueViolation } from './errors';
export { withTransaction, type TransactionOptions, type Tx } from './transaction';
export { fromDbDecimal, toDbDecimal } from './decimal';
export { TableGrowth, TABLE_SIZES_SQL, type ReadTableSizes } from './table-growth';

// generated client: the namespace (Prisma.Decimal, Prisma.PaymentCreateInput, Prisma.TransactionClient…),
// the client class, enums and model types
export { Prisma, PrismaClient, PaymentState } from './generated/client';
export type { Payment, PaymentEvent, PaymentIdempotencyKey } from './generated/client';
