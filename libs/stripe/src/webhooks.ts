import { createHmac } from 'node:crypto';
import { setMaxListeners } from 'node:events';
import http from 'node:http';
import https from 'node:https';

/**
 * Webhook delivery as Stripe does it: each event is POSTed as JSON to every endpoint with
 *
 *   Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
 *
 * which is what `stripe.webhooks.constructEvent(rawBody, header, secret)` checks. Each attempt is signed afresh.
 * Delivery never blocks the API response. Each event is retried on a non-2xx answer or a network error.
 *
 * Per endpoint, up to `concurrency` events are in flight at once, taken in creation order, as Stripe delivers
 * (concurrently, with no ordering guarantee: a receiver must cope with events out of order). With a concurrency of 1
 * events go out one at a time in creation order, and a failing event holds back the ones after it until it succeeds
 * or is given up: a simple receiver's view, which the in-process fake keeps by default.
 */

export interface WebhookEndpoint {
  url: string;
  secret: string;
  /** Stripe's `enabled_events`: the event types this endpoint receives; `*` (the default) is every one */
  enabledEvents?: readonly string[];
}

export interface WebhookDeliveryOptions {
  /** the pause before each retry; its length + 1 is the number of attempts */
  retryDelaysMs: readonly number[];
  /** per attempt */
  timeoutMs: number;
  /** for the signature timestamp */
  now: () => number;
  /** deliveries in flight at once per endpoint; 1 (the default) keeps creation order */
  concurrency?: number;
  log: (message: string) => void;
}

export const DEFAULT_RETRY_DELAYS_MS = [100, 300, 1_000, 3_000] as const;

export function stripeSignatureHeader(secret: string, payload: string, timestampSeconds: number): string {
  const signature = createHmac('sha256', secret).update(`${timestampSeconds}.${payload}`).digest('hex');
  return `t=${timestampSeconds},v1=${signature}`;
}

interface EndpointQueue extends WebhookEndpoint {
  payloads: { eventId: string; body: string }[];
  inFlight: number;
}

export class WebhookDispatcher {
  private readonly queues: EndpointQueue[] = [];
  private pending = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly stopped = new AbortController();
  private readonly concurrency: number;
  /** keep-alive sockets, at most `concurrency` per endpoint; destroyed on stop so a stopped fake leaves none open */
  private readonly agents = { http: new http.Agent({ keepAlive: true }), https: new https.Agent({ keepAlive: true }) };

  constructor(private readonly options: WebhookDeliveryOptions) {
    // every attempt in flight listens for the stop: as many listeners as deliveries, not a leak
    setMaxListeners(0, this.stopped.signal);
    this.concurrency = options.concurrency ?? 1;
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) throw new Error(`webhook concurrency must be a positive integer, got ${this.concurrency}`);
    this.agents.http.maxSockets = this.concurrency;
    this.agents.https.maxSockets = this.concurrency;
  }

  get endpointCount(): number {
    return this.queues.length;
  }

  /** How many endpoints receive events of this type (an event's `pending_webhooks` when it is made). */
  endpointsFor(type: string): number {
    return this.queues.filter((queue) => receives(queue, type)).length;
  }

  /** Like Stripe, a new endpoint only receives events created after it was added. */
  addEndpoint(endpoint: WebhookEndpoint): void {
    new URL(endpoint.url); // throws on a malformed URL now rather than at every delivery
    if (!endpoint.secret) throw new Error('a webhook endpoint needs a signing secret');
    this.queues.push({ ...endpoint, payloads: [], inFlight: 0 });
  }

  enqueue(event: { id: string; type: string }): void {
    if (this.stopped.signal.aborted) return;
    const body = JSON.stringify(event, null, 2);
    for (const queue of this.queues) {
      if (!receives(queue, event.type)) continue;
      queue.payloads.push({ eventId: event.id, body });
      this.pending += 1;
      this.pump(queue);
    }
  }

  /** Resolves once nothing is queued or in flight (every delivery succeeded or was given up). */
  drain(): Promise<void> {
    if (this.pending === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** Drops whatever is queued, aborts attempts in flight and pending retries. */
  stop(): void {
    this.stopped.abort();
    for (const queue of this.queues) queue.payloads.length = 0;
    this.pending = 0;
    this.agents.http.destroy();
    this.agents.https.destroy();
    this.notifyIfIdle();
  }

  /** Starts the oldest queued events while the endpoint has a free slot; each finished one frees its slot for the next. */
  private pump(queue: EndpointQueue): void {
    while (queue.inFlight < this.concurrency && queue.payloads.length > 0 && !this.stopped.signal.aborted) {
      const next = queue.payloads.shift()!;
      queue.inFlight += 1;
      void this.deliverWithRetries(queue, next.body).then((delivered) => {
        queue.inFlight -= 1;
        if (this.stopped.signal.aborted) return; // stop() dropped the count already
        if (!delivered) this.options.log(`webhook ${next.eventId} to ${queue.url} given up after ${this.options.retryDelaysMs.length + 1} attempts`);
        this.pending -= 1;
        this.notifyIfIdle();
        this.pump(queue);
      });
    }
  }

  private async deliverWithRetries(endpoint: WebhookEndpoint, body: string): Promise<boolean> {
    for (let attempt = 0; ; attempt++) {
      if (await this.attempt(endpoint, body)) return true;
      const delay = this.options.retryDelaysMs[attempt];
      if (delay === undefined || this.stopped.signal.aborted) return false;
      await sleep(delay, this.stopped.signal);
    }
  }

  /** One signed POST; true on a 2xx answer. */
  private attempt(endpoint: WebhookEndpoint, body: string): Promise<boolean> {
    const timestamp = Math.floor(this.options.now() / 1000);
    const url = new URL(endpoint.url);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve) => {
      const request = client.request(url, {
        method: 'POST',
        agent: client === https ? this.agents.https : this.agents.http,
        timeout: this.options.timeoutMs,
        signal: this.stopped.signal,
        headers: {
          'Content-Type': 'application/json; charset=utf-8',
          'Content-Length': Buffer.byteLength(body),
          'User-Agent': 'Stripe/1.0 (+https://stripe.com/docs/webhooks)',
          'Stripe-Signature': stripeSignatureHeader(endpoint.secret, body, timestamp),
        },
      });
      request.on('response', (response) => {
        response.resume();
        const status = response.statusCode ?? 0;
        resolve(status >= 200 && status < 300);
      });
      request.on('timeout', () => request.destroy(new Error('timed out')));
      request.on('error', () => resolve(false));
      request.end(body);
    });
  }

  private notifyIfIdle(): void {
    if (this.pending > 0) return;
    const waiters = this.idleWaiters;
    this.idleWaiters = [];
    for (const resolve of waiters) resolve();
  }
}

function receives(endpoint: WebhookEndpoint, type: string): boolean {
  return !endpoint.enabledEvents || endpoint.enabledEvents.includes('*') || endpoint.enabledEvents.includes(type);
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}
