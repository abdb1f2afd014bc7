import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import {
  CHALLENGE_NONCE_KEY,
  createChallenge,
  encodeOpaque,
  encodeReceipt,
  matchOffer,
  parseCredential,
  PAYMENT_RECEIPT_HEADER,
  serializeChallenge,
  toProblemDetails,
  verifyBinding,
  type Challenge,
  type Credential,
  type MppError,
  type Receipt,
  type Terms,
} from '@mp/mpp';
import { ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { Clock } from '../x402/clock';
import { CHARGE_RAILS, type ChargeAttempt, type ChargeRail } from './charges/charge-rail';
import { MppClaims } from './mpp-claims.repository';
import { MppSecrets } from './mpp-secrets';
import type { CredentialBody, TermsInput } from './mpp.api';

/** What an MPP endpoint answers: the status, headers and body the merchant passes on to its client unchanged. */
export interface MppAnswer {
  status: number;
  headers: Record<string, string | string[]>;
  body: Record<string, unknown>;
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
  ) {
    this.rails = new Map(rails.map((r) => [r.method, r]));
  }

  /** The methods this facilitator can settle (stripe only when configured). */
  methods(): { method: string; intents: string[] }[] {
    return [...this.rails.values()].filter((r) => r.method !== 'stripe' || this.config.stripe).map((r) => ({ method: r.method, intents: ['charge'] }));
  }

  async issue(input: TermsInput, merchantId: string | null): Promise<IssuedChallenges> {
    const terms = this.normalizeTerms(input);
    const { secret } = await this.secrets.forScope(scopeOf(merchantId));
    const expires = new Date(this.clock.nowMs() + (input.expiresIn ?? this.config.mpp.challengeTtlSeconds) * 1000);
    expires.setUTCMilliseconds(0);
    const challenges = terms.offers.map((offer) =>
      createChallenge(secret, {
        realm: terms.realm,
        method: offer.method,
        intent: offer.intent,
        request: offer.request,
        expires: expires.toISOString().replace('.000Z', 'Z'),
        ...(offer.description !== undefined && { description: offer.description }),
        ...(terms.digest !== undefined && { digest: terms.digest }),
        // A nonce in opaque makes every challenge unique (the id is bound to it); the route's own opaque rides along.
        opaque: encodeOpaque({ ...terms.opaque, [CHALLENGE_NONCE_KEY]: randomBytes(12).toString('base64url') }),
        ...(input.header !== undefined && { header: input.header }),
      }),
    );
    return { challenges, wwwAuthenticate: challenges.map(serializeChallenge) };
  }

  async verify(body: CredentialBody, merchantId: string | null): Promise<MppAnswer> {
    const accepted = await this.accept(body, merchantId);
    if (!accepted.ok) return accepted.answer;
    const { attempt, rail } = accepted;
    const used = await this.claims.find(scopeOf(merchantId), attempt.challenge.id);
    if (used) return this.problem(body, merchantId, { code: 'invalid-challenge', detail: 'this challenge has already been used' }, attempt.challenge.id);
    const verdict = await rail.verify(attempt, { beforeSettle: false });
    if (!verdict.ok) return this.problem(body, merchantId, verdict.error, attempt.challenge.id);
    return {
      status: 200,
      headers: {},
      body: { valid: true, challengeId: attempt.challenge.id, method: attempt.challenge.method, intent: attempt.challenge.intent, ...(verdict.payer && { payer: verdict.payer }) },
    };
  }

  async settle(body: CredentialBody, merchantId: string | null): Promise<MppAnswer> {
    const accepted = await this.accept(body, merchantId);
    if (!accepted.ok) return accepted.answer;
    const { attempt, rail } = accepted;
    const { challenge } = attempt;
    const scope = scopeOf(merchantId);

    const existing = await this.claims.find(scope, challenge.id);
    if (existing) {
      // Only the same credential, left unfinished (a crash, or an outcome that was unknown), may be driven again:
      // its rail is idempotent (the same authorization, the same PaymentIntent idempotency key).
      const retry = existing.credentialHash === attempt.credentialHash && (await this.claims.takeOver(scope, challenge.id, attempt.credentialHash, this.config.settleBudgetMs));
      if (!retry) return this.problem(body, merchantId, { code: 'invalid-challenge', detail: 'this challenge has already been used' }, challenge.id);
    } else {
      // Every check first, so a forged credential cannot use up somebody else's challenge.
      const verdict = await rail.verify(attempt, { beforeSettle: true });
      if (!verdict.ok) return this.problem(body, merchantId, verdict.error, challenge.id);
      const claimed = await this.claims.claim({
        scope,
        challengeId: challenge.id,
        method: challenge.method,
        intent: challenge.intent,
        credentialHash: attempt.credentialHash,
        expiresAt: challenge.expires ? new Date(challenge.expires) : null,
      });
      if (!claimed) return this.problem(body, merchantId, { code: 'invalid-challenge', detail: 'this challenge has already been used' }, challenge.id);
    }

    const settled = await rail.settle(attempt);
    if (!settled.ok) {
      if (settled.final) await this.claims.failed(scope, challenge.id, settled.error.code, settled.error.detail);
      else await this.claims.retryable(scope, challenge.id, settled.error.detail);
      return this.problem(body, merchantId, settled.error, challenge.id);
    }
    await this.claims.settled(scope, challenge.id, settled.reference);
    const receipt: Receipt = {
      status: 'success',
      method: challenge.method,
      timestamp: new Date(this.clock.nowMs()).toISOString(),
      reference: settled.reference,
      challengeId: challenge.id,
    };
    const header = encodeReceipt(receipt);
    return {
      status: 200,
      headers: { [PAYMENT_RECEIPT_HEADER]: header, 'Cache-Control': 'private' },
      body: { success: true, receipt, paymentReceipt: header, ...(settled.payer && { payer: settled.payer }) },
    };
  }

  /** Parse, binding, expiry and route terms: everything that needs neither a rail nor the database's claims. */
  private async accept(body: CredentialBody, merchantId: string | null): Promise<{ ok: true; attempt: ChargeAttempt; rail: ChargeRail } | { ok: false; answer: MppAnswer }> {
    const terms = this.normalizeTerms(body.terms);
    const parsed = parseCredential(body.credential);
    if (!parsed.ok) return { ok: false, answer: await this.problem(body, merchantId, parsed.error) };
    const credential: Credential = parsed.value;
    const { secret, previous } = await this.secrets.forScope(scopeOf(merchantId));
    const bound = verifyBinding(secret, credential, { now: new Date(this.clock.nowMs()), previousSecrets: previous, via: body.credentialHeader });
    if (!bound.ok) return { ok: false, answer: await this.problem(body, merchantId, bound.error, credential.challenge.id) };
    const matched = matchOffer(credential.challenge, terms);
    if (!matched.ok) return { ok: false, answer: await this.problem(body, merchantId, matched.error, credential.challenge.id) };
    const rail = this.rails.get(credential.challenge.method);
    if (!rail || credential.challenge.intent !== 'charge') {
      return { ok: false, answer: await this.problem(body, merchantId, { code: 'method-unsupported', detail: `${credential.challenge.method}/${credential.challenge.intent} is not supported` }) };
    }
    const credentialHash = createHash('sha256').update(body.credential.trim()).digest('hex');
    return { ok: true, attempt: { challenge: credential.challenge, credential, credentialHash, merchantId }, rail };
  }

  /** Offers validated by their rails and made canonical, so issuing and matching see the same requests. */
  private normalizeTerms(input: TermsInput): Terms {
    const problems: { name: string; reason: string }[] = [];
    const offers = input.offers.map((offer, index) => {
      const rail = this.rails.get(offer.method);
      if (!rail || offer.intent !== 'charge') {
        problems.push({ name: `terms.offers.${index}`, reason: `${offer.method}/${offer.intent} is not supported; supported: ${this.methods().map((m) => `${m.method}/charge`).join(', ')}` });
        return offer;
      }
      const checked = rail.normalize(offer.request);
      if (!checked.ok) {
        for (const reason of checked.problems) problems.push({ name: `terms.offers.${index}`, reason });
        return offer;
      }
      return { ...offer, request: checked.request };
    });
    if (problems.length) throw new ProblemError('validation_failed', `invalid payment terms: ${problems.map((p) => p.reason).join('; ')}`, { invalidParams: problems });
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

export function scopeOf(merchantId: string | null): string {
  return merchantId ?? '';
}
