/**
 * Database error classification that works for errors from Prisma queries (P2002), raw queries
 * through Prisma ($queryRaw → P2010 carrying the SQLSTATE) and plain `pg` (SQLSTATE on `code`).
 */

interface ErrorLike {
  code?: unknown;
  meta?: Record<string, unknown>;
  cause?: unknown;
}

/** Walks the error, its `cause` chain and Prisma's `meta` looking for a Prisma code or SQLSTATE. */
function codes(err: unknown): string[] {
  const out: string[] = [];
  const seen = new Set<unknown>();
  const visit = (e: unknown, depth: number): void => {
    if (!e || typeof e !== 'object' || seen.has(e) || depth > 6) return;
    seen.add(e);
    const x = e as ErrorLike & Record<string, unknown>;
    for (const key of ['code', 'originalCode', 'sqlState']) {
      if (typeof x[key] === 'string') out.push(x[key] as string);
    }
    if (x.kind === 'UniqueConstraintViolation') out.push('23505');
    if (x.kind === 'TransactionWriteConflict') out.push('40001');
    visit(x.meta, depth + 1);
    visit(x.meta?.driverAdapterError, depth + 1);
    visit(x.cause, depth + 1);
  };
  visit(err, 0);
  return out;
}

/** True for a unique-constraint violation: Prisma P2002 or PostgreSQL 23505. */
export function isUniqueViolation(err: unknown): boolean {
  return codes(err).some((c) => c === 'P2002' || c === '23505');
}

/** True for a foreign-key violation: Prisma P2003 or PostgreSQL 23503. */
export function isForeignKeyViolation(err: unknown): boolean {
  return codes(err).some((c) => c === 'P2003' || c === '23503');
}

/** True when retrying the whole transaction may succeed: serialization failure, deadlock, Prisma P2034. */
export function isRetryableTransactionError(err: unknown): boolean {
  return codes(err).some((c) => c === 'P2034' || c === '40001' || c === '40P01');
}
