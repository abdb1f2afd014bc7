import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { newWebhookSecret, signWebhook, verifyWebhookSignature, webhookSigningKey } from './webhooks';

describe('webhook signatures (Standard Webhooks)', () => {
  const secret = `whsec_${Buffer.from('a'.repeat(32)).toString('base64')}`;
  const id = '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d';
  const timestamp = 1_800_000_000;
  const body = '{"id":"0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d","type":"payment.confirmed"}';
  const headers = (signature = signWebhook({ secret, id, timestamp, body })) => ({
    'Webhook-Id': id,
    'Webhook-Timestamp': String(timestamp),
    'Webhook-Signature': signature,
  });

  it('is v1, + the base64 HMAC-SHA256 of "<id>.<timestamp>.<body>" under the base64-decoded secret', () => {
    expect(signWebhook({ secret, id, timestamp, body })).toBe(
      `v1,${createHmac('sha256', 'a'.repeat(32)).update(`${id}.${timestamp}.${body}`).digest('base64')}`,
    );
  });

  it('is what the standardwebhooks package signs and verifies', () => {
    const now = Math.floor(Date.now() / 1000);
    const fresh = newWebhookSecret();
    expect(fresh).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const signature = signWebhook({ secret: fresh, id, timestamp: now, body });
    expect(new Webhook(fresh).sign(id, new Date(now * 1000), body)).toBe(signature);
    expect(new Webhook(fresh).verify(body, { 'webhook-id': id, 'webhook-timestamp': String(now), 'webhook-signature': signature })).toEqual(JSON.parse(body));
  });

  it('keeps a secret made before Standard Webhooks working: 64 hex characters are the same key as whsec_ + their base64', () => {
    const legacy = 'f0'.repeat(32);
    const migrated = `whsec_${Buffer.from(legacy).toString('base64')}`;
    expect(webhookSigningKey(migrated)).toEqual(Buffer.from(legacy));
    expect(signWebhook({ secret: legacy, id, timestamp, body })).toBe(signWebhook({ secret: migrated, id, timestamp, body }));
    expect(
      verifyWebhookSignature({ secret: legacy, headers: headers(signWebhook({ secret: migrated, id, timestamp, body })), body, nowSeconds: timestamp }),
    ).toMatchObject({ ok: true });
  });

  it('accepts a genuine delivery, from a record or a fetch Headers object, with a string or bytes body', () => {
    expect(verifyWebhookSignature({ secret, headers: headers(), body, nowSeconds: timestamp + 10 })).toEqual({ ok: true, id, timestamp });
    expect(verifyWebhookSignature({ secret, headers: new Headers(headers()), body: Buffer.from(body), nowSeconds: timestamp })).toMatchObject({ ok: true });
  });

  it('accepts one matching signature among several (secret rotation)', () => {
    const other = signWebhook({ secret: newWebhookSecret(), id, timestamp, body });
    expect(
      verifyWebhookSignature({ secret, headers: headers(`${other} ${signWebhook({ secret, id, timestamp, body })}`), body, nowSeconds: timestamp }),
    ).toMatchObject({ ok: true });
  });

  it('refuses a changed body, id, timestamp or secret, a stale timestamp and missing headers', () => {
    const at = { nowSeconds: timestamp };
    expect(verifyWebhookSignature({ secret, headers: headers(), body: body.replace('confirmed', 'failed'), ...at })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(verifyWebhookSignature({ secret: newWebhookSecret(), headers: headers(), body, ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret, headers: { ...headers(), 'Webhook-Id': 'other' }, body, ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret, headers: { ...headers(), 'Webhook-Timestamp': String(timestamp + 1) }, body, ...at })).toEqual({
      ok: false,
      reason: 'bad_signature',
    });
    expect(verifyWebhookSignature({ secret, headers: headers('v1,zz'), body, ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret, headers: headers(), body, nowSeconds: timestamp + 301 })).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(verifyWebhookSignature({ secret, headers: headers(), body, nowSeconds: timestamp + 301, toleranceSeconds: 0 })).toMatchObject({ ok: true });
    expect(verifyWebhookSignature({ secret, headers: { 'Webhook-Id': id }, body, ...at })).toEqual({ ok: false, reason: 'missing_headers' });
  });
});
