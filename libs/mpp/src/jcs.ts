/**
 * RFC 8785 JSON Canonicalization Scheme (JCS).
 *
 * - object members sorted by the UTF-16 code units of their names (what `Array#sort` does by default),
 * - numbers in ECMAScript `Number#toString` form (what `JSON.stringify` emits; -0 becomes 0),
 * - strings escaped as `JSON.stringify` escapes them (RFC 8785 §3.2.2.2 adopts exactly that),
 * - no insignificant whitespace.
 *
 * Members whose value is `undefined` are dropped (as `JSON.stringify` does); values JSON cannot
 * represent (non-finite numbers, bigint, functions, symbols, undefined at the top level or in an
 * array) throw a `JcsError`, since a canonical form must not silently change the value.
 */
export class JcsError extends Error {
  override readonly name = 'JcsError';
}

export function canonicalize(value: unknown): string {
  return write(value, new Set());
}

function write(value: unknown, seen: Set<object>): string {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'boolean':
      return value ? 'true' : 'false';
    case 'string':
      return JSON.stringify(value);
    case 'number':
      if (!Number.isFinite(value)) throw new JcsError('cannot canonicalize a non-finite number');
      return Object.is(value, -0) ? '0' : JSON.stringify(value);
    case 'object':
      break;
    default:
      throw new JcsError(`cannot canonicalize a value of type ${typeof value}`);
  }
  const object = value as object;
  if (seen.has(object)) throw new JcsError('cannot canonicalize a cyclic structure');
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      return `[${object
        .map((item) => {
          if (item === undefined) throw new JcsError('cannot canonicalize undefined inside an array');
          return write(item, seen);
        })
        .join(',')}]`;
    }
    const record = object as Record<string, unknown>;
    const members: string[] = [];
    for (const key of Object.keys(record).sort()) {
      const entry = record[key];
      if (entry === undefined) continue;
      members.push(`${JSON.stringify(key)}:${write(entry, seen)}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    seen.delete(object);
  }
}
