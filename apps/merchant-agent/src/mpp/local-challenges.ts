import type { MppFacilitatorClient, MppIssuance, MppTerms } from '@mp/clients';
import { canonicalize, challengeExpiry, issueChallenges, serializeChallenge } from '@mp/mpp';
import { ExpiringMap } from '@mp/platform';

/**
 * How long a route's issuance (issuer key, canonical offers) is used before it is asked for again. A rotated key stays
 * accepted for an hour, so challenges issued with the one held here keep settling.
 */
const ISSUANCE_TTL_MS = 60_000;

/**
 * The paywall's challenges, issued in this process with the merchant's issuer key (POST /mpp/issuance, asked once a
 * minute per route) by the facilitator's own issueChallenges, so a 402 costs no round trip to the facilitator. Written
 * for bench:paid: /mpp/challenges was most of what a paid MPP request cost beyond mppx's own server, which issues its
 * challenges in its process too. The facilitator still checks every credential: binding, expiry, terms, single use.
 */
export class LocalChallenges {
  private readonly issuances = new ExpiringMap<string, Promise<MppIssuance>>(ISSUANCE_TTL_MS);

  constructor(private readonly facilitator: MppFacilitatorClient) {}

  /** One WWW-Authenticate value per offer of the terms, as /mpp/challenges would answer them. */
  async wwwAuthenticate(terms: MppTerms): Promise<string[]> {
    const { issuerKey, realm, offers, challengeTtlSeconds } = await this.issuance(terms);
    const challenges = issueChallenges(
      issuerKey,
      { realm, offers, ...(terms.digest !== undefined && { digest: terms.digest }), ...(terms.opaque !== undefined && { opaque: terms.opaque }) },
      {
        expires: challengeExpiry(Date.now(), terms.expiresIn ?? challengeTtlSeconds),
        ...(terms.header !== undefined && { header: terms.header }),
      },
    );
    return challenges.map(serializeChallenge);
  }

  private issuance({ realm, offers }: MppTerms): Promise<MppIssuance> {
    const key = canonicalize({ realm, offers });
    const held = this.issuances.get(key);
    if (held) return held;
    const asked = this.facilitator.issuance({ realm, offers });
    this.issuances.set(key, asked);
    asked.catch(() => this.issuances.delete(key)); // a failure is not kept: the next 402 asks again
    return asked;
  }
}
