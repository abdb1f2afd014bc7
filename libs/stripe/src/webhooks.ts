import { createHmac } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';

/**
 * Webhook delivery as Stripe does it: each event is POSTed as JSON to every endpoint with
 *
 *   Stripe-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "<t>.<raw body>")>
 *
 * which is what `stripe.webhooks.constructEvent(rawBody, header, secret)` checks. Each attempt is signed afresh.
 * Delivery never blocks the API response. Per endpoint, events go out one at a time in creation order (a failing
 * event holds back the ones after it until it succeeds or is given up), retried on a non-2xx answer or a network error.
 */

export interface WebhookEndpoint {
  url: string;
  secret: string;
}

export interface WebhookDeliveryOptions {
  /** the pause before each retry; its length + 1 is the number of attempts */
  retryDelaysMs: readonly number[];
  /** per attempt */
  timeoutMs: number;
  /** for the signature timestamp */
  now: () => number;
  log: (message: string) => void;
}

export const DEFAULT_RETRY_DELAYS_MS = [100, 300, 1_000, 3_000] as const;

export function stripeSignatureHeader(secret: string, payload: string, timestampSeconds: number): string {
  const signature = createHmac('sha256', secret).update(`${timestampSeconds}.${payload}`).digest('hex');
  return `t=${timestampSeconds},v1=${signature}`;
}

interface EndpointQueue extends WebhookEndpoint {
  payloads: { eventId: string; body: string }[];
  busy: boolean;
}

export class WebhookDispatcher {
  private readonly queues: EndpointQueue[] = [];
  private pending = 0;
  private idleWaiters: (() => void)[] = [];
  private readonly stopped = new AbortController();

  constructor(private readonly options: WebhookDeliveryOptions) {}

  get endpointCount(): number {
    return this.queues.length;
  }

  /** Like Stripe, a new endpoint only receives events created after it was added. */
  addEndpoint(endpoint: WebhookEndpoint): void {
    new URL(endpoint.url); // throws on a malformed URL now rather than at every delivery
    if (!endpoint.secret) throw new Error('a webhook endpoint needs a signing secret');
    this.queues.push({ ...endpoint, payloads: [], busy: false });
  }

  enqueue(event: { id: string }): void {
    if (this.stopped.signal.aborted) return;
    const body = JSON.stringify(event, null, 2);
    for (const queue of this.queues) {
      queue.payloads.push({ eventId: event.id, body });
      this.pending += 1;
      if (!queue.busy) void this.work(queue);
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
    this.notifyIfIdle();
  }

  private async work(queue: EndpointQueue): Promise<void> {
    queue.busy = true;
    while (queue.payloads.length > 0 && !this.stopped.signal.aborted) {
      const next = queue.payloads[0];
      const delivered = await this.deliverWithRetries(queue, next.body);
      if (this.stopped.signal.aborted) break;
      if (!delivered) this.options.log(`webhook ${next.eventId} to ${queue.url} given up after ${this.options.retryDelaysMs.length + 1} attempts`);
      queue.payloads.shift();
      this.pending -= 1;
      this.notifyIfIdle();
    }
    queue.busy = false;
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
        agent: false, // no keep-alive: a stopped fake leaves no sockets open in the receiver
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
