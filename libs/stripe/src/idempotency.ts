import { ApiError } from './errors';
import type { FormValue } from './form';

/**
 * Stripe's idempotency: the first answer to a POST with an `Idempotency-Key` (4xx included, 5xx not) is stored for 24
 * hours and replayed to any later request with the same key, API key, method, path and parameters. The same key with
 * anything different is an `idempotency_error`. Keys belong to an API key.
 */

export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;
const TTL_MS = 24 * 60 * 60 * 1000;

export interface StoredReply {
  status: number;
  body: string;
  /** the request that produced it (replays say so in `Original-Request`) */
  requestId: string;
}

interface Entry extends StoredReply {
  request: string;
  storedAt: number;
}

export class IdempotencyStore {
  private readonly entries = new Map<string, Entry>();

  constructor(private readonly nowMs: () => number) {}

  /** The reply to replay, or undefined on first use. Throws when the key was first used for another request. */
  replay(apiKey: string, key: string, request: { method: string; path: string; params: FormValue }): StoredReply | undefined {
    const entry = this.entries.get(entryKey(apiKey, key));
    if (!entry) return undefined;
    if (this.nowMs() - entry.storedAt > TTL_MS) {
      this.entries.delete(entryKey(apiKey, key));
      return undefined;
    }
    if (entry.request !== describe(request)) {
      throw new ApiError(400, {
        type: 'idempotency_error',
        message: `Keys for idempotent requests can only be used with the same parameters they were first used with. Try using a key other than '${key}' if you meant to execute a different request.`,
      });
    }
    return entry;
  }

  /** `evenServerErrors`: the 500 came after the request ran (an injected fault), so it is what the key replays. */
  save(apiKey: string, key: string, request: { method: string; path: string; params: FormValue }, reply: StoredReply, { evenServerErrors = false } = {}): void {
    if (reply.status >= 500 && !evenServerErrors) return; // a server error before anything ran is worth retrying for real
    this.entries.set(entryKey(apiKey, key), { ...reply, request: describe(request), storedAt: this.nowMs() });
  }
}

function entryKey(apiKey: string, key: string): string {
  return `${apiKey}\u0000${key}`;
}

/** Method, path and parameters with object keys sorted, so the order parameters were sent in does not matter. */
function describe({ method, path, params }: { method: string; path: string; params: FormValue }): string {
  return JSON.stringify([method, path, sortKeys(params)]);
}

function sortKeys(value: FormValue): unknown {
  if (typeof value === 'string') return value;
  if (Array.isArray(value)) return value.map(sortKeys);
  return Object.keys(value)
    .sort()
    .map((key) => [key, sortKeys(value[key])]);
}
