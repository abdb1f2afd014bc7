import http from 'node:http';
import https from 'node:https';
import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { signWebhook, WEBHOOK_ID_HEADER, WEBHOOK_SIGNATURE_HEADER, WEBHOOK_TIMESTAMP_HEADER } from '@mp/clients';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../../config/facilitator.config';
import { checkedLookup, refuseForbiddenLiteral, WebhookDestinationRefused } from './webhook-destination';
import { WebhookRepository, type AttemptOutcome, type DueDelivery } from './webhook.repository';

const ENQUEUE_BATCH = 1_000;
/** Deliveries one process sends at once. */
const CONCURRENCY = 32;
const USER_AGENT = 'machine-payments-facilitator webhooks';

/**
 * Sends signed webhooks for final payment events (worker role). Every WEBHOOK_POLL_MS it turns new events of
 * merchant-owned payments into deliveries and sends the deliveries that are due: POST JSON, signed with the
 * merchant's webhook secret, bounded by WEBHOOK_TIMEOUT_MS, redirects not followed. A 2xx answer is delivered;
 * anything else is retried after WEBHOOK_RETRY_BASE_MS × 2^(attempt−1) (±20 %, at most WEBHOOK_RETRY_MAX_MS) until
 * WEBHOOK_MAX_ATTEMPTS attempts have been made; then the delivery is failed. Every attempt is logged in
 * webhook_delivery_attempts. Unless WEBHOOK_ALLOW_PRIVATE is set, a URL whose host is, or resolves to, a loopback,
 * private, link-local, unspecified, multicast or cloud-metadata address is not contacted: the attempt fails for good
 * with `webhook_destination_not_allowed` (see webhook-destination.ts).
 */
