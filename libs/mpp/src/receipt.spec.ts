import { decodeReceipt, encodeReceipt } from './receipt';
import { PROBLEMS, toProblemDetails } from './problems';

describe('Payment-Receipt', () => {
  const receipt = {
    status: 'success' as const,
    method: 'tempo',
    timestamp: '2026-01-15T12:04:10Z',
    reference: `0x${'cd'.repeat(32)}`,
    challengeId: 'abc',
    spent: '10',
  };

  it('encodes base64url JSON without padding and decodes it back, extras kept', () => {
    const header = encodeReceipt(receipt);
    expect(header).toBe(Buffer.from(JSON.stringify(receipt)).toString('base64url'));
    expect(decodeReceipt(header)).toEqual({ ok: true, value: receipt });
  });

  it('rejects non-success, missing fields and garbage as typed results', () => {
    expect(decodeReceipt(Buffer.from(JSON.stringify({ ...receipt, status: 'failed' })).toString('base64url')).ok).toBe(false);
    expect(decodeReceipt(Buffer.from(JSON.stringify({ status: 'success' })).toString('base64url')).ok).toBe(false);
    expect(decodeReceipt('%%%').ok).toBe(false);
    expect(() => encodeReceipt({ ...receipt, timestamp: 'now' })).toThrow();
  });
});

describe('problem details', () => {
  it('builds RFC 9457 bodies', () => {
    expect(toProblemDetails('payment-expired', { detail: 'too late', challengeId: 'abc' })).toEqual({
      type: 'https://paymentauth.org/problems/payment-expired',
      title: 'Payment Expired',
      status: 402,
      detail: 'too late',
      challengeId: 'abc',
    });
    expect(toProblemDetails('method-unsupported').status).toBe(400);
    expect(toProblemDetails('session/channel-not-found')).toMatchObject({ type: 'https://paymentauth.org/problems/session/channel-not-found', status: 410 });
    expect(Object.keys(PROBLEMS)).toHaveLength(20);
  });
});
