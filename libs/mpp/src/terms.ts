import { randomBytes } from 'node:crypto';
import { canonicalize } from './jcs';
import { createChallenge, decodeOpaque, encodeOpaque, type Challenge } from './challenge';
import { fail, ok, type Result } from './problems';

/** One payment option a route accepts: what a challenge for it carries. */
export interface Offer {
  method: string;
  intent: string;
  request: Record<string, unknown>;
  description?: string;
}

/** What a merchant expects for a route: the same terms it issues challenges from. */
export interface Terms {
  realm: string;
  offers: Offer[];
  digest?: string;
  opaque?: Record<string, string>;
}

/**
 * The opaque member an issuer adds so that every challenge is unique: without it, two challenges for the same
 * terms issued within the same second would share an id, and paying one would use up the other.
 */
export const CHALLENGE_NONCE_KEY = '_nonce';

/** What issueChallenges adds to the terms. */
export interface Issuance {
  /** when the challenges expire, in whole seconds (challengeExpiry) */
  expires: string;
  /** a new unique value for each challenge, put in its opaque as CHALLENGE_NONCE_KEY; 12 random bytes by default */
  nonce?: () => string;
  /** ask the client to send the credential in Payment-Authorization (draft -02) */
  header?: 'Payment-Authorization';
}

/**
 * One challenge per offer of the terms (whose requests are already canonical), bound with `key`: the facilitator's
 * secret, or a merchant's issuer key (issuerKey). The same function on both sides, so a merchant's challenges are the
 * facilitator's, field for field.
 */
export function issueChallenges(key: string, terms: Terms, { expires, nonce = randomNonce, header }: Issuance): Challenge[] {
  return terms.offers.map((offer) =>
    createChallenge(key, {
      realm: terms.realm,
      method: offer.method,
      intent: offer.intent,
      request: offer.request,
      expires,
      ...(offer.description !== undefined && { description: offer.description }),
      ...(terms.digest !== undefined && { digest: terms.digest }),
      // The nonce makes every challenge unique (the id is bound to it); the route's own opaque rides along.
      opaque: encodeOpaque({ ...terms.opaque, [CHALLENGE_NONCE_KEY]: nonce() }),
      ...(header !== undefined && { header }),
    }),
  );
}

function randomNonce(): string {
  return randomBytes(12).toString('base64url');
}

/** A challenge's `expires`, `ttlSeconds` after `nowMs`, in whole seconds (RFC 3339, `Z`). */
export function challengeExpiry(nowMs: number, ttlSeconds: number): string {
  const expires = new Date(nowMs + ttlSeconds * 1000);
  expires.setUTCMilliseconds(0);
  return expires.toISOString().replace('.000Z', 'Z');
}

/**
 * The HMAC proves only that we issued a challenge, not that it was issued for this route: the echoed challenge
 * must equal one of the route's offers (realm, method, intent and canonical request), and carry the route's
 * digest and opaque, or a cheap route's challenge could pay for an expensive one.
 */
export function matchOffer(challenge: Challenge, terms: Terms): Result<Offer> {
  if (challenge.realm !== terms.realm) return fail('invalid-challenge', `the challenge is for realm "${challenge.realm}", not "${terms.realm}"`);
  const sameKind = terms.offers.filter((o) => o.method === challenge.method && o.intent === challenge.intent);
  if (sameKind.length === 0) {
    const offered = terms.offers.map((o) => `${o.method}/${o.intent}`).join(', ');
    return fail('method-unsupported', `${challenge.method}/${challenge.intent} is not accepted here (accepted: ${offered})`);
  }
  const echoed = canonicalize(challenge.request);
  const offer = sameKind.find((o) => canonicalize(o.request) === echoed);
  if (!offer) return fail('invalid-challenge', "the challenge was issued for different payment terms than this request's");
  if ((challenge.digest ?? undefined) !== terms.digest) return fail('invalid-challenge', 'the challenge is bound to a different request body (digest)');
  const opaque = challenge.opaque === undefined ? ok<Record<string, string>>({}) : decodeOpaque(challenge.opaque);
  if (!opaque.ok) return fail('malformed-credential', 'challenge.opaque is not a base64url JSON map');
  const { [CHALLENGE_NONCE_KEY]: _nonce, ...echoedOpaque } = opaque.value;
  if (canonicalize(echoedOpaque) !== canonicalize(terms.opaque ?? {}))
    return fail('invalid-challenge', "the challenge carries different opaque data than this request's");
  return ok(offer);
}
