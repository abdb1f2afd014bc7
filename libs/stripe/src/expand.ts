import { invalidRequest } from './errors';
import type { FormObject } from './form';
import { readStringList } from './params';
import type { Store } from './store';

/**
 * `expand[]=latest_charge.balance_transaction`: replaces the ids along the path by the objects they name (a copy, so
 * answers never alias stored state). Lists take paths under `data.`, as Stripe's do. At most four levels deep.
 */
export function readExpand(params: FormObject): string[] {
  const paths = readStringList(params.expand, 'expand') ?? [];
  paths.forEach((path, index) => {
    if (!/^[a-z_]+(\.[a-z_]+){0,3}$/.test(path)) throw cannotExpand(path, index);
  });
  return paths;
}

export function expandBody(body: object, paths: string[], store: Store): object {
  const copy = structuredClone(body) as Record<string, unknown>;
  paths.forEach((path, index) => {
    const segments = path.split('.');
    if (copy.object !== 'list') return expandInto(copy, segments, store, path, index);
    if (segments[0] !== 'data' || segments.length < 2) throw cannotExpand(path, index);
    for (const item of copy.data as Record<string, unknown>[]) expandInto(item, segments.slice(1), store, path, index);
  });
  return copy;
}

/** Fields Stripe leaves out of an object unless they are expanded ("includable"), and how to make them. */
const INCLUDABLE: Record<string, (target: Record<string, unknown>, store: Store) => unknown> = {
  'invoice.payments': (invoice, store) => ({
    object: 'list',
    data: store.invoicePayments.withKey(String(invoice.id)).reverse(),
    has_more: false,
    url: `/v1/invoice_payments?invoice=${String(invoice.id)}`,
  }),
};

function expandInto(target: Record<string, unknown>, [field, ...rest]: string[], store: Store, path: string, index: number): void {
  let value = Object.hasOwn(target, field) ? target[field] : undefined;
  const include = value === undefined ? INCLUDABLE[`${String(target.object)}.${field}`] : undefined;
  if (include) value = target[field] = structuredClone(include(target, store));
  if (typeof value === 'string' && field !== 'id') {
    const found = store.find(value);
    if (found) value = target[field] = structuredClone(found);
  }
  if (value === null) return; // nothing to expand, as with a PaymentIntent that has no charge yet
  if (typeof value !== 'object') throw cannotExpand(path, index);
  if (rest.length > 0) expandInto(value as Record<string, unknown>, rest, store, path, index);
}

function cannotExpand(path: string, index: number) {
  return invalidRequest(`This property cannot be expanded (${path.slice(0, 100)}).`, { param: `expand[${index}]` });
}
