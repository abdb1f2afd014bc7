import type { Handler } from './api';
import { oneOf, resourceMissing } from './errors';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readString, readStringList } from './params';
import type { Store, StripeEvent, StripeEventType } from './store';
import type { WebhookDispatcher } from './webhooks';

/** The API request that caused a change; events carry it as `request`. */
export interface RequestInfo {
  /** null for what Stripe does by itself (a renewal when a test clock advances) */
  requestId: string | null;
  idempotencyKey: string | null;
  apiVersion: string;
}

/** Records an Event for every state change and hands it to webhook delivery. */
export class EventLog {
  constructor(
    private readonly store: Store,
    private readonly webhooks: WebhookDispatcher,
    private readonly nowSeconds: () => number,
  ) {}

  /** `previousAttributes`: for `*.updated` events, what `changedAttributes` found. */
  emit(type: StripeEventType, object: unknown, request: RequestInfo, previousAttributes?: Record<string, unknown>): StripeEvent {
    const event: StripeEvent = {
      id: newId('evt'),
      object: 'event',
      api_version: request.apiVersion,
      created: this.nowSeconds(),
      // a snapshot: later changes to the object must not rewrite history
      data: { object: structuredClone(object), ...(previousAttributes && { previous_attributes: structuredClone(previousAttributes) }) },
      livemode: false,
      pending_webhooks: this.webhooks.endpointsFor(type),
      request: { id: request.requestId, idempotency_key: request.idempotencyKey },
      type,
    };
    this.store.events.add(event);
    this.webhooks.enqueue(event);
    return event;
  }
}

/** What Stripe does on its own, with no API request behind it: its events carry `request: { id: null, idempotency_key: null }`. */
export function automaticRequest(apiVersion: string): RequestInfo {
  return { requestId: null, idempotencyKey: null, apiVersion };
}

/**
 * `data.previous_attributes` of an update event: each top-level field whose value changed, with its value before.
 * Nested objects and lists are given whole (Stripe goes one level deeper for hashes; whole values carry the same facts).
 */
export function changedAttributes(before: object, after: object): Record<string, unknown> {
  const previous: Record<string, unknown> = {};
  const old = before as Record<string, unknown>;
  const now = after as Record<string, unknown>;
  for (const key of Object.keys(now)) {
    if (JSON.stringify(old[key]) !== JSON.stringify(now[key])) previous[key] = old[key] === undefined ? null : structuredClone(old[key]);
  }
  return previous;
}

export const retrieveEvent: Handler = (context, request) => {
  onlyParams(request.params, []);
  const event = context.store.events.get(request.pathIds[0]);
  if (!event) throw resourceMissing('event', request.pathIds[0]);
  return event;
};

/** Filters: `type` (a `*` wildcard allowed, e.g. `payment_intent.*`) or `types[]`, and `created`. */
export const listEvents: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'type', 'types']);
  const type = readString(params.type, 'type');
  const types = readStringList(params.types, 'types');
  if (type && types) throw oneOf('type', 'types');
  const patterns = types ?? (type ? [type] : []);
  return paginate(
    context.store.events.all(),
    params,
    request.path,
    (event) => patterns.length === 0 || patterns.some((pattern) => matchesType(event.type, pattern)),
  );
};

/** `*` matches any run of characters. Plain string search rather than a RegExp, so no pattern can backtrack for long. */
function matchesType(type: string, pattern: string): boolean {
  const parts = pattern.split('*');
  const first = parts[0];
  const last = parts[parts.length - 1];
  if (parts.length === 1) return type === pattern;
  if (type.length < first.length + last.length || !type.startsWith(first) || !type.endsWith(last)) return false;
  let at = first.length;
  const end = type.length - last.length;
  for (const middle of parts.slice(1, -1)) {
    const found = type.indexOf(middle, at);
    if (found < 0 || found + middle.length > end) return false;
    at = found + middle.length;
  }
  return true;
}
