import fc from 'fast-check';
import { Base64, Bytes, Hash, Json } from 'ox';
import {
  challengeBindingInput,
  challengeId,
  createChallenge,
  encodeOpaque,
  isBound,
  parseWwwAuthenticate,
  serializeChallenge,
  serializeChallenges,
  serializeRequest,
  type Challenge,
} from './challenge';
import { canonicalize } from './jcs';

// Reference vector (shared reference §1.1, computed by mppx 0.11.0).
const SECRET = 'test-secret-key-at-least-32-bytes-long!!';
const vectorFields = {
  realm: 'api.example.com',
  method: 'tempo',
  intent: 'charge',
  request: {
    recipient: '0x742d35Cc6634C0532925a3b844Bc9e7595f8fE00',
    methodDetails: { chainId: 42431 },
    currency: '0x20c0000000000000000000000000000000000000',
    amount: '1000000',
  },
  expires: '2026-01-15T12:05:00Z',
};
const VECTOR_ID = '-BXqjbKo4TfnpAe8XafxSJ12uxCQu8Kt7vpGuDn1H38';
const VECTOR_HEADER =
  'Payment id="-BXqjbKo4TfnpAe8XafxSJ12uxCQu8Kt7vpGuDn1H38", realm="api.example.com", method="tempo", intent="charge", request="eyJhbW91bnQiOiIxMDAwMDAwIiwiY3VycmVuY3kiOiIweDIwYzAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAiLCJtZXRob2REZXRhaWxzIjp7ImNoYWluSWQiOjQyNDMxfSwicmVjaXBpZW50IjoiMHg3NDJkMzVDYzY2MzRDMDUzMjkyNWEzYjg0NEJjOWU3NTk1ZjhmRTAwIn0", expires="2026-01-15T12:05:00Z"';

describe('challenge id (spec test vector)', () => {
  it('computes the reference id', () => {
    expect(canonicalize(vectorFields.request)).toBe(
      '{"amount":"1000000","currency":"0x20c0000000000000000000000000000000000000","methodDetails":{"chainId":42431},"recipient":"0x742d35Cc6634C0532925a3b844Bc9e7595f8fE00"}',
    );
    expect(challengeId(SECRET, vectorFields)).toBe(VECTOR_ID);
  });

  it('serialises the reference WWW-Authenticate value byte for byte', () => {
    const challenge = createChallenge(SECRET, vectorFields);
    expect(challenge.id).toBe(VECTOR_ID);
    expect(serializeChallenge(challenge)).toBe(VECTOR_HEADER);
  });

  it('parses the reference header back and the id verifies', () => {
    const parsed = parseWwwAuthenticate(VECTOR_HEADER);
    expect(parsed.ok).toBe(true);
    if (!parsed.ok) return;
    expect(parsed.value).toHaveLength(1);
    expect(parsed.value[0]).toEqual({ id: VECTOR_ID, ...vectorFields });
    expect(isBound(SECRET, parsed.value[0]!)).toBe(true);
    expect(isBound(`${SECRET}x`, parsed.value[0]!)).toBe(false);
  });

  it('every bound field changes the id; description does not', () => {
    const base = challengeId(SECRET, vectorFields);
    const variants = [
      { ...vectorFields, realm: 'api.example.org' },
      { ...vectorFields, method: 'stripe' },
      { ...vectorFields, intent: 'session' },
      { ...vectorFields, request: { ...vectorFields.request, amount: '1000001' } },
      { ...vectorFields, expires: '2026-01-15T12:05:01Z' },
      { ...vectorFields, digest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:' },
      { ...vectorFields, opaque: encodeOpaque({ order: '1' }) },
      { ...vectorFields, header: 'Payment-Authorization' as const },
    ];
    for (const variant of variants) expect(challengeId(SECRET, variant)).not.toBe(base);
    expect(challengeId(SECRET, { ...vectorFields, description: 'coffee' })).toBe(base);
  });

  it('uses empty slots for absent fields and puts header before opaque', () => {
    const opaque = encodeOpaque({ b: '2', a: '1' });
    expect(challengeBindingInput({ realm: 'r', method: 'm', intent: 'i', request: {} })).toBe(`r|m|i|${serializeRequest({})}|||`);
    expect(challengeBindingInput({ realm: 'r', method: 'm', intent: 'i', request: {}, opaque, header: 'Payment-Authorization' })).toBe(
      `r|m|i|e30|||Payment-Authorization|${opaque}`,
    );
  });

  it('refuses a secret shorter than 32 bytes when issuing', () => {
    expect(() => createChallenge('short', vectorFields)).toThrow(/32 bytes/);
  });
});

// Independent computation with the primitives mppx itself uses (ox Json.canonicalize, Hash.hmac256,
// Base64 url/no-pad), following mppx's computeId; mppx-interop.spec.ts checks against mppx itself.
function oxChallengeId(secret: string, c: Omit<Challenge, 'id'>): string {
  const request = Base64.fromString(Json.canonicalize(c.request), { url: true, pad: false });
  const input = [c.realm, c.method, c.intent, request, c.expires ?? '', c.digest ?? '', c.opaque ?? ''].join('|');
  return Base64.fromBytes(Hash.hmac256(Bytes.fromString(secret), Bytes.fromString(input), { as: 'Bytes' }), { url: true, pad: false });
}

const json: fc.Arbitrary<unknown> = fc.jsonValue() as fc.Arbitrary<unknown>;
const fieldsArb = fc.record(
  {
    realm: fc.string(),
    method: fc.stringMatching(/^[a-z][a-z0-9:_-]{0,12}$/),
    intent: fc.string({ minLength: 1 }),
    request: fc.dictionary(fc.string(), json),
    expires: fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
    digest: fc.string().map((s) => `sha-256=${s}`),
    opaque: fc.dictionary(fc.string(), fc.string()).map(encodeOpaque),
    description: fc.string(),
  },
  { requiredKeys: ['realm', 'method', 'intent', 'request'] },
);

describe('challenge properties', () => {
  it('matches the ox/mppx computation for random challenges', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 32 }), fieldsArb, (secret, fields) => {
        expect(challengeId(secret, fields)).toBe(oxChallengeId(secret, fields));
      }),
    );
  });

  it('serialise → parse round-trips one or several challenges, and ids still verify', () => {
    fc.assert(
      fc.property(
        fc.array(
          fieldsArb.filter((f) => !/[\r\n]/.test(f.realm + f.intent + (f.description ?? '') + (f.digest ?? ''))),
          { minLength: 1, maxLength: 3 },
        ),
        (list) => {
          const issued = list.map((fields) => createChallenge(SECRET, fields));
          const parsed = parseWwwAuthenticate(serializeChallenges(issued));
          expect(parsed).toEqual({ ok: true, value: issued });
          if (parsed.ok) for (const c of parsed.value) expect(isBound(SECRET, c)).toBe(true);
        },
      ),
    );
  });

  it('never throws on garbage', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.string().map((s) => `Payment ${s}`),
          fc.string().map((s) => `Payment id="x", request="${s}`),
        ),
        (header) => {
          const result = parseWwwAuthenticate(header);
          expect(typeof result.ok).toBe('boolean');
        },
      ),
    );
  });
});

