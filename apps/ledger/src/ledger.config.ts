import { z } from 'zod';
import { env, loadConfig } from '@mp/platform';

export const LEDGER_CONFIG = Symbol('LEDGER_CONFIG');

const envSchema = z.object({
  LEDGER_PORT: env.port(4030),
  LEDGER_HOST: z.string().default('127.0.0.1'),
  DATABASE_URL: z.string().default('postgresql://postgres@127.0.0.1:5432/machine_payments'),
  DATABASE_POOL_SIZE: env.int(10, 1),
  REDIS_URL: z.string().regex(/^rediss?:\/\//, 'must be a redis:// or rediss:// URL').default('redis://127.0.0.1:6379'),
});

export interface LedgerConfig {
  port: number;
  host: string;
  databaseUrl: string;
  databasePoolSize: number;
  redisUrl: string;
}

export function loadLedgerConfig(environment: NodeJS.ProcessEnv = process.env): LedgerConfig {
  const e = loadConfig(envSchema, environment);
  return { port: e.LEDGER_PORT, host: e.LEDGER_HOST, databaseUrl: e.DATABASE_URL, databasePoolSize: e.DATABASE_POOL_SIZE, redisUrl: e.REDIS_URL };
}
