import type { ChargeDeclines } from './declines';
import type { EventLog, RequestInfo } from './events';
import type { FormObject } from './form';
import type { Store } from './store';

/** What every handler works with: the objects, the event log, the (test-adjustable) clock and the armed declines. */
export interface ApiContext {
  store: Store;
  events: EventLog;
  /** the fake's clock; for objects of a test clock's customer, that clock's frozen time (see `atTime`) */
  nowSeconds(): number;
  declines: ChargeDeclines;
  /** PaymentIntents whose new refunds are `pending` (a test hook, as Stripe's test card 4000000000007726 does) */
  pendingRefunds?: Set<string>;
}

/** The same context with its clock stopped at `seconds`: objects made through it carry that time (a test clock's). */
export function atTime(context: ApiContext, seconds: number): ApiContext {
  return { ...context, nowSeconds: () => seconds };
}

export interface ApiRequest {
  params: FormObject;
  /** the `:id` parts of the route, in order */
  pathIds: string[];
  /** the path without the query string (lists echo it as `url`) */
  path: string;
  info: RequestInfo;
}

/**
 * Returns the JSON body of a 200 answer, or throws ApiError. Handlers are synchronous on purpose: a request's checks and
 * changes happen in one turn of the event loop, so two requests (even with the same idempotency key) never interleave.
 */
export type Handler = (context: ApiContext, request: ApiRequest) => object;
