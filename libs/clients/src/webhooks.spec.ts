import { signWebhook, verifyWebhookSignature } from './webhooks';

describe('webhook signatures', () => {
  const secret = 'a'.repeat(64);
  const id = '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d';
  const timestamp = 1_800_000_000;
  const body = '{"id":"0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d","type":"payment.confirmed"}';
  const headers = (signature = signWebhook({ secret, id, timestamp, body })) => ({ 'Webhook-Id': id, 'Webhook-Timestamp': String(timestamp), 'Webhook-Signature': signature });

  it('is the hex HMAC-SHA256 of "<id>.<timestamp>.<body>"', async () => {
    const { createHmac } = await import('node:crypto');
    expect(signWebhook({ secret, id, timestamp, body })).toBe(`v1=${createHmac('sha256', secret).update(`${id}.${timestamp}.${body}`).digest('hex')}`);
  });

  it('accepts a genuine delivery, from a record or a fetch Headers object, with a string or bytes body', () => {
    expect(verifyWebhookSignature({ secret, headers: headers(), body, nowSeconds: timestamp + 10 })).toEqual({ ok: true, id, timestamp });
    expect(verifyWebhookSignature({ secret, headers: new Headers(headers()), body: Buffer.from(body), nowSeconds: timestamp })).toMatchObject({ ok: true });
  });

  it('accepts one matching signature among several (secret rotation)', () => {
    const other = signWebhook({ secret: 'b'.repeat(64), id, timestamp, body });
    expect(verifyWebhookSignature({ secret, headers: headers(`${other} ${signWebhook({ secret, id, timestamp, body })}`), body, nowSeconds: timestamp })).toMatchObject({ ok: true });
  });

  it('refuses a changed body, id, timestamp or secret, a stale timestamp and missing headers', () => {
    const at = { nowSeconds: timestamp };
    expect(verifyWebhookSignature({ secret, headers: headers(), body: body.replace('confirmed', 'failed'), ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret: 'c'.repeat(64), headers: headers(), body, ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret, headers: { ...headers(), 'Webhook-Id': 'other' }, body, ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret, headers: { ...headers(), 'Webhook-Timestamp': String(timestamp + 1) }, body, ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret, headers: headers('v1=zz'), body, ...at })).toEqual({ ok: false, reason: 'bad_signature' });
    expect(verifyWebhookSignature({ secret, headers: headers(), body, nowSeconds: timestamp + 301 })).toEqual({ ok: false, reason: 'stale_timestamp' });
    expect(verifyWebhookSignature({ secret, headers: headers(), body, nowSeconds: timestamp + 301, toleranceSeconds: 0 })).toMatchObject({ ok: true });
    expect(verifyWebhookSignature({ secret, headers: { 'Webhook-Id': id }, body, ...at })).toEqual({ ok: false, reason: 'missing_headers' });
  });
});
