import { decodeOpaque, issuerKey } from './challenge';
import { verifyBinding } from './credential';
import { CHALLENGE_NONCE_KEY, challengeExpiry, issueChallenges, matchOffer, type Terms } from './terms';

const SECRET = 'test-secret-key-at-least-32-bytes-long!!';
const terms: Terms = {
  realm: 'shop.example',
  offers: [
    {
      method: 'evm',
      intent: 'charge',
      request: { amount: '25000', currency: '0x036CbD53842c5426634e7929541eC2318f3dCF7e', methodDetails: { chainId: 84532 } },
    },
    { method: 'stripe', intent: 'charge', request: { amount: '50', currency: 'usd' }, description: 'a forecast' },
  ],
  digest: 'sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:',
  opaque: { resource: 'POST /forecast' },
};
let nonces = 0;
const issuance = { expires: challengeExpiry(Date.parse('2026-12-01T10:15:00.750Z'), 300), nonce: () => `nonce-${++nonces}` };
const now = new Date('2026-12-01T10:16:00Z');
const credentialFor = (challenge: ReturnType<typeof issueChallenges>[number]) => ({ challenge, payload: {} });

describe('issueChallenges', () => {
  it('issues one challenge per offer, bound to the digest and opaque, each with its own nonce, expiring in whole seconds', () => {
    const challenges = issueChallenges(SECRET, terms, issuance);
    expect(challenges.map((c) => [c.method, c.description, c.expires, c.digest])).toEqual([
      ['evm', undefined, '2026-12-01T10:20:00Z', terms.digest],
      ['stripe', 'a forecast', '2026-12-01T10:20:00Z', terms.digest],
    ]);
    const opaques = challenges.map((c) => decodeOpaque(c.opaque!));
    expect(opaques.map((o) => o.ok && o.value.resource)).toEqual(['POST /forecast', 'POST /forecast']);
    expect(new Set(opaques.map((o) => o.ok && o.value[CHALLENGE_NONCE_KEY])).size).toBe(2);
    for (const challenge of challenges) expect(matchOffer(challenge, terms).ok).toBe(true);
  });

  it('binds with an issuer key that a verifier holding the secret accepts only when it names that key', () => {
    const key = issuerKey(SECRET);
    expect(key).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(key).not.toBe(issuerKey(`${SECRET}-rotated`));
    const [challenge] = issueChallenges(key, terms, issuance);
    expect(verifyBinding(SECRET, credentialFor(challenge!), { now }).ok).toBe(false);
    expect(verifyBinding(SECRET, credentialFor(challenge!), { now, previousSecrets: [key] }).ok).toBe(true);
    expect(verifyBinding(SECRET, credentialFor(challenge!), { now, previousSecrets: [issuerKey(`${SECRET}-rotated`)] }).ok).toBe(false);
  });
});
