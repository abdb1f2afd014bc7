import fc from 'fast-check';
import { createChallenge, encodeOpaque, serializeRequest } from './challenge';
import { parseCredential, serializeCredential, verifyBinding, type Credential } from './credential';

const SECRET = 'test-secret-key-at-least-32-bytes-long!!';
const challenge = createChallenge(SECRET, {
  realm: 'api.example.com',
  method: 'tempo',
  intent: 'charge',
  request: {
    amount: '1000000',
    currency: '0x20c0000000000000000000000000000000000000',
    recipient: '0x742d35Cc6634C0532925a3b844Bc9e7595f8fE00',
    methodDetails: { chainId: 42431 },
  },
  expires: '2026-01-15T12:05:00Z',
  opaque: encodeOpaque({ order: '42' }),
});
const credential: Credential = {
  challenge,
  source: 'did:pkh:eip155:42431:0x742d35Cc6634C0532925a3b844Bc9e7595f8fE00',
  payload: { type: 'hash', hash: `0x${'ab'.repeat(32)}` },
};
const before = new Date('2026-01-15T12:04:59Z');
const encode = (wire: unknown) => `Payment ${Buffer.from(JSON.stringify(wire)).toString('base64url')}`;

describe('credential', () => {
  it('writes the mppx wire form', () => {
    const header = serializeCredential(credential);
    expect(header.startsWith('Payment ')).toBe(true);
    expect(header).not.toContain('=');
    const wire = JSON.parse(Buffer.from(header.slice(8), 'base64url').toString('utf8'));
    expect(Object.keys(wire.challenge)).toEqual(['expires', 'id', 'intent', 'method', 'realm', 'opaque', 'request']);
    expect(wire.challenge.request).toBe(serializeRequest(challenge.request));
    expect(wire.source).toBe(credential.source);
  });

  it('round-trips and verifies', () => {
    const parsed = parseCredential(serializeCredential(credential));
    expect(parsed).toEqual({ ok: true, value: credential });
    if (parsed.ok) expect(verifyBinding(SECRET, parsed.value, { now: before })).toEqual({ ok: true, value: challenge });
  });

  it('takes the Payment credential out of a list, refuses two', () => {
    const header = serializeCredential(credential);
    expect(parseCredential(`Bearer abc, ${header}`).ok).toBe(true);
    expect(parseCredential(`${header}, ${header}`)).toMatchObject({ ok: false, error: { code: 'bad-request' } });
  });

  it('accepts a legacy object-shaped opaque and a non-canonical request encoding', () => {
    const wire = {
      challenge: {
        ...challenge,
        opaque: { order: '42' },
        request: Buffer.from(JSON.stringify({ methodDetails: { chainId: 42431 }, ...challenge.request })).toString('base64'),
      },
      payload: credential.payload,
    };
    const parsed = parseCredential(encode(wire));
    expect(parsed.ok).toBe(true);
    if (parsed.ok) expect(verifyBinding(SECRET, parsed.value, { now: before }).ok).toBe(true);
  });

  it('reports expiry, foreign secrets, tampering and the wrong header with problem codes', () => {
    expect(verifyBinding(SECRET, credential, { now: new Date('2026-01-15T12:05:00Z') })).toMatchObject({ ok: false, error: { code: 'payment-expired' } });
    expect(verifyBinding(`${SECRET}-other`, credential, { now: before })).toMatchObject({ ok: false, error: { code: 'invalid-challenge' } });
    expect(verifyBinding(`${SECRET}-new`, credential, { now: before, previousSecrets: [SECRET] }).ok).toBe(true);
    const tampered = { ...credential, challenge: { ...challenge, request: { ...challenge.request, amount: '1' } } };
    expect(verifyBinding(SECRET, tampered, { now: before })).toMatchObject({ ok: false, error: { code: 'invalid-challenge' } });
    const viaHeader = createChallenge(SECRET, { ...challenge, header: 'Payment-Authorization' });
    expect(verifyBinding(SECRET, { ...credential, challenge: viaHeader }, { now: before, via: 'Authorization' })).toMatchObject({
      ok: false,
      error: { code: 'malformed-credential' },
    });
    expect(verifyBinding(SECRET, { ...credential, challenge: viaHeader }, { now: before, via: 'Payment-Authorization' }).ok).toBe(true);
  });

  it.each([
    ['', 'malformed-credential'],
    ['Bearer abc', 'malformed-credential'],
    ['Payment', 'malformed-credential'],
    ['Payment !!!', 'malformed-credential'],
    [`Payment ${Buffer.from('not json').toString('base64url')}`, 'malformed-credential'],
    [encode({ payload: {} }), 'malformed-credential'],
    [encode({ challenge: { ...challenge, request: serializeRequest(challenge.request) } }), 'malformed-credential'],
    [encode({ challenge: { ...challenge, request: 'e30', id: '' }, payload: {} }), 'malformed-credential'],
    [encode({ challenge: { ...challenge, request: Buffer.from('[1]').toString('base64url') }, payload: {} }), 'malformed-credential'],
  ])('rejects %#', (header, code) => {
    expect(parseCredential(header)).toMatchObject({ ok: false, error: { code } });
  });

  it('never throws on garbage', () => {
    const garbage = fc.oneof(
      fc.string(),
      fc.string().map((s) => `Payment ${s}`),
      fc.jsonValue().map((v) => encode(v)),
      fc.jsonValue().map((v) => encode({ challenge: { ...challenge, request: Buffer.from(JSON.stringify(v)).toString('base64url') }, payload: v })),
      fc
        .dictionary(fc.constantFrom('id', 'realm', 'method', 'intent', 'request', 'expires', 'opaque', 'digest', 'header'), fc.jsonValue())
        .map((c) => encode({ challenge: c, payload: 1 })),
    );
    fc.assert(
      fc.property(garbage, (header) => {
        const result = parseCredential(header);
        if (result.ok) expect(typeof verifyBinding(SECRET, result.value, { now: before }).ok).toBe('boolean');
      }),
    );
  });

  it('round-trips random credentials', () => {
    fc.assert(
      fc.property(
        fc.dictionary(fc.string(), fc.jsonValue()),
        fc.jsonValue(),
        fc.option(fc.string({ minLength: 1 }), { nil: undefined }),
        (request, payload, source) => {
          const c: Credential = { challenge: createChallenge(SECRET, { ...challenge, request }), payload, ...(source !== undefined && { source }) };
          const parsed = parseCredential(serializeCredential(c));
          expect(parsed).toEqual({ ok: true, value: JSON.parse(JSON.stringify(c)) });
          if (parsed.ok) expect(verifyBinding(SECRET, parsed.value, { now: before }).ok).toBe(true);
        },
      ),
    );
  });
});
