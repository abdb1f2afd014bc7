import type { Handler } from './api';
import { oneOf, resourceMissing } from './errors';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readString, readStringList } from './params';
import type { Store, StripeEvent, StripeEventType } from './store';
import type { WebhookDispatcher } from './webhooks';

/** The API request that caused a change; events carry it as `request`. */
export interface RequestInfo {
  requestId: string;
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

  emit(type: StripeEventType, object: unknown, request: RequestInfo): StripeEvent {
    const event: StripeEvent = {
      id: newId('evt'),
      object: 'event',
      api_version: request.apiVersion,
      created: this.nowSeconds(),
      // a snapshot: later changes to the object must not rewrite history
      data: { object: structuredClone(object) },
      livemode: false,
      pending_webhooks: this.webhooks.endpointCount,
      request: { id: request.requestId, idempotency_key: request.idempotencyKey },
      type,
    };
    this.store.events.add(event);
    this.webhooks.enqueue(event);
    return event;
  }
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