describe('parseWwwAuthenticate', () => {
  const vector = createChallenge(SECRET, vectorFields);

  it('reads Payment challenges among other schemes', () => {
    const stripe = createChallenge(SECRET, { ...vectorFields, method: 'stripe', request: { amount: '5000', currency: 'usd' } });
    const header = `Bearer realm="x", error="invalid_token", ${serializeChallenge(vector)}, Basic dXNlcg==, ${serializeChallenge(stripe)}`;
    expect(parseWwwAuthenticate(header)).toEqual({ ok: true, value: [vector, stripe] });
  });

  it('escapes quotes, backslashes and non-Latin-1 like mppx and reads them back', () => {
    const c = createChallenge(SECRET, { ...vectorFields, description: 'say "hi" \\ — ☕ é' });
    const header = serializeChallenge(c);
    expect(header).toContain('description="say \\"hi\\" \\\\ \\u2014 \\u2615 é"');
    expect(parseWwwAuthenticate(header)).toEqual({ ok: true, value: [c] });
  });

  it('refuses CR/LF in a value when serialising', () => {
    expect(() => serializeChallenge({ ...vector, description: 'a\r\nX-Evil: 1' })).toThrow();
  });

  it('accepts a case-insensitive scheme and parameter names, and token values', () => {
    const header = VECTOR_HEADER.replace('Payment', 'payment').replace('Realm', 'REALM').replace('method="tempo"', 'method=tempo');
    expect(parseWwwAuthenticate(header)).toEqual({ ok: true, value: [vector] });
  });

  it.each([
    ['', 'no Payment challenge'],
    ['Bearer realm="x"', 'no Payment challenge'],
    ['Payment', 'without auth-params'],
    ['Payment id="a", realm="r", method="tempo", intent="charge"', 'missing request'],
    [VECTOR_HEADER.slice(0, -1), 'unterminated'],
    [`${VECTOR_HEADER}, id="again"`, 'duplicate parameter id'],
    [VECTOR_HEADER.replace('method="tempo"', 'method="Tempo"'), 'method'],
    [VECTOR_HEADER.replace('request="eyJ', 'request="!!'), 'request'],
    [VECTOR_HEADER.replace(/request="[^"]*"/, 'request="A"'), 'request'],
    [VECTOR_HEADER.replace('expires="2026-01-15T12:05:00Z"', 'expires="tomorrow"'), 'expires'],
    [VECTOR_HEADER.replace('id="-BX', 'id="').replace(/id="[^"]*"/, 'id=""'), 'id'],
    [`${VECTOR_HEADER}, opaque="e30"`.replace('opaque="e30"', 'opaque="eyJhIjoxfQ"'), 'opaque'],
    [`${VECTOR_HEADER}, digest="md5=abc"`, 'digest'],
    [`${VECTOR_HEADER}, header="Authorization"`, 'header'],
    [`${VECTOR_HEADER}, request="x"`.replace(/request="eyJ[^"]*", /, '').replace('request="x"', `request="${'A'.repeat(16 * 1024 + 4)}"`), 'too large'],
  ])('rejects %#: %s', (header, message) => {
    const result = parseWwwAuthenticate(header);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe('malformed-challenge');
      expect(result.error.detail).toContain(message);
    }
  });

  it('rejects a request that is JSON but not an object', () => {
    const result = parseWwwAuthenticate(VECTOR_HEADER.replace(/request="[^"]*"/, `request="${Buffer.from('[1]').toString('base64url')}"`));
    expect(result.ok).toBe(false);
  });
});
