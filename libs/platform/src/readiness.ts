import { Redis } from 'ioredis';
import { ProblemError } from './problem';

/**
 * Readiness: may this process take traffic? Each app registers named checks of its dependencies (database, Redis,
 * chain RPCs, upstream services); `GET /ready` runs them all concurrently, each bounded by its timeout, and answers
 * 200 `{status:"ready", checks}` or 503 problem+json `upstream_unavailable` naming what is down. `GET /health` is
 * liveness only and checks nothing, so a dependency outage takes replicas out of rotation without restarting them.
 */

/** Resolves when the dependency is usable (optionally with a detail such as `block 42`), rejects otherwise. */
export type ReadinessCheck = (signal: AbortSignal) => Promise<string | void>;

export interface ReadinessReport {
  ready: boolean;
  /** Check name → `ok`, `ok (<detail>)` or `down: <reason>`. */
  checks: Record<string, string>;
}

export const DEFAULT_READINESS_TIMEOUT_MS = 2_000;

export class Readiness {
  private readonly checks = new Map<string, { check: ReadinessCheck; timeoutMs: number }>();

  constructor(private readonly defaultTimeoutMs = DEFAULT_READINESS_TIMEOUT_MS) {}

  /** Adds (or replaces) a named check. Returns a function that removes it. */
  register(name: string, check: ReadinessCheck, options: { timeoutMs?: number } = {}): () => void {
    const entry = { check, timeoutMs: options.timeoutMs ?? this.defaultTimeoutMs };
    this.checks.set(name, entry);
    return () => {
      if (this.checks.get(name) === entry) this.checks.delete(name);
    };
  }

  names(): string[] {
    return [...this.checks.keys()];
  }

  async run(): Promise<ReadinessReport> {
    const entries = await Promise.all(
      [...this.checks].map(async ([name, { check, timeoutMs }]) => {
        const controller = new AbortController();
        try {
          const detail = await withTimeout(
            Promise.resolve().then(() => check(controller.signal)),
            timeoutMs,
            () => controller.abort(),
          );
          return [name, detail ? `ok (${detail})` : 'ok'] as const;
        } catch (error) {
          return [name, `down: ${describeError(error)}`] as const;
        }
      }),
    );
    const checks = Object.fromEntries(entries);
    return { ready: entries.every(([, result]) => result.startsWith('ok')), checks };
  }

  /** The `/ready` answer: the report when every check passed, else a 503 `upstream_unavailable` problem with `checks`. */
  async assertReady(): Promise<{ status: 'ready'; checks: Record<string, string> }> {
    const report = await this.run();
    if (report.ready) return { status: 'ready', checks: report.checks };
    const down = Object.entries(report.checks)
      .filter(([, v]) => !v.startsWith('ok'))
      .map(([name]) => name);
    throw new ProblemError('upstream_unavailable', `not ready: ${down.join(', ')} unavailable`, { health: 'degraded', checks: report.checks });
  }
}

/** PING on a fresh connection to `url` (nothing kept open between probes; a down Redis costs one refused connect). */
export function redisCheck(url: string): ReadinessCheck {
  return async (signal) => {
    const client = new Redis(url, {
      lazyConnect: true,
      enableOfflineQueue: false,
      enableReadyCheck: false,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
      connectTimeout: 5_000,
    });
    // The connection's own error (e.g. ECONNREFUSED) says more than the "Connection is closed." that connect() rejects with.
    let connectionError: unknown;
    client.on('error', (error: unknown) => (connectionError ??= error));
    const abort = () => client.disconnect();
    signal.addEventListener('abort', abort, { once: true });
    try {
      await client.connect();
      const reply = await client.ping();
      if (reply !== 'PONG') throw new Error(`PING answered ${JSON.stringify(reply)}`);
    } catch (error) {
      throw connectionError ?? error;
    } finally {
      signal.removeEventListener('abort', abort);
      client.disconnect();
    }
  };
}

/** GET `url` must answer 2xx (e.g. an upstream service's `/health`). */
export function httpCheck(url: string): ReadinessCheck {
  return async (signal) => {
    const response = await fetch(url, { signal, headers: { accept: 'application/json' } });
    await response.arrayBuffer().catch(() => undefined);
    if (!response.ok) throw new Error(`GET ${new URL(url).pathname} answered ${response.status}`);
  };
}

/**
 * One line about why a dependency is down, without secrets: no stack, only the first line (viem puts the request URL
 * and body on later lines), URLs reduced to scheme and host (a provider URL may carry an API key), at most 200 characters.
 */
export function describeError(error: unknown): string {
  let message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? (error as { cause?: unknown }).cause : undefined;
  if (cause instanceof Error && cause.message && !message.includes(cause.message)) message = `${message}: ${cause.message}`;
  if (error instanceof AggregateError && !message && error.errors[0] instanceof Error) message = error.errors[0].message;
  const line = (message.split('\n')[0] || (error instanceof Error ? error.name : 'error')).replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/"'?#]*@/gi, '$1');
  const withoutPaths = line.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s/"'?#]+)[^\s"']*/gi, '$1');
  return withoutPaths.length > 200 ? `${withoutPaths.slice(0, 199)}…` : withoutPaths;
}

/** Rejects after `ms` (calling `onTimeout` first) unless `promise` settles before. */
export function withTimeout<T>(promise: Promise<T>, ms: number, onTimeout?: () => void): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      onTimeout?.();
      reject(new Error(`timed out after ${ms} ms`));
    }, ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Waits at most `timeoutMs` for a connection to become ready, and says whether it did. For a boot that wants Redis
 * up front (the first request should not fail needlessly) but must not hang on it.
 */
export async function waitForRedis(redis: Redis, timeoutMs = DEFAULT_READINESS_TIMEOUT_MS): Promise<boolean> {
  if (redis.status !== 'ready') {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      redis.once('ready', () => {
        clearTimeout(timer);
        resolve();
      });
    });
  }
  return redis.status === 'ready';
}
