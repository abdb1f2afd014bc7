import { ProblemError } from '@mp/platform';
import type { Position } from '../core/ledger.service';

/** Cursors are opaque to clients: base64url JSON of where the next page starts. */
export function encodeCursor(value: unknown): string {
  return Buffer.from(JSON.stringify(value)).toString('base64url');
}

export function encodePosition(position: Position): string {
  return encodeCursor([position.ts.toISOString(), position.seq]);
}

export function decodePosition(cursor: string): Position {
  const [ts, seq] = decode(cursor);
  const date = new Date(String(ts));
  if (typeof ts !== 'string' || Number.isNaN(date.getTime()) || typeof seq !== 'string' || !/^[0-9]{1,19}$/.test(seq)) throw badCursor();
  return { ts: date, seq };
}

export function decodeKey(cursor: string): string {
  const [key] = decode(cursor);
  if (typeof key !== 'string' || !/^[0-9]{1,19}$/.test(key)) throw badCursor();
  return key;
}

function decode(cursor: string): unknown[] {
  try {
    const value: unknown = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
    if (Array.isArray(value)) return value;
  } catch {
    // reported below
  }
  throw badCursor();
}

function badCursor(): ProblemError {
  return new ProblemError('validation_failed', 'invalid query parameter(s): cursor', {
    invalidParams: [{ name: 'cursor', reason: 'is not a cursor this API returned' }],
  });
}
