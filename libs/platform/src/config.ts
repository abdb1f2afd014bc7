import { z } from 'zod';

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n  ${problems.join('\n  ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Validates an app's environment once at boot. Each problem names its variable, so a bad deploy fails fast
 * with a message an operator can act on.
 */
export function loadConfig<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(result.error.issues.map((issue) => `${issue.path.join('.') || '(environment)'}: ${issue.message}`));
}

/** Env helpers: every variable is a string, so numbers and booleans are parsed explicitly. */
export const env = {
  port: (fallback: number) => z.coerce.number().int().min(1).max(65_535).default(fallback),
  int: (fallback: number, min = 0) => z.coerce.number().int().min(min).default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(['true', 'false', '1', '0', 'yes', 'no'])
      .default(fallback ? 'true' : 'false')
      .transform((v) => v === 'true' || v === '1' || v === 'yes'),
  url: (fallback: string) => z.string().url().default(fallback),
  list: () =>
    z
      .string()
      .optional()
      .transform((v) =>
        v
          ? v
              .split(',')
              .map((s) => s.trim())
              .filter(Boolean)
          : [],
      ),
};

/** TRUST_PROXY: `false`, a hop count, or addresses/CIDRs/`loopback` (Express's `trust proxy`). */
export const trustProxyVar = () =>
  z
    .string()
    .regex(/^(false|true|\d{1,2}|[\w.:/, -]{1,512})$/, 'must be false, a hop count, or addresses, CIDRs and loopback/linklocal/uniquelocal separated by commas')
    .default('loopback')
    .transform((v): boolean | number | string => (v === 'false' ? false : v === 'true' ? true : /^\d+$/.test(v) ? Number(v) : v));

/** QUEUE_PREFIX: BullMQ queues of every app are namespaced in Redis by it, so apps on one database share their queues. */
export const queuePrefixVar = () =>
  z
    .string()
    .regex(/^[\w.:-]{1,64}$/, 'letters, digits and . _ : - only')
    .optional();

/** The queue prefix when QUEUE_PREFIX is not set: `mp:<database name>`, so two databases on one Redis never mix. */
export function queuePrefixOf(queuePrefix: string | undefined, databaseUrl: string): string {
  if (queuePrefix) return queuePrefix;
  try {
    return `mp:${decodeURIComponent(new URL(databaseUrl).pathname.slice(1)) || 'postgres'}`;
  } catch {
    return 'mp:default';
  }
}
