import { createHash } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  challengeExpiry,
  encodeReceipt,
  issueChallenges,
  matchOffer,
  parseCredential,
  PAYMENT_RECEIPT_HEADER,
  serializeChallenge,
  SUBSCRIPTION_INTENT,
  toProblemDetails,
  verifyBinding,
  type Challenge,
  type Credential,
  type MppError,
  type Offer,
  type Receipt,
  type Terms,
} from '@mp/mpp';
import { ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { PayToPolicy } from '../merchants/pay-to-policy';
import type { PreparedCall } from '../settlement/settlement.service';
import { Clock } from '../x402/clock';
import { CHARGE_RAILS, type ChargeAttempt, type ChargeRail } from './charges/charge-rail';
import { MppClaims, type Claim } from './mpp-claims.repository';
import { MppSecrets } from './mpp-secrets';
import { MAX_CHARGE_CREDENTIAL_CHARS, type CredentialBody, type TermsInput } from './mpp.api';

/** What an MPP endpoint answers: the status, headers and body the merchant passes on to its client unchanged. */
export interface MppAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Record<string, unknown>;
}

export interface ChallengeIssuance {
  /** the key the merchant binds its challenges with: derived from its secret, accepted with it, rotated with it */
  issuerKey: string;
  realm: string;
  /** the route's offers, made canonical: what its challenges carry */
  offers: Offer[];
  /** seconds a challenge lives when the terms name no `expiresIn` (MPP_CHALLENGE_TTL_SECONDS) */
  challengeTtlSeconds: number;
}

export interface IssuedChallenges {
  challenges: Challenge[];
  /** one `WWW-Authenticate` value per challenge, ready to send with the 402 */
  wwwAuthenticate: string[];
}

const PROBLEM_JSON = 'application/problem+json';

/**
 * The MPP facilitator API: challenges bound by HMAC with the merchant's secret, credentials checked against the
 * route's terms, claimed once in PostgreSQL, then settled by the rail of their method. Failures are the spec's
 * problem types with fresh challenges, so the merchant relays them as they are.
 */
