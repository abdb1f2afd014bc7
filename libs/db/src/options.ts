/** Connection settings for {@link PrismaService}; every field falls back to the environment, then a local default. */
export interface DbOptions {
  /** PostgreSQL URL. Default: $DATABASE_URL, then postgresql://postgres@127.0.0.1:5432/machine_payments */
  url?: string;
  /** Size of the pg connection pool. Default: $DATABASE_POOL_SIZE, then 20. */
  poolSize?: number;
  /** Milliseconds an idle pooled connection is kept. Default 10 000 (pg's default). */
  idleTimeoutMs?: number;
  /** Milliseconds to wait for a new connection before failing. Default 5 000. */
  connectionTimeoutMs?: number;
  /** Name reported to PostgreSQL (pg_stat_activity.application_name), e.g. the app name. */
  applicationName?: string;
}

export const DB_OPTIONS = Symbol('DB_OPTIONS');

export const DEFAULT_DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/machine_payments';
export const DEFAULT_POOL_SIZE = 20;

export interface ResolvedDbOptions {
  url: string;
  poolSize: number;
  idleTimeoutMs: number;
  connectionTimeoutMs: number;
  applicationName?: string;
}

export function resolveDbOptions(options: DbOptions = {}, env: NodeJS.ProcessEnv = process.env): ResolvedDbOptions {
  const url = options.url || env.DATABASE_URL || DEFAULT_DATABASE_URL;
  const rawPool = options.poolSize ?? (env.DATABASE_POOL_SIZE ? Number(env.DATABASE_POOL_SIZE) : DEFAULT_POOL_SIZE);
  if (!Number.isInteger(rawPool) || rawPool < 1) {
    throw new Error(`DATABASE_POOL_SIZE must be a positive integer, got ${String(options.poolSize ?? env.DATABASE_POOL_SIZE)}`);
  }
  return {
    url,
    poolSize: rawPool,
    idleTimeoutMs: options.idleTimeoutMs ?? 10_000,
    connectionTimeoutMs: options.connectionTimeoutMs ?? 5_000,
    applicationName: options.applicationName,
  };
}