@Injectable()
export class WebhookDispatcher implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly inFlight = new Set<Promise<void>>();
  private timer: NodeJS.Timeout | undefined;
  private tick: Promise<void> | undefined;
  private stopped = false;
  private cursorReady = false;
  private lastWarning = 0;
  // Own agents: connections (made to checked addresses) are reused for webhooks only.
  private readonly httpAgent = new http.Agent({ keepAlive: true });
  private readonly httpsAgent = new https.Agent({ keepAlive: true });

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly deliveries: WebhookRepository,
  ) {}

  onModuleInit(): void {
    this.schedule(0);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    // Sends in progress finish (each is bounded by its timeout); an unrecorded one is sent again after its lease.
    const pending = Promise.all([this.tick, ...this.inFlight]).catch(() => undefined);
    await Promise.race([pending, new Promise((resolve) => setTimeout(resolve, this.config.webhooks.timeoutMs + 1_000).unref())]);
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private schedule(ms: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.tick = this.poll().finally(() => this.schedule(this.config.webhooks.pollMs));
    }, ms);
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    try {
      if (!this.cursorReady) {
        await this.deliveries.ensureCursor();
        this.cursorReady = true;
      }
      while ((await this.deliveries.enqueue(ENQUEUE_BATCH)) && !this.stopped);
      const room = CONCURRENCY - this.inFlight.size;
      if (room <= 0 || this.stopped) return;
      const lease = this.config.webhooks.timeoutMs + 30_000;
      for (const delivery of await this.deliveries.claimDue(room, lease)) {
        const sending: Promise<void> = this.deliver(delivery).finally(() => this.inFlight.delete(sending));
        this.inFlight.add(sending);
      }
    } catch (error) {
      this.warn(`webhook dispatch skipped: ${(error as Error).message}`);
    }
  }

  private async deliver(delivery: DueDelivery): Promise<void> {
    const outcome = delivery.merchantDisabled
      ? ({ kind: 'failed', responseStatus: null, error: 'the merchant is disabled', durationMs: 0 } as const)
      : await this.send(delivery);
    try {
      await this.deliveries.record(delivery.id, delivery.attempt, outcome);
    } catch (error) {
      // The lease runs out and the delivery is sent again: receivers deduplicate on Webhook-Id.
      this.warn(`webhook ${delivery.id}: recording attempt ${delivery.attempt} failed: ${(error as Error).message}`);
    }
    if (outcome.kind === 'failed')
      this.logger.warn(`webhook ${delivery.id} to ${origin(delivery.url)} failed for good after ${delivery.attempt} attempt(s): ${outcome.error}`);
  }

  private async send(delivery: DueDelivery): Promise<AttemptOutcome> {
    const { maxAttempts, timeoutMs, retryBaseMs, retryMaxMs } = this.config.webhooks;
    const timestamp = Math.floor(Date.now() / 1000);
    const started = performance.now();
    let responseStatus: number | null = null;
    let error: string;
    try {
      responseStatus = await this.post(new URL(delivery.url), timeoutMs, delivery.body, {
        'content-type': 'application/json',
        'user-agent': USER_AGENT,
        [WEBHOOK_ID_HEADER]: delivery.id,
        [WEBHOOK_TIMESTAMP_HEADER]: String(timestamp),
        [WEBHOOK_SIGNATURE_HEADER]: signWebhook({ secret: delivery.secret, id: delivery.id, timestamp, body: delivery.body }),
      });
      if (responseStatus >= 200 && responseStatus < 300) return { kind: 'delivered', responseStatus, durationMs: elapsed(started) };
      error = `HTTP ${responseStatus}`;
    } catch (e) {
      // Retrying cannot make a refused destination allowed.
      if (e instanceof WebhookDestinationRefused) return { kind: 'failed', responseStatus: null, error: e.message, durationMs: elapsed(started) };
      error = describe(e, timeoutMs);
    }
    const durationMs = elapsed(started);
    if (delivery.attempt >= maxAttempts) return { kind: 'failed', responseStatus, error, durationMs };
    const delayMs = Math.round(Math.min(retryBaseMs * 2 ** (delivery.attempt - 1), retryMaxMs) * (0.8 + Math.random() * 0.4));
    return { kind: 'retry', responseStatus, error, durationMs, delayMs };
  }

  /**
   * POSTs the body and answers the response status (the response body is discarded). Redirects are not followed.
   * Unless private destinations are allowed, the host is checked (an IP literal here, a name on every address it
   * resolves to) and the socket connects to the address that was checked.
   */
  private post(url: URL, timeoutMs: number, body: string, headers: Record<string, string>): Promise<number> {
    const allowPrivate = this.config.webhooks.allowPrivate;
    if (!allowPrivate) refuseForbiddenLiteral(url);
    const client = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      // One deadline for connecting, sending and the answer (its body included). Not an AbortSignal: http.request
      // lets go of it once the body is sent, and the wait for the answer would be unbounded.
      const timer = setTimeout(() => request.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { name: 'TimeoutError' })), timeoutMs);
      const request = client.request(
        url,
        {
          method: 'POST',
          headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) },
          agent: url.protocol === 'https:' ? this.httpsAgent : this.httpAgent,
          ...(!allowPrivate && { lookup: checkedLookup }),
        },
        (response) => {
          response.on('close', () => clearTimeout(timer));
          response.resume(); // the answer's body is not read: only its status counts
          resolve(response.statusCode ?? 0);
        },
      );
      request.on('error', (error) => {
        clearTimeout(timer);
        reject(error);
      });
      request.end(body);
    });
  }

  private warn(message: string): void {
    const now = Date.now();
    if (now - this.lastWarning < 30_000) return this.logger.debug(message);
    this.lastWarning = now;
    this.logger.warn(message);
  }
}

function elapsed(started: number): number {
  return Math.round(performance.now() - started);
}

function describe(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer within ${timeoutMs} ms`;
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.message ?? cause?.code ?? (error instanceof Error ? error.message : String(error));
}

/** Logs name the receiver's origin only: a webhook URL may carry a token in its path or query. */
function origin(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return 'an invalid URL';
  }
}
