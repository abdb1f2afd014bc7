import fc from 'fast-check';

// For specs that hold a hand-written check against the schema it stands in for: valid inputs, then the same inputs
// with members changed to awkward values, removed, or added (well-formed.spec.ts in libs/x402, requests.spec.ts in
// the ledger).

/** Values a client might send where another was expected. */
export const odd = fc.constantFrom<unknown>(
  undefined,
  null,
  '',
  'x',
  'a'.repeat(2049),
  0,
  -1,
  1.5,
  2 ** 53,
  Number.NaN,
  Number.POSITIVE_INFINITY,
  true,
  [],
  {},
  Object.create(null),
  JSON.parse('{"__proto__": {"a": 1}}'),
  new Date(0),
  '0x',
  '0x0',
  '0xzz',
  `0x${'AB'.repeat(32)}`,
  `0x${'ab'.repeat(31)}`,
  '0x857b06519E91e3A54538791bDbb0E22373e36b67',
  '0x857B06519E91E3A54538791BDBB0E22373E36B66',
  '01',
  '1e3',
  ' 1',
  (2n ** 256n).toString(),
  'eip155:1',
  '-1',
  '7',
  (2n ** 128n).toString(),
  '0F8FAD5B-D9CB-469F-A165-70867728950E',
  'stripe/usd',
  'eip155:8453/0xABC',
  'pending',
  ['pending', 'pending'],
  65_536,
  2 ** 31,
  -0,
  'EIP155:1',
  'base',
  31_536_001,
  ['a', 'b', 'c', 'd', 'e', 'f'],
  { url: 'u', extra: 1 },
);

type Path = (string | number)[];

/** Every path to a member in `value`, objects and arrays included. */
function pathsOf(value: unknown, prefix: Path = []): Path[] {
  if (typeof value !== 'object' || value === null) return [];
  return Object.keys(value).flatMap((key) => {
    const path = [...prefix, key];
    return [path, ...pathsOf((value as Record<string, unknown>)[key], path)];
  });
}

/** A copy of `value` with the member at `path` set to `replacement` (deleted when `delete`), or a key added beside it. */
function mutate(value: unknown, path: Path, change: { kind: 'set'; to: unknown } | { kind: 'delete' } | { kind: 'add'; key: string; to: unknown }): unknown {
  const copy = structuredClone(value) as Record<string | number, unknown>;
  let parent: Record<string | number, unknown> = copy;
  for (const key of path.slice(0, -1)) parent = parent[key] as Record<string | number, unknown>;
  const last = path[path.length - 1];
  if (change.kind === 'set') parent[last] = change.to;
  else if (change.kind === 'delete') delete parent[last];
  else if (typeof parent === 'object' && parent !== null) parent[change.key] = change.to;
  return copy;
}

/** A valid input, or one with one to three members changed, removed or added. */
export function mutated<T>(valid: fc.Arbitrary<T>): fc.Arbitrary<unknown> {
  const change = fc.oneof(
    odd.map((to) => ({ kind: 'set' as const, to })),
    fc.constant({ kind: 'delete' as const }),
    fc.tuple(fc.constantFrom('extra', 'unknown', 'x402Version', 'payload', '__proto__'), odd).map(([key, to]) => ({ kind: 'add' as const, key, to })),
  );
  return fc.tuple(valid, fc.array(fc.tuple(fc.nat(), change), { minLength: 1, maxLength: 3 })).map(([value, changes]) => {
    let result: unknown = value;
    for (const [pick, c] of changes) {
      const paths = pathsOf(result);
      if (paths.length) result = mutate(result, paths[pick % paths.length], c);
    }
    return result;
  });
}
