import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ApiContext } from './api';
import { ChargeDeclines, type DeclineOptions } from './declines';
import { ApiError, invalidRequest, type StripeErrorBody } from './errors';
import { automaticRequest, EventLog } from './events';
import { expandBody, readExpand } from './expand';
import { Faults, type HeldRequest } from './faults';
import { decodeForm, FormError, type FormObject } from './form';
import { IdempotencyStore, MAX_IDEMPOTENCY_KEY_LENGTH, type StoredReply } from './idempotency';
import { newId } from './ids';
import { finishRefund } from './refunds';
import { matchRoute } from './routes';
import { Store, type StripeEvent } from './store';
import { DEFAULT_RETRY_DELAYS_MS, WebhookDispatcher, type WebhookEndpoint } from './webhooks';

export interface FakeStripeOptions {
  /** default 127.0.0.1 */
  host?: string;
  /** 0 (the default) lets the OS pick a free port */
  port?: number;
  /** endpoints that receive every event from the start */
  webhooks?: WebhookEndpoint[];
  /** deliver webhooks; default true (events are recorded either way) */
  deliverWebhooks?: boolean;
  /** pauses before each webhook retry; default 100, 300, 1000, 3000 ms (so 5 attempts) */
  webhookRetryDelaysMs?: readonly number[];
  /** per webhook attempt; default 10 s */
  webhookTimeoutMs?: number;
  /**
   * webhook deliveries in flight at once per endpoint, as Stripe sends them (concurrently, in no guaranteed order);
   * default 1: one at a time in creation order
   */
  webhookConcurrency?: number;
  /** the clock, in ms since the epoch; tests move it to expire tokens. Default Date.now */
  now?: () => number;
  /** where unexpected errors and abandoned webhooks are reported; default nowhere */
  log?: (message: string) => void;
}

export interface FakeStripe {
  host: string;
  port: number;
  /** http://host:port */
  url: string;
  stop(): Promise<void>;
  /** `enabledEvents`: Stripe's `enabled_events` (default every event) */
  addWebhookEndpoint(url: string, secret: string, enabledEvents?: readonly string[]): void;
  /** every event so far, oldest first */
  events(): StripeEvent[];
  /** every API request that reached a route so far, oldest first: what a client really sent */
  requests(): RecordedRequest[];
  /** waits until every queued webhook delivery finished (succeeded or was given up) */
  drainWebhooks(): Promise<void>;
  /**
   * Holds the next `method path` request before it runs, until `release()`: meanwhile a request with the same
   * idempotency key gets Stripe's `409 idempotency_key_in_use`, as when a client retries a call still running at Stripe.
   */
  hold(method: 'GET' | 'POST', path: string): HeldRequest;
  /**
   * The next `times` `method path` requests run (a PaymentIntent is charged) and are then answered `500 api_error`.
   * Stripe saves what a request that started running answered, 500s included, so their idempotency key replays the 500.
   */
  failAfterRunning(method: 'GET' | 'POST', path: string, times?: number): void;
  /**
   * The next charges (every one by default, or `times`) to this customer (`cus_…`) or payment method (`pm_…`) are
   * declined as a card decline would be: a subscription renewal then fails (`invoice.payment_failed`, `past_due`).
   */
  declineCharges(customerOrPaymentMethod: string, options?: DeclineOptions): void;
  /** undoes `declineCharges` */
  clearDeclines(customerOrPaymentMethod: string): void;
  /**
   * New refunds of this PaymentIntent are answered `pending` (as Stripe's test card 4000000000007726 makes them), until
   * `finishRefund` ends each one.
   */
  pendRefunds(paymentIntent: string): void;
  /** Ends a pending refund as Stripe later would: `refund.updated` and `charge.refunded`, or `refund.updated` and `refund.failed`. */
  finishRefund(refundId: string, outcome: 'succeeded' | 'failed'): void;
}

/** The API version answered when a request names none: the one stripe-node 23.1.0 pins. */
export const DEFAULT_API_VERSION = '2026-10-28.endive';
export const MAX_BODY_BYTES = 1024 * 1024;

/** Options for `new Stripe(key, options)` that point the real SDK at the fake. */
export function stripeClientOptions(fake: Pick<FakeStripe, 'host' | 'port'>): { host: string; port: number; protocol: 'http'; maxNetworkRetries: number } {
  return { host: fake.host, port: fake.port, protocol: 'http', maxNetworkRetries: 0 };
}

export interface RecordedRequest {
  method: string;
  path: string;
  params: unknown;
  idempotencyKey?: string;
  stripeVersion: string;
}

interface Reply {
  status: number;
  body: string;
  headers?: Record<string, string>;
}

