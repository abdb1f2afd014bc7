import { ProblemError } from '@mp/platform';

/** Where a list page stopped: the (created_at, id) of its last row. */
export interface PagePosition {
  createdAt: Date;
  id: string;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Opaque to clients: the position of the last row of the previous page. */
export function encodePageCursor(position: PagePosition): string {
  return Buffer.from(JSON.stringify([position.createdAt.toISOString(), position.id])).toString('base64url');
}

/** The position a cursor of ours names; anything else is a 400 naming `cursor` with `reason`. */
export function decodePageCursor(cursor: string, reason: string): PagePosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as [unknown, unknown];
    const date = new Date(String(createdAt));
    if (typeof createdAt === 'string' && !Number.isNaN(date.getTime()) && typeof id === 'string' && UUID.test(id))
      return { createdAt: date, id: id.toLowerCase() };
  } catch {
    // reported below
  }
  throw new ProblemError('validation_failed', 'invalid query parameter(s): cursor', { invalidParams: [{ name: 'cursor', reason }] });
}

/**
 * A page from rows read with `LIMIT limit + 1`: the first `limit` rows, and where the next page starts when the extra
 * row shows there is one.
 */
export function pageOf<R extends PagePosition>(rows: R[], limit: number): { rows: R[]; next?: PagePosition } {
  if (rows.length <= limit) return { rows };
  const page = rows.slice(0, limit);
  const last = page[page.length - 1];
  return { rows: page, next: { createdAt: last.createdAt, id: last.id } };
}
