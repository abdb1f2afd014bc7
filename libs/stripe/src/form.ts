/**
 * Stripe's v1 API speaks application/x-www-form-urlencoded with bracket notation:
 *
 *   metadata[order]=42&payment_method_types[0]=card&usage_limits[max_amount]=5000&expand[]=latest_charge
 *
 * decodes to `{ metadata: { order: '42' }, payment_method_types: ['card'], usage_limits: { max_amount: '5000' }, expand: ['latest_charge'] }`.
 * Query strings of GET requests use the same notation. Values stay strings; the handlers parse them.
 * A segment that is a number or empty (`a[0]`, `a[]`) makes its parent an array, anything else an object.
 */

export type FormValue = string | FormValue[] | FormObject;
export interface FormObject {
  [key: string]: FormValue;
}

export class FormError extends Error {}

/** Bounds that keep a hostile body from costing much: pairs per body and nesting depth. */
export const FORM_LIMITS = { maxPairs: 2000, maxDepth: 8 } as const;

type Draft = { kind: 'value'; value: string } | { kind: 'object'; entries: Map<string, Draft> } | { kind: 'array'; entries: Map<number, Draft> };
type Container = Exclude<Draft, { kind: 'value' }>;

const KEY = /^([^[\]]+)((?:\[[^[\]]*\])*)$/;
const SEGMENT = /\[([^[\]]*)\]/g;
const INDEX = /^(?:|0|[1-9]\d{0,5})$/;

/** Decodes a form body or a query string (a leading `?` is ignored). Throws FormError on malformed input. */
export function decodeForm(text: string): FormObject {
  const root: Container = { kind: 'object', entries: new Map() };
  const pairs = text
    .replace(/^\?/, '')
    .split('&')
    .filter((pair) => pair !== '');
  if (pairs.length > FORM_LIMITS.maxPairs) throw new FormError(`too many parameters (more than ${FORM_LIMITS.maxPairs})`);
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const key = decodeComponent(eq < 0 ? pair : pair.slice(0, eq));
    const value = eq < 0 ? '' : decodeComponent(pair.slice(eq + 1));
    insert(root, parseKey(key), value, key);
  }
  return finish(root) as FormObject;
}

function decodeComponent(text: string): string {
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    throw new FormError(`invalid percent-encoding in ${JSON.stringify(text.slice(0, 60))}`);
  }
}

function parseKey(key: string): string[] {
  const match = KEY.exec(key);
  if (!match) throw new FormError(`invalid parameter name ${JSON.stringify(key.slice(0, 60))}`);
  const path = [match[1], ...[...match[2].matchAll(SEGMENT)].map((segment) => segment[1])];
  if (path.length > FORM_LIMITS.maxDepth) throw new FormError(`parameter ${JSON.stringify(key.slice(0, 60))} is nested too deeply`);
  return path;
}

function insert(root: Container, path: string[], value: string, key: string): void {
  let node: Container = root;
  for (let i = 0; i < path.length; i++) {
    const slot = slotIn(node, path[i], key);
    const existing = read(node, slot);
    if (i === path.length - 1) {
      if (existing && existing.kind !== 'value') throw conflict(key);
      write(node, slot, { kind: 'value', value });
      return;
    }
    const wanted = INDEX.test(path[i + 1]) ? 'array' : 'object';
    if (!existing) {
      const child: Container = wanted === 'array' ? { kind: 'array', entries: new Map() } : { kind: 'object', entries: new Map() };
      write(node, slot, child);
      node = child;
    } else if (existing.kind === wanted) {
      node = existing;
    } else {
      throw conflict(key);
    }
  }
}

/** Where `segment` goes in `node`: an object key, or an array index (`[]` appends). */
function slotIn(node: Container, segment: string, key: string): string | number {
  if (node.kind === 'object') return segment;
  if (!INDEX.test(segment)) throw conflict(key);
  return segment === '' ? Math.max(-1, ...node.entries.keys()) + 1 : Number(segment);
}

function read(node: Container, slot: string | number): Draft | undefined {
  return node.kind === 'object' ? node.entries.get(String(slot)) : node.entries.get(slot as number);
}

function write(node: Container, slot: string | number, draft: Draft): void {
  if (node.kind === 'object') node.entries.set(String(slot), draft);
  else node.entries.set(slot as number, draft);
}

function conflict(key: string): FormError {
  return new FormError(`parameter ${JSON.stringify(key.slice(0, 60))} mixes a value, an object and an array`);
}

/** Drafts to plain values. Arrays are compacted in index order; Object.fromEntries keeps `__proto__` an own key. */
function finish(draft: Draft): FormValue {
  if (draft.kind === 'value') return draft.value;
  if (draft.kind === 'array') return [...draft.entries.entries()].sort(([a], [b]) => a - b).map(([, child]) => finish(child));
  return Object.fromEntries([...draft.entries].map(([key, child]) => [key, finish(child)]));
}