export async function startFakeStripe(options: FakeStripeOptions = {}): Promise<FakeStripe> {
  const nowMs = options.now ?? Date.now;
  const log = options.log ?? (() => {});
  const webhooks = new WebhookDispatcher({
    retryDelaysMs: options.webhookRetryDelaysMs ?? DEFAULT_RETRY_DELAYS_MS,
    timeoutMs: options.webhookTimeoutMs ?? 10_000,
    concurrency: options.webhookConcurrency ?? 1,
    now: nowMs,
    log,
  });
  if (options.deliverWebhooks !== false) for (const endpoint of options.webhooks ?? []) webhooks.addEndpoint(endpoint);
  const store = new Store();
  const nowSeconds = () => Math.floor(nowMs() / 1000);
  const declines = new ChargeDeclines();
  const pendingRefunds = new Set<string>();
  const context: ApiContext = { store, events: new EventLog(store, webhooks, nowSeconds), nowSeconds, declines, pendingRefunds };
  const idempotency = new IdempotencyStore(nowMs);
  const recorded: RecordedRequest[] = [];
  const faults = new Faults();
  /** idempotency keys (per API key) of requests being held: a second request with one gets a 409 */
  const running = new Set<string>();

  const server = http.createServer((req, res) => {
    const requestId = newId('req');
    const apiVersion = firstHeader(req.headers['stripe-version']) || DEFAULT_API_VERSION;
    void respond(req, requestId, apiVersion)
      .catch((error: unknown) => replyToError(error, log))
      .then((reply) => send(res, reply, { 'Request-Id': requestId, 'Stripe-Version': apiVersion }));
  });

  /** Auth, routing, body, idempotency, then the handler. Throws ApiError for answers that are never stored. */
  async function respond(req: http.IncomingMessage, requestId: string, apiVersion: string): Promise<Reply> {
    const method = req.method ?? 'GET';
    const url = new URL(req.url ?? '/', 'http://fake-stripe.invalid');
    const apiKey = authenticate(req.headers.authorization);
    const matched = matchRoute(method, url.pathname);
    if (!matched) {
      const message = `Unrecognized request URL (${method}: ${url.pathname.slice(0, 200)}). Please see https://stripe.com/docs or we can help at https://support.stripe.com/.`;
      throw new ApiError(404, { type: 'invalid_request_error', message });
    }
    const idempotencyKey = method === 'POST' ? firstHeader(req.headers['idempotency-key']) : undefined;
    if (idempotencyKey !== undefined && (idempotencyKey === '' || idempotencyKey.length > MAX_IDEMPOTENCY_KEY_LENGTH)) {
      throw invalidRequest(`Invalid Idempotency-Key: it must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} characters long.`);
    }
    const params = method === 'POST' ? decodeParams(await readBody(req), req.headers['content-type']) : decodeParams(url.search);
    const expand = readExpand(params);
    const request = { method, path: url.pathname, params };
    recorded.push({ ...request, ...(idempotencyKey !== undefined && { idempotencyKey }), stripeVersion: apiVersion });
    const echo: Record<string, string> = idempotencyKey ? { 'Idempotency-Key': idempotencyKey } : {};

    const fault = faults.take(method, url.pathname);
    const runningKey = idempotencyKey === undefined ? undefined : `${apiKey}\u0000${idempotencyKey}`;
    if (runningKey !== undefined && running.has(runningKey)) throw keyInUse(idempotencyKey!);
    if (fault?.kind === 'hold') {
      if (runningKey !== undefined) running.add(runningKey);
      fault.arrived();
      await fault.wait;
      if (runningKey !== undefined) running.delete(runningKey);
    }

    // From here to `save` nothing awaits, so a second request with this key cannot slip in between (handlers are sync).
    const stored = idempotencyKey ? idempotency.replay(apiKey, idempotencyKey, request) : undefined;
    if (stored) return { status: stored.status, body: stored.body, headers: { ...echo, 'Idempotent-Replayed': 'true', 'Original-Request': stored.requestId } };
    const reply = execute(() => {
      const info = { requestId, idempotencyKey: idempotencyKey ?? null, apiVersion };
      const result = matched.route.handler(context, { params, pathIds: matched.pathIds, path: url.pathname, info });
      return expandBody(result, expand, store);
    });
    if (fault?.kind === 'server_error_after_running') {
      const failed: Reply = { status: 500, body: json({ error: { type: 'api_error', message: 'An unknown error occurred.' } satisfies StripeErrorBody }) };
      if (idempotencyKey) idempotency.save(apiKey, idempotencyKey, request, { ...failed, requestId }, { evenServerErrors: true });
      return { ...failed, headers: echo };
    }
    if (idempotencyKey) idempotency.save(apiKey, idempotencyKey, request, { ...reply, requestId } satisfies StoredReply);
    return { ...reply, headers: echo };
  }

  function execute(run: () => object): Reply {
    try {
      return { status: 200, body: json(run()) };
    } catch (error) {
      return replyToError(error, log);
    }
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address() as AddressInfo;
  const host = options.host ?? '127.0.0.1';

  return {
    host,
    port: address.port,
    requests: () => [...recorded],
    url: `http://${host.includes(':') ? `[${host}]` : host}:${address.port}`,
    async stop() {
      faults.releaseAll();
      webhooks.stop();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
    addWebhookEndpoint(url, secret, enabledEvents) {
      if (options.deliverWebhooks !== false) webhooks.addEndpoint({ url, secret, ...(enabledEvents && { enabledEvents }) });
    },
    events: () => structuredClone(store.events.all()),
    drainWebhooks: () => webhooks.drain(),
    hold: (method, path) => faults.hold(method, path),
    failAfterRunning: (method, path, times = 1) => faults.failAfterRunning(method, path, times),
    declineCharges: (target, declineOptions) => declines.decline(target, declineOptions),
    clearDeclines: (target) => declines.clear(target),
    pendRefunds: (paymentIntent) => void pendingRefunds.add(paymentIntent),
    finishRefund: (refundId, outcome) => finishRefund(context, automaticRequest(DEFAULT_API_VERSION), refundId, outcome),
  };
}

/** Stripe's answer to a request whose idempotency key another request, still running, is using. */
function keyInUse(key: string): ApiError {
  return new ApiError(409, {
    type: 'invalid_request_error',
    code: 'idempotency_key_in_use',
    message: `There is currently another in-progress request using this Idempotent Key (probably because of a timeout). Please try again later. Key: '${key.slice(0, 255)}'`,
  });
}

const NO_KEY_MESSAGE =
  "You did not provide an API key. You need to provide your API key in the Authorization header, using Bearer auth (e.g. 'Authorization: Bearer YOUR_SECRET_KEY'). See https://stripe.com/docs/api#authentication for details, or we can help at https://support.stripe.com/.";

/** Any `sk_test_…` key, as a Bearer token or Basic user name (curl -u sk_test_…:). Returns the key. */
function authenticate(header: string | undefined): string {
  const bearer = /^Bearer\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  const basic = /^Basic\s+(\S+)\s*$/i.exec(header ?? '')?.[1];
  const key = bearer ?? (basic === undefined ? undefined : Buffer.from(basic, 'base64').toString('utf8').split(':')[0]);
  if (!key) throw new ApiError(401, { type: 'invalid_request_error', message: NO_KEY_MESSAGE });
  if (!/^sk_test_\S+$/.test(key)) {
    const shown = key.length > 12 ? `${key.slice(0, 8)}${'*'.repeat(Math.min(key.length - 12, 24))}${key.slice(-4)}` : '*'.repeat(key.length);
    throw new ApiError(401, { type: 'invalid_request_error', message: `Invalid API Key provided: ${shown}` });
  }
  return key;
}

function readBody(req: http.IncomingMessage): Promise<string> {
  if (Number(req.headers['content-length']) > MAX_BODY_BYTES) return Promise.reject(tooLarge());
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= MAX_BODY_BYTES) return void chunks.push(chunk);
      req.removeAllListeners('data');
      req.resume(); // discard the rest; the 413 closes the connection
      reject(tooLarge());
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
    // a client that hangs up mid-body gets no answer; an ApiError keeps that out of the error log
    req.on('close', () => reject(new ApiError(400, { type: 'invalid_request_error', message: 'The request body ended early.' })));
  });
}

