import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Signed webhooks from the facilitator to merchants, and how a merchant checks them. No Nest, no HTTP framework:
 * copy this file into any Node service if you do not use the package.
 *
 * Every delivery carries three headers:
 *
 *   Webhook-Id:        the delivery id (the same on every retry of one event; deduplicate on it)
 *   Webhook-Timestamp: unix seconds when this attempt was signed
 *   Webhook-Signature: v1=<hex HMAC-SHA256(secret, "<Webhook-Id>.<Webhook-Timestamp>.<raw body>")>
 *
 * The secret is the merchant's webhook secret (64 hex characters), used as it is (its ASCII bytes are the HMAC key).
 * Verify against the raw body bytes exactly as received, before parsing the JSON. The header may list several
 * space-separated signatures (`v1=… v1=…`); one match is enough.
 */

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';

/** How far the timestamp may be from the receiver's clock, by default (replay window). */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

export interface WebhookSignatureInput {
  secret: string;
  id: string;
  /** unix seconds */
  timestamp: number | string;
  /** the raw request body */
  body: string | Uint8Array;
}

/** The `Webhook-Signature` value for one attempt: `v1=<hex>`. */
export function signWebhook({ secret, id, timestamp, body }: WebhookSignatureInput): string {
  return `v1=${hmac(secret, id, String(timestamp), body).toString('hex')}`;
}

export interface VerifyWebhookInput {
  secret: string;
  /** the request's headers (any case, Node's IncomingHttpHeaders, a fetch Headers object or a plain record) */
  headers: HeaderSource;
  /** the raw request body, exactly as received */
  body: string | Uint8Array;
  /** default 300 s; 0 turns the timestamp check off */
  toleranceSeconds?: number;
  /** for tests: the receiver's clock, unix seconds */
  nowSeconds?: number;
}

export type HeaderSource = { get(name: string): string | null } | Record<string, string | string[] | undefined>;

export type WebhookVerification = { ok: true; id: string; timestamp: number } | { ok: false; reason: 'missing_headers' | 'stale_timestamp' | 'bad_signature' };

/**
 * Checks a received webhook: the three headers are present, the timestamp is within the tolerance, and one of the
 * `v1=` signatures is the HMAC of `<id>.<timestamp>.<body>` under the secret (compared in constant time).
 */
export function verifyWebhookSignature(input: VerifyWebhookInput): WebhookVerification {
  const id = header(input.headers, WEBHOOK_ID_HEADER);
  const timestamp = header(input.headers, WEBHOOK_TIMESTAMP_HEADER);
  const signatures = header(input.headers, WEBHOOK_SIGNATURE_HEADER);
  if (!id || !timestamp || !signatures || !/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'missing_headers' };
  const tolerance = input.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (tolerance > 0 && Math.abs(now - Number(timestamp)) > tolerance) return { ok: false, reason: 'stale_timestamp' };
  const expected = hmac(input.secret, id, timestamp, input.body);
  for (const candidate of signatures.split(/[\s,]+/)) {
    const match = /^v1=([0-9a-f]{64})$/i.exec(candidate);
    if (match && timingSafeEqual(Buffer.from(match[1], 'hex'), expected)) return { ok: true, id, timestamp: Number(timestamp) };
  }
  return { ok: false, reason: 'bad_signature' };
}

function hmac(secret: string, id: string, timestamp: string, body: string | Uint8Array): Buffer {
  return createHmac('sha256', secret).update(`${id}.${timestamp}.`).update(body).digest();
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}
