import { Prisma, PrismaClient } from './generated/client';
import { isRetryableTransactionError } from './errors';

/** The client handed to a transaction callback. */
export type Tx = Prisma.TransactionClient;

export interface TransactionOptions {
  isolationLevel?: Prisma.TransactionIsolationLevel;
  /** ms to wait for a connection from the pool (Prisma default 2000) */
  maxWait?: number;
  /** ms the whole transaction may take (Prisma default 5000) */
  timeout?: number;
  /** extra attempts after a serialization failure / deadlock (default 3; 0 disables) */
  retries?: number;
}

/**
 * Runs `fn` in one interactive transaction. A serialization failure or deadlock (P2034, 40001,
 * 40P01) rolls back and runs `fn` again, up to `retries` more times, so `fn` must have no side effects
 * outside the database.
 */
export async function withTransaction<T>(
  prisma: Pick<PrismaClient, '$transaction'>,
  fn: (tx: Tx) => Promise<T>,
  { retries = 3, ...options }: TransactionOptions = {},
): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await prisma.$transaction(fn, options);
    } catch (err) {
      if (attempt >= retries || !isRetryableTransactionError(err)) throw err;
      await new Promise((r) => setTimeout(r, 5 * 2 ** attempt + Math.random() * 10));
    }
  }
}