function tooLarge(): ApiError {
  return new ApiError(413, { type: 'invalid_request_error', message: `Request body too large: the limit is ${MAX_BODY_BYTES} bytes.` });
}

function decodeParams(text: string, contentType?: string): FormObject {
  const mediaType = contentType?.split(';')[0].trim().toLowerCase();
  if (text !== '' && mediaType && mediaType !== 'application/x-www-form-urlencoded') {
    throw invalidRequest(`Invalid request: unsupported Content-Type ${mediaType.slice(0, 100)}. Send parameters as application/x-www-form-urlencoded.`);
  }
  try {
    return decodeForm(text);
  } catch (error) {
    if (error instanceof FormError) throw invalidRequest(`Invalid request: ${error.message}.`);
    throw error;
  }
}

function replyToError(error: unknown, log: (message: string) => void): Reply {
  if (error instanceof ApiError) {
    const reply: Reply = { status: error.status, body: json({ error: error.body }) };
    return error.status === 413 ? { ...reply, headers: { Connection: 'close' } } : reply;
  }
  log(`fake-stripe: unexpected error: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  const body: StripeErrorBody = { type: 'api_error', message: 'An unknown error occurred.' };
  return { status: 500, body: json({ error: body }) };
}

function send(res: http.ServerResponse, reply: Reply, headers: Record<string, string>): void {
  if (res.destroyed || res.writableEnded) return;
  res.writeHead(reply.status, {
    ...headers,
    ...reply.headers,
    'Content-Type': 'application/json',
    'Cache-Control': 'no-cache, no-store',
    'Content-Length': Buffer.byteLength(reply.body),
  });
  res.end(reply.body);
}

function json(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

function firstHeader(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