@Injectable()
export class MppService {
  private readonly logger = new Logger(MppService.name);
  private readonly rails: Map<string, ChargeRail>;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    @Inject(CHARGE_RAILS) rails: ChargeRail[],
    private readonly secrets: MppSecrets,
    private readonly claims: MppClaims,
    private readonly clock: Clock,
    private readonly payTo: PayToPolicy,
  ) {
    this.rails = new Map(rails.map((r) => [railKey(r.method, r.intent ?? 'charge'), r]));
  }

  /** The methods this facilitator can settle and their intents (stripe only when configured; subscription only with sealing keys). */
  methods(): { method: string; intents: string[] }[] {
    const intents = new Map<string, string[]>();
    for (const r of this.rails.values()) {
      if (r.method === 'stripe' && !this.config.stripe) continue;
      intents.set(r.method, [...(intents.get(r.method) ?? []), r.intent ?? 'charge']);
    }
    return [...intents].map(([method, list]) => ({ method, intents: list }));
  }

  async issue(input: TermsInput, merchantId: string | null): Promise<IssuedChallenges> {
    const terms = this.normalizeTerms(input);
    const { secret } = await this.secrets.forScope(scopeOf(merchantId));
    const challenges = issueChallenges(secret, terms, {
      expires: challengeExpiry(this.clock.nowMs(), input.expiresIn ?? this.config.mpp.challengeTtlSeconds),
      ...(input.header !== undefined && { header: input.header }),
    });
    return { challenges, wwwAuthenticate: challenges.map(serializeChallenge) };
  }

  /**
   * What a merchant needs to issue the route's challenges itself (issueChallenges of @mp/mpp), as /mpp/challenges
   * would: its issuer key, the offers made canonical, and the default lifetime of a challenge.
   */
  async issuance(input: TermsInput, merchantId: string | null): Promise<ChallengeIssuance> {
    const { realm, offers } = this.normalizeTerms(input);
    const { issuerKey } = await this.secrets.forScope(scopeOf(merchantId));
    return { issuerKey, realm, offers, challengeTtlSeconds: this.config.mpp.challengeTtlSeconds };
  }

  async verify(body: CredentialBody, merchantId: string | null): Promise<MppAnswer> {
    const accepted = await this.accept(body, merchantId);
    if (!accepted.ok) return accepted.answer;
    const { attempt, rail } = accepted;
    // a session's challenges are echoed by many credentials: never "used"
    const used = rail.present ? undefined : await this.claims.find(scopeOf(merchantId), attempt.challenge.id);
    if (used) return this.problem(body, merchantId, { code: 'invalid-challenge', detail: 'this challenge has already been used' }, attempt.challenge.id);
    const verdict = await rail.verify(attempt, { beforeSettle: false });
    if (!verdict.ok) return this.problem(body, merchantId, verdict.error, attempt.challenge.id);
    return {
      status: 200,
      headers: {},
      body: {
        valid: true,
        challengeId: attempt.challenge.id,
        method: attempt.challenge.method,
        intent: attempt.challenge.intent,
        ...(verdict.payer && { payer: verdict.payer }),
      },
    };
  }

  async settle(body: CredentialBody, merchantId: string | null): Promise<MppAnswer> {
    const accepted = await this.accept(body, merchantId, { replayAfterExpiry: true });
    if (!accepted.ok) return accepted.answer;
    const { attempt, rail, expired } = accepted;
    const { challenge } = attempt;
    const scope = scopeOf(merchantId);
    if (rail.present) {
      // not claimed once (a session): an expired challenge is refused, the client retries with the fresh one
      if (expired) return this.problem(body, merchantId, expired, challenge.id);
      const presented = await rail.present(attempt);
      return presented.ok ? receiptAnswer(presented.receipt, presented.payer) : this.problem(body, merchantId, presented.error, challenge.id);
    }

    // Every check first, so a forged credential cannot use up somebody else's challenge. A challenge claimed before is
    // found by the claim's conflict, or read when it has expired, its checks fail (its own earlier settlement may be
    // why) or cannot run (the node is down: the answer already given still stands). A first presentation pays no read
    // before its claim.
    const checked = expired
      ? undefined
      : await rail.verify(attempt, { beforeSettle: true }).then(
          (verdict) => ({ verdict, error: undefined }),
          (error: unknown) => ({ verdict: undefined, error }),
        );
    const verdict = checked?.verdict;
    let existing: Claim | undefined;
    let begun: Promise<PreparedCall> | undefined;
    if (verdict?.ok) {
      // The settlement's read-only start (a simulation) runs while the challenge is claimed; used only if this claim wins.
      const starting = rail.begin?.(attempt);
      const claimed = await this.claims.claim({
        scope,
        challengeId: challenge.id,
        method: challenge.method,
        intent: challenge.intent,
        credentialHash: attempt.credentialHash,
        expiresAt: challenge.expires ? new Date(challenge.expires) : null,
      });
      if (claimed) begun = starting;
      else {
        // Claimed before, perhaps by a concurrent request: answered like any later one.
        existing = await this.claims.find(scope, challenge.id);
        if (!existing) return this.problem(body, merchantId, { code: 'invalid-challenge', detail: 'this challenge has already been used' }, challenge.id);
      }
    } else {
      existing = await this.claims.find(scope, challenge.id);
      if (!existing) {
        if (expired) return this.problem(body, merchantId, expired, challenge.id);
        if (!verdict) throw checked?.error;
        return this.problem(body, merchantId, verdict.error, challenge.id);
      }
    }
    if (existing) {
      // Only the same credential gets anything but "used": the answer it was given, or (left unfinished by a crash
      // or an unknown outcome) a new attempt; its rail is idempotent (the same authorization, the same PaymentIntent
      // idempotency key). Another credential for this challenge is refused, whatever it carries.
      if (existing.credentialHash !== attempt.credentialHash)
        return this.problem(body, merchantId, { code: 'invalid-challenge', detail: 'this challenge has already been used' }, challenge.id);
      const earlier = await this.earlierOutcome(body, merchantId, attempt, rail, existing, expired);
      if (earlier) return earlier;
    }

    const settled = await rail.settle(attempt, begun);
    if (!settled.ok) {
      if (settled.final) await this.claims.failed(scope, challenge.id, settled.error.code, settled.error.detail);
      else await this.claims.retryable(scope, challenge.id, settled.error.detail);
      return this.problem(body, merchantId, settled.error, challenge.id);
    }
    const receipt: Receipt = {
      status: 'success',
      method: challenge.method,
      timestamp: new Date(this.clock.nowMs()).toISOString(),
      reference: settled.reference,
      challengeId: challenge.id,
      ...settled.receipt,
    };
    // If Stripe's webhook or the sweep recorded the settlement first, its receipt is the one every answer carries.
    const stored = await this.claims.settled(scope, challenge.id, receipt, settled.payer ?? null);
    return receiptAnswer(stored.receipt, stored.payer);
  }

  /**
   * What the same credential sent again gets: the receipt of its settlement, the problem of its failure, or, while
   * another request is settling it, that request's outcome once known (waiting up to SETTLE_BUDGET_MS). Undefined:
   * this request took the claim over (its last attempt's outcome was unknown, or its holder went silent) and drives it.
   */
  private async earlierOutcome(
    body: CredentialBody,
    merchantId: string | null,
    attempt: ChargeAttempt,
    rail: ChargeRail,
    first: Claim,
    expired: MppError | undefined,
  ): Promise<MppAnswer | undefined> {
    const scope = scopeOf(merchantId);
    const { challenge } = attempt;
    const deadline = Date.now() + this.config.settleBudgetMs;
    for (let claim: Claim | undefined = first; claim; claim = await this.claims.find(scope, challenge.id)) {
      if (claim.state === 'settled' && claim.reference) {
        const receipt = claim.receipt ?? {
          status: 'success',
          method: challenge.method,
          timestamp: claim.updatedAt.toISOString(),
          reference: claim.reference,
          challengeId: challenge.id,
        };
        return receiptAnswer(receipt, claim.payer);
      }
      if (claim.state === 'failed') {
        return this.problem(body, merchantId, { code: claim.problem ?? 'verification-failed', detail: claim.detail ?? 'the payment failed' }, challenge.id);
      }
      if (expired) {
        // Not driven again after expiry: the sweep (Stripe) or the settlement worker (evm) finishes it, and the
        // payment's record tells what the claim could not.
        const recorded = await this.claims.recordedOutcome(scope, challenge.id);
        if (recorded?.state === 'confirmed') {
          const receipt: Receipt = {
            status: 'success',
            method: challenge.method,
            timestamp: new Date(this.clock.nowMs()).toISOString(),
            reference: recorded.reference,
            challengeId: challenge.id,
            ...(await rail.receiptFields?.(attempt)),
          };
          const stored = await this.claims.settled(scope, challenge.id, receipt, null);
          return receiptAnswer(stored.receipt, stored.payer);
        }
        if (recorded) {
          const error: MppError = {
            code: recorded.state === 'expired' ? 'payment-expired' : 'verification-failed',
            detail: recorded.message ?? recorded.reason ?? `the payment ${recorded.state}`,
          };
          await this.claims.failed(scope, challenge.id, error.code, error.detail);
          return this.problem(body, merchantId, error, challenge.id);
        }
        return this.problem(
          body,
          merchantId,
          {
            code: 'internal-payment-error',
            detail: `the outcome of this credential's payment is not known yet (${expired.detail}); send it again later for its receipt`,
          },
          challenge.id,
        );
      }
      if (await this.claims.takeOver(scope, challenge.id, attempt.credentialHash, this.config.settleBudgetMs)) return undefined;
      if (Date.now() >= deadline) break;
      await new Promise((resolve) => setTimeout(resolve, CLAIM_POLL_MS));
    }
    return this.problem(
      body,
      merchantId,
      { code: 'internal-payment-error', detail: 'this credential is being settled by another request; send it again for its outcome' },
      challenge.id,
    );
  }

  /**
   * Parse, binding, expiry and route terms: everything that needs neither a rail nor the database's claims.
   * `replayAfterExpiry`: an expired challenge whose binding holds is accepted with `expired` set, so the same
   * credential can still be given the outcome it had; nothing new is settled for it.
   */
  private async accept(
    body: CredentialBody,
    merchantId: string | null,
    { replayAfterExpiry = false } = {},
  ): Promise<{ ok: true; attempt: ChargeAttempt; rail: ChargeRail; expired?: MppError } | { ok: false; answer: MppAnswer }> {
    const terms = this.normalizeTerms(body.terms);
    const parsed = parseCredential(body.credential);
    if (!parsed.ok) return { ok: false, answer: await this.problem(body, merchantId, parsed.error) };
    const credential: Credential = parsed.value;
    const { secret, alsoAccepted } = await this.secrets.forScope(scopeOf(merchantId));
    let expired: MppError | undefined;
    let bound = verifyBinding(secret, credential, { now: new Date(this.clock.nowMs()), previousSecrets: alsoAccepted, via: body.credentialHeader });
    if (!bound.ok && bound.error.code === 'payment-expired' && replayAfterExpiry && credential.challenge.expires !== undefined) {
      // Everything but the expiry, checked as of the last moment the challenge was valid.
      expired = bound.error;
      bound = verifyBinding(secret, credential, {
        now: new Date(Date.parse(credential.challenge.expires) - 1),
        previousSecrets: alsoAccepted,
        via: body.credentialHeader,
      });
    }
    if (!bound.ok) return { ok: false, answer: await this.problem(body, merchantId, bound.error, credential.challenge.id) };
    const matched = matchOffer(credential.challenge, terms);
    if (!matched.ok) return { ok: false, answer: await this.problem(body, merchantId, matched.error, credential.challenge.id) };
    const rail = this.rails.get(railKey(credential.challenge.method, credential.challenge.intent));
    if (!rail) {
      return {
        ok: false,
        answer: await this.problem(body, merchantId, {
          code: 'method-unsupported',
          detail: `${credential.challenge.method}/${credential.challenge.intent} is not supported`,
        }),
      };
    }
    const payToRefused = await this.payTo.mppRefusal(credential.challenge, merchantId);
    if (payToRefused) return { ok: false, answer: await this.problem(body, merchantId, payToRefused, credential.challenge.id) };
    // a subscription credential carries one authorization per period: only it may use the larger limit
    if (credential.challenge.intent !== SUBSCRIPTION_INTENT && body.credential.length > MAX_CHARGE_CREDENTIAL_CHARS)
      return {
        ok: false,
        answer: await this.problem(
          body,
          merchantId,
          { code: 'malformed-credential', detail: `a ${credential.challenge.intent} credential is at most ${MAX_CHARGE_CREDENTIAL_CHARS} characters` },
          credential.challenge.id,
        ),
      };
    const credentialHash = createHash('sha256').update(body.credential.trim()).digest('hex');
    return { ok: true, attempt: { challenge: credential.challenge, credential, credentialHash, merchantId }, rail, ...(expired && { expired }) };
  }

  /** Offers validated by their rails and made canonical, so issuing and matching see the same requests. */
  private normalizeTerms(input: TermsInput): Terms {
    const problems: { name: string; reason: string }[] = [];
    const offers = input.offers.map((offer, index) => {
      const rail = this.rails.get(railKey(offer.method, offer.intent));
      if (!rail) {
        const why =
          offer.intent === SUBSCRIPTION_INTENT && !this.config.subscriptions
            ? `${offer.method}/${offer.intent} is not offered: this facilitator has no SUBSCRIPTION_SEALING_KEYS to keep pre-signed authorizations encrypted`
            : `${offer.method}/${offer.intent} is not supported`;
        problems.push({
          name: `terms.offers.${index}`,
          reason: `${why}; supported: ${this.methods()
            .flatMap((m) => m.intents.map((intent) => `${m.method}/${intent}`))
            .join(', ')}`,
        });
        return offer;
      }
      const checked = rail.normalize(offer.request);
      if (!checked.ok) {
        for (const reason of checked.problems) problems.push({ name: `terms.offers.${index}`, reason });
        return offer;
      }
      return { ...offer, request: checked.request };
    });
    if (problems.length)
      throw new ProblemError('validation_failed', `invalid payment terms: ${problems.map((p) => p.reason).join('; ')}`, { invalidParams: problems });
    return {
      realm: input.realm,
      offers,
      ...(input.digest !== undefined && { digest: input.digest }),
      ...(input.opaque !== undefined && { opaque: input.opaque }),
    };
  }

  /** A problem+json answer with fresh challenges for the route, as the spec asks of every payment failure. */
  private async problem(body: CredentialBody, merchantId: string | null, error: MppError, challengeId?: string): Promise<MppAnswer> {
    const problem = toProblemDetails(error.code, { detail: error.detail, ...(challengeId !== undefined && { challengeId }) });
    if (error.code === 'internal-payment-error') this.logger.warn(`MPP ${challengeId ?? ''}: ${error.detail}`);
    const fresh = await this.issue(body.terms, merchantId);
    return {
      status: problem.status,
      headers: { 'Content-Type': PROBLEM_JSON, 'Cache-Control': 'no-store', 'WWW-Authenticate': fresh.wwwAuthenticate },
      body: { ...problem, challenges: fresh.challenges },
    };
  }
}

function railKey(method: string, intent: string): string {
  return `${method}/${intent}`;
}

/** How often a request waiting for another request's settlement of the same credential looks at the claim again. */
const CLAIM_POLL_MS = 100;

function receiptAnswer(receipt: Receipt, payer: string | null): MppAnswer {
  const header = encodeReceipt(receipt);
  return {
    status: 200,
    headers: { [PAYMENT_RECEIPT_HEADER]: header, 'Cache-Control': 'private' },
    body: { success: true, receipt, paymentReceipt: header, ...(payer && { payer }) },
  };
}

export function scopeOf(merchantId: string | null): string {
  return merchantId ?? '';
}
