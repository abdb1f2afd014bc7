import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Signed webhooks from the facilitator to merchants, and how a merchant checks them. They follow Standard Webhooks
 * (https://www.standardwebhooks.com), so any of its libraries verifies them, e.g. the `standardwebhooks` npm
 * package: `new Webhook(secret).verify(rawBody, headers)`. This file does the same with no dependency.
 *
 * Every delivery carries three headers:
 *
 *   webhook-id:        the delivery id (the same on every retry of one event; deduplicate on it)
 *   webhook-timestamp: unix seconds when this attempt was signed
 *   webhook-signature: v1,<base64 HMAC-SHA256(key, "<webhook-id>.<webhook-timestamp>.<raw body>")>
 *
 * The merchant's webhook secret is `whsec_<base64>`; the HMAC key is the base64-decoded part. Verify against the raw
 * body bytes exactly as received, before parsing the JSON. The header may list several space-separated signatures
 * (`v1,… v1,…`, e.g. while a secret is rotated); one match is enough.
 */

export const WEBHOOK_ID_HEADER = 'webhook-id';
export const WEBHOOK_TIMESTAMP_HEADER = 'webhook-timestamp';
export const WEBHOOK_SIGNATURE_HEADER = 'webhook-signature';
export const WEBHOOK_SECRET_PREFIX = 'whsec_';

/** How far the timestamp may be from the receiver's clock, by default (replay window). */
export const DEFAULT_WEBHOOK_TOLERANCE_SECONDS = 300;

export interface WebhookSignatureInput {
  /** `whsec_<base64>` (a secret made before Standard Webhooks, 64 hex characters, still works: its ASCII bytes are the key) */
  secret: string;
  id: string;
  /** unix seconds */
  timestamp: number | string;
  /** the raw request body */
  body: string | Uint8Array;
}

/** A new webhook secret: `whsec_` + base64 of 32 random bytes. */
export function newWebhookSecret(): string {
  return `${WEBHOOK_SECRET_PREFIX}${randomBytes(32).toString('base64')}`;
}

/** The HMAC key of a webhook secret. */
export function webhookSigningKey(secret: string): Buffer {
  // Before Standard Webhooks the secret was 64 hex characters used as they are; the migration stored them as
  // whsec_ + base64 of those characters, so both spellings give the same key.
  return secret.startsWith(WEBHOOK_SECRET_PREFIX) ? Buffer.from(secret.slice(WEBHOOK_SECRET_PREFIX.length), 'base64') : Buffer.from(secret, 'utf8');
}

/** The `webhook-signature` value for one attempt: `v1,<base64>`. */
export function signWebhook({ secret, id, timestamp, body }: WebhookSignatureInput): string {
  return `v1,${hmac(webhookSigningKey(secret), id, String(timestamp), body).toString('base64')}`;
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
 * `v1,` signatures is the HMAC of `<id>.<timestamp>.<body>` under the secret's key (compared in constant time).
 */
export function verifyWebhookSignature(input: VerifyWebhookInput): WebhookVerification {
  const id = header(input.headers, WEBHOOK_ID_HEADER);
  const timestamp = header(input.headers, WEBHOOK_TIMESTAMP_HEADER);
  const signatures = header(input.headers, WEBHOOK_SIGNATURE_HEADER);
  if (!id || !timestamp || !signatures || !/^\d{1,12}$/.test(timestamp)) return { ok: false, reason: 'missing_headers' };
  const tolerance = input.toleranceSeconds ?? DEFAULT_WEBHOOK_TOLERANCE_SECONDS;
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000);
  if (tolerance > 0 && Math.abs(now - Number(timestamp)) > tolerance) return { ok: false, reason: 'stale_timestamp' };
  const expected = hmac(webhookSigningKey(input.secret), id, timestamp, input.body);
  for (const candidate of signatures.split(' ')) {
    const match = /^v1,([A-Za-z0-9+/]{43}=)$/.exec(candidate);
    if (match && timingSafeEqual(Buffer.from(match[1], 'base64'), expected)) return { ok: true, id, timestamp: Number(timestamp) };
  }
  return { ok: false, reason: 'bad_signature' };
}

function hmac(key: Buffer, id: string, timestamp: string, body: string | Uint8Array): Buffer {
  return createHmac('sha256', key).update(`${id}.${timestamp}.`).update(body).digest();
}

function header(headers: HeaderSource, name: string): string | undefined {
  if (typeof (headers as { get?: unknown }).get === 'function') return (headers as { get(n: string): string | null }).get(name) ?? undefined;
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(' ') : value;
  }
  return undefined;
}
