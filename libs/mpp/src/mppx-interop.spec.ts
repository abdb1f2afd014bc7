import fc from 'fast-check';
import { Challenge as MppxChallenge, Credential as MppxCredential, Receipt as MppxReceipt } from 'mppx';
import { createChallenge, encodeOpaque, parseWwwAuthenticate, serializeChallenge, type Challenge } from './challenge';
import { parseCredential, serializeCredential, verifyBinding } from './credential';
import { decodeReceipt, encodeReceipt } from './receipt';

// Our codecs against the official mppx 0.11 package itself, on random challenges: the same ids, and each side reads
// what the other writes (challenges, credentials, receipts).

const SECRET = 'a-merchant-secret-of-at-least-32-bytes!!';
const json: fc.Arbitrary<unknown> = fc.jsonValue() as fc.Arbitrary<unknown>;
const fieldsArb = fc.record(
  {
    realm: fc.string({ minLength: 1 }).filter((s) => !/[\r\n]/.test(s)),
    method: fc.stringMatching(/^[a-z][a-z0-9:_-]{0,12}$/),
    intent: fc.stringMatching(/^[a-z][a-z0-9_-]{0,12}$/),
    // mppx 0.11 itself loses a request member named "__proto__" (its own challenges then fail its own verify), so
    // interop is checked without one; our round trip with one is checked below.
    request: fc.dictionary(
      fc.string().filter((k) => k !== '__proto__'),
      json,
      { maxKeys: 6 },
    ),
    expires: fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString()),
    digest: fc
      .base64String({ minLength: 4, maxLength: 44 })
      .filter((s) => s.length % 4 === 0)
      .map((s) => `sha-256=:${s}:`),
    opaque: fc.dictionary(fc.string(), fc.string(), { maxKeys: 4 }).map(encodeOpaque),
    description: fc.string().filter((s) => !/[\r\n]/.test(s)),
  },
  { requiredKeys: ['realm', 'method', 'intent', 'request'] },
);

/** mppx's own HMAC-bound challenge for the same fields. */
function mppxChallenge(fields: Omit<Challenge, 'id'>) {
  return MppxChallenge.from({ secretKey: SECRET, ...fields, request: fields.request as never });
}

describe('interoperability with mppx 0.11', () => {
  it('binds the same id as mppx for random challenges', () => {
    fc.assert(
      fc.property(fieldsArb, (fields) => {
        expect(createChallenge(SECRET, fields).id).toBe(mppxChallenge(fields).id);
      }),
    );
  });

  it('writes WWW-Authenticate values mppx parses back to the same challenge, and reads what mppx writes', () => {
    fc.assert(
      fc.property(fieldsArb, (fields) => {
        const ours = createChallenge(SECRET, fields);
        const parsedByMppx = MppxChallenge.deserialize(serializeChallenge(ours));
        expect(parsedByMppx.id).toBe(ours.id);
        expect(MppxChallenge.verify(parsedByMppx, { secretKey: SECRET })).toBe(true);
        const parsedByUs = parseWwwAuthenticate(MppxChallenge.serialize(mppxChallenge(fields)));
        expect(parsedByUs).toMatchObject({ ok: true, value: [{ id: ours.id, realm: ours.realm, method: ours.method, intent: ours.intent }] });
      }),
      { numRuns: 200 },
    );
  });

  it('reads mppx credentials (and mppx reads ours) with the binding intact', () => {
    fc.assert(
      fc.property(fieldsArb, json, (fields, payload) => {
        const challenge = mppxChallenge(fields);
        const header = MppxCredential.serialize(MppxCredential.from({ challenge, payload: payload ?? {} }));
        const parsed = parseCredential(header);
        expect(parsed.ok).toBe(true);
        if (!parsed.ok) return;
        expect(verifyBinding(SECRET, parsed.value, { now: new Date('1999-01-01') })).toMatchObject({ ok: true });
        const again = MppxCredential.deserialize(serializeCredential(parsed.value));
        expect(again.challenge.id).toBe(challenge.id);
        expect(MppxChallenge.verify(again.challenge, { secretKey: SECRET })).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('writes receipts mppx reads, and reads mppx receipts', () => {
    const receipt = { status: 'success' as const, method: 'evm', timestamp: '2026-12-01T10:15:04.530Z', reference: `0x${'ab'.repeat(32)}`, challengeId: 'abc' };
    expect(MppxReceipt.deserialize(encodeReceipt(receipt))).toMatchObject(receipt);
    expect(decodeReceipt(MppxReceipt.serialize(MppxReceipt.from(receipt)))).toMatchObject({ ok: true, value: receipt });
  });

  it('keeps a request member named "__proto__" through our own challenge, header and credential, binding intact', () => {
    const request = JSON.parse('{"__proto__":{"a":1},"amount":"5"}') as Record<string, unknown>;
    const challenge = createChallenge(SECRET, { realm: 'shop.example', method: 'evm', intent: 'charge', request });
    expect(Object.keys(challenge.request)).toEqual(['__proto__', 'amount']);
    const [parsed] = (parseWwwAuthenticate(serializeChallenge(challenge)) as { ok: true; value: Challenge[] }).value;
    expect(Object.keys(parsed!.request)).toEqual(['__proto__', 'amount']);
    const credential = parseCredential(serializeCredential({ challenge, payload: {} }));
    expect(credential.ok && verifyBinding(SECRET, credential.value, { now: new Date('1999-01-01') })).toMatchObject({ ok: true });
  });
});
