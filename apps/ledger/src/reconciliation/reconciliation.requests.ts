import { z } from 'zod';
import { limitQuery, ProblemError } from '@mp/platform';
import { ROW_KINDS, type Period } from '@mp/reconciliation';
import { RUN_SOURCES, type RowFilter, type RunPosition, type RunSource } from './run.repository';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY_MS = 24 * 3_600_000;
/** Missing members read "is required" rather than zod's "expected string, received undefined". */
const PARSE = { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : undefined) };
const instant = z.iso.datetime({ offset: true, error: 'must be an ISO 8601 date-time with a time zone, e.g. 2026-11-30T00:00:00Z' });

const runRequest = z.strictObject({
  merchantId: z.string().regex(UUID, 'must be a UUID').optional(),
  from: instant,
  to: instant,
  sources: z
    .array(z.enum(RUN_SOURCES, { error: `must list sources out of ${RUN_SOURCES.join(', ')}` }))
    .min(1, 'must name at least one source')
    .refine((list) => new Set(list).size === list.length, 'must not name a source twice')
    .optional(),
});

const rowsQuery = z.strictObject({
  kind: z.enum(['all', 'breaks', ...ROW_KINDS] as [string, ...string[]]).optional(),
  limit: limitQuery(1000).optional(),
  cursor: z
    .string()
    .regex(/^(0|[1-9][0-9]{0,8})$/, 'is not a cursor this API returned')
    .optional(),
  token: z.string().max(200).optional(),
});

const readQuery = z.strictObject({ token: z.string().max(200).optional() });

const listQuery = z.strictObject({
  limit: limitQuery(100).optional(),
  cursor: z.string().max(200).optional(),
});

export interface RunRequest {
  /** the merchant the caller means; must be the API key's when given */
  merchantId?: string;
  period: Period;
  /** sorted; undefined: every source the ledger is configured for */
  sources?: RunSource[];
}

/** POST /reconciliations: a period of at most `maxPeriodDays`, from before to. */
export function parseRunRequest(body: unknown, maxPeriodDays: number): RunRequest {
  const parsed = runRequest.safeParse(body ?? {}, PARSE);
  if (!parsed.success) throw invalid(parsed.error.issues, 'body');
  const period = { from: new Date(parsed.data.from), to: new Date(parsed.data.to) };
  if (period.from >= period.to) throw invalid([{ path: ['to'], message: 'must be after from' }], 'body');
  if (period.to.getTime() - period.from.getTime() > maxPeriodDays * DAY_MS)
    throw invalid([{ path: ['to'], message: `the period may span at most ${maxPeriodDays} days` }], 'body');
  return {
    ...(parsed.data.merchantId && { merchantId: parsed.data.merchantId.toLowerCase() }),
    period,
    ...(parsed.data.sources && { sources: [...parsed.data.sources].sort() }),
  };
}

export function parseRunId(id: string): string {
  if (!UUID.test(id)) throw invalid([{ path: ['id'], message: 'must be a reconciliation id (a UUID)' }], 'path parameter');
  return id.toLowerCase();
}

export function parseRowsQuery(query: unknown): { filter: RowFilter; limit: number; after: number; token?: string } {
  const parsed = rowsQuery.safeParse(query ?? {});
  if (!parsed.success) throw invalid(parsed.error.issues, 'query parameter');
  const { kind = 'all', limit = 500, cursor, token } = parsed.data;
  return { filter: kind as RowFilter, limit, after: cursor === undefined ? -1 : Number(cursor), ...(token && { token }) };
}

/** GET /reconciliations: `limit` (1–100, default 20) and the opaque `cursor` of the previous page. */
export function parseListQuery(query: unknown): { limit: number; after?: RunPosition } {
  const parsed = listQuery.safeParse(query ?? {});
  if (!parsed.success) throw invalid(parsed.error.issues, 'query parameter');
  const { limit = 20, cursor } = parsed.data;
  return { limit, ...(cursor !== undefined && { after: decodeRunCursor(cursor) }) };
}

/** Cursors are opaque to clients: base64url JSON of the last run's position. */
export function encodeRunCursor(position: RunPosition): string {
  return Buffer.from(JSON.stringify([position.createdMicros, position.id])).toString('base64url');
}

function decodeRunCursor(cursor: string): RunPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    // reported below
  }
  const [createdMicros, id] = Array.isArray(value) ? value : [];
  if (typeof createdMicros !== 'string' || !/^-?[0-9]{1,18}$/.test(createdMicros) || typeof id !== 'string' || !UUID.test(id)) {
    throw invalid([{ path: ['cursor'], message: 'is not a cursor this API returned' }], 'query parameter');
  }
  return { createdMicros, id: id.toLowerCase() };
}

export function parseReadQuery(query: unknown): { token?: string } {
  const parsed = readQuery.safeParse(query ?? {});
  if (!parsed.success) throw invalid(parsed.error.issues, 'query parameter');
  return parsed.data;
}

function invalid(issues: readonly { path: readonly PropertyKey[]; message: string; code?: string; keys?: string[] }[], where: string): ProblemError {
  const params = issues.map((i) =>
    i.code === 'unrecognized_keys'
      ? { name: (i.keys ?? []).join(', '), reason: `unknown ${where === 'body' ? 'member' : where}` }
      : { name: i.path.join('.') || where, reason: i.message },
  );
  return new ProblemError('validation_failed', `invalid ${where === 'body' ? 'body member' : where}(s): ${params.map((p) => p.name).join(', ')}`, {
    invalidParams: params,
  });
}
