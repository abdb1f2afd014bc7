import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type Stripe from 'stripe';
import { checkStripeCharge, STRIPE_METHOD, stripeChargeRequestSchema, stripeIdempotencyKey, type MppError, type StripeChargeCredential } from '@mp/mpp';
import { canonicalJson, sha256Hex } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig, type StripeConfig } from '../../config/facilitator.config';
import { isStripeUnavailable, STRIPE_CLIENT, stripeCallOutcome, stripeFailure } from '../../stripe/stripe.client';
import { intentThatCounts, StripeOutcomes } from '../../stripe/stripe-outcomes';
import { StripePayments } from '../../stripe/stripe-payments.repository';
import { Clock } from '../../x402/clock';
import type { ChargeAttempt, ChargeRail, RailSettlement, RailVerdict, RequestCheck } from './charge-rail';

/** Payments through Stripe are recorded with this network; the asset is the currency and the payer the token. */
export const STRIPE_NETWORK = 'stripe';

interface GrantedToken {
  id: string;
  deactivated_at?: number | null;
  usage_limits?: { currency?: string; max_amount?: number; expires_at?: number };
}

/**
 * Method `stripe`: the credential's Shared Payment Token is redeemed by one confirmed PaymentIntent, with the
 * idempotency key `mpp_<challengeId>_<spt>`, so a retried or concurrent call can never charge twice.
 */
@Injectable()
export class StripeChargeRail implements ChargeRail {
  readonly method = STRIPE_METHOD;
  private readonly logger = new Logger(StripeChargeRail.name);
  private readonly config?: StripeConfig;

  constructor(
    @Inject(FACILITATOR_CONFIG) facilitatorConfig: FacilitatorConfig,
    @Optional() @Inject(STRIPE_CLIENT) private readonly stripe: Stripe | undefined,
    private readonly payments: StripePayments,
    private readonly outcomes: StripeOutcomes,
    private readonly clock: Clock,
  ) {
    this.config = facilitatorConfig.stripe;
  }

  normalize(request: unknown): RequestCheck {
    if (!this.config || !this.stripe) return { ok: false, problems: ['method: stripe is not configured on this facilitator (set STRIPE_SECRET_KEY)'] };
    const withNetwork = withDefaultNetworkId(request, this.config.networkId);
    const parsed = stripeChargeRequestSchema.safeParse(withNetwork);
    if (!parsed.success) return { ok: false, problems: parsed.error.issues.map((i) => `request.${i.path.join('.')}: ${i.message}`) };
    return { ok: true, request: parsed.data };
  }

  async verify(attempt: ChargeAttempt, { beforeSettle }: { beforeSettle: boolean }): Promise<RailVerdict> {
    const checked = this.check(attempt);
    if (!checked.ok) return checked;
    const { request, payload } = checked.value;
    // Settling asks Stripe once: the confirmed PaymentIntent checks the token atomically, so no lookup first.
    if (beforeSettle) return { ok: true, payer: payload.spt };
    let token: GrantedToken;
    try {
      token = await this.client().rawRequest(
        'GET',
        `/v1/shared_payment/granted_tokens/${encodeURIComponent(payload.spt)}`,
        {},
        { apiVersion: this.settings().apiVersion },
      );
    } catch (error) {
      const failure = stripeFailure(error);
      if (!failure) throw error;
      if (isStripeUnavailable(failure)) return { ok: false, error: { code: 'internal-payment-error', detail: `Stripe is unavailable: ${failure.message}` } };
      return { ok: false, error: { code: 'verification-failed', detail: `the Shared Payment Token was refused: ${failure.message}` } };
    }
    const now = Number(this.clock.nowSeconds());
    const limits = token.usage_limits ?? {};
    if (token.deactivated_at) return fail('the Shared Payment Token is no longer usable (used or revoked)');
    if (limits.expires_at !== undefined && limits.expires_at <= now) return fail(`the Shared Payment Token expired at ${limits.expires_at}`);
    if (limits.currency !== undefined && limits.currency !== request.currency)
      return fail(`the Shared Payment Token is for ${limits.currency}, the challenge for ${request.currency}`);
    if (limits.max_amount !== undefined && BigInt(limits.max_amount) < BigInt(request.amount)) {
      return {
        ok: false,
        error: {
          code: 'payment-insufficient',
          detail: `the Shared Payment Token allows at most ${limits.max_amount}, the challenge asks for ${request.amount}`,
        },
      };
    }
    return { ok: true, payer: payload.spt };
  }

  async settle(attempt: ChargeAttempt): Promise<RailSettlement> {
    const checked = this.check(attempt);
    if (!checked.ok) return { ...checked, final: true };
    const { request, payload } = checked.value;
    const { challenge, merchantId } = attempt;

    const inserted = await this.payments.insertExternal({
      rail: 'stripe',
      network: STRIPE_NETWORK,
      asset: request.currency,
      payer: payload.spt,
      challengeId: challenge.id,
      payTo: request.methodDetails.networkId,
      amount: BigInt(request.amount),
      validBefore: BigInt(challenge.expires ? Math.floor(Date.parse(challenge.expires) / 1000) : 0),
      method: this.method,
      payloadHash: sha256Hex(canonicalJson({ challengeId: challenge.id, payload })),
      merchantId,
    });
    const paymentId = inserted ?? (await this.payments.findByChallenge('stripe', challenge.id, merchantId))?.id;
    if (!paymentId) throw new Error(`the Stripe payment of challenge ${challenge.id} is missing`);

    const settings = this.settings();
    let intent: Stripe.PaymentIntent;
    try {
      intent = await this.client().paymentIntents.create(this.intentParams(checked.value, challenge.id, merchantId), {
        idempotencyKey: stripeIdempotencyKey(challenge.id, payload.spt),
        apiVersion: settings.apiVersion,
      });
    } catch (error) {
      const failure = stripeFailure(error);
      if (!failure) throw error;
      const outcome = stripeCallOutcome(failure);
      const reason = failure.declineCode ?? failure.code ?? failure.type;
      if (outcome === 'declined') {
        await this.payments.markFailedExternally(paymentId, reason, failure.message, failure.paymentIntentId);
        return { ok: false, error: { code: 'verification-failed', detail: `Stripe declined the payment: ${failure.message} (${reason})` }, final: true };
      }
      // This call's answer is lost, or says nothing of an earlier call's charge: the PaymentIntent, if any, decides.
      const found = await this.findIntent(challenge.id);
      if (found) {
        const verdict = await this.outcomes.apply({ id: paymentId, challengeId: challenge.id }, found, 'settle', payload.spt);
        if (verdict.kind === 'succeeded') return { ok: true, reference: found.id, payer: payload.spt };
        if (verdict.kind === 'failed') return { ok: false, error: { code: verdict.problem, detail: verdict.message }, final: true };
      } else if (outcome === 'refused') {
        await this.payments.markFailedExternally(paymentId, reason, failure.message, failure.paymentIntentId);
        return { ok: false, error: { code: 'verification-failed', detail: `Stripe refused the payment: ${failure.message} (${reason})` }, final: true };
      }
      // The charge may or may not exist: the payment stays verified until a retry, Stripe's webhook or the sweep tells.
      this.logger.warn(
        `PaymentIntent for challenge ${challenge.id}: outcome unknown (${failure.type}${failure.statusCode ? ` ${failure.statusCode}` : ''} ${reason})`,
      );
      return {
        ok: false,
        error: {
          code: 'internal-payment-error',
          detail: `Stripe's answer did not tell whether the payment was made (${reason}); send the same credential again`,
        },
        final: false,
      };
    }

    if (intent.status === 'succeeded') {
      await this.payments.confirm(paymentId, intent.id, { amountReceived: String(intent.amount_received), currency: intent.currency });
      return { ok: true, reference: intent.id, payer: payload.spt };
    }
    const action = intent.status === 'requires_action';
    const detail = action
      ? `PaymentIntent ${intent.id} requires customer action (${intent.next_action?.type ?? 'unknown'}); a machine payment cannot complete it`
      : `PaymentIntent ${intent.id} ended in status ${intent.status}`;
    await this.payments.markFailedExternally(paymentId, intent.status, detail, intent.id);
    const error: MppError = { code: action ? 'payment-action-required' : 'verification-failed', detail };
    return { ok: false, error, final: true };
  }

  /** The PaymentIntent made for this challenge, if Stripe's search shows one now; a failed lookup is no answer. */
  private async findIntent(challengeId: string): Promise<Stripe.PaymentIntent | undefined> {
    try {
      return intentThatCounts(await this.outcomes.searchFor(challengeId, { retry: false }));
    } catch (error) {
      this.logger.debug(`PaymentIntent lookup for challenge ${challengeId}: ${(error as Error).message}`);
      return undefined;
    }
  }

  private intentParams({ request, payload }: StripeChargeCredential, challengeId: string, merchantId: string | null): Stripe.PaymentIntentCreateParams {
    const params: Record<string, unknown> = {
      amount: Number(request.amount),
      currency: request.currency,
      confirm: true,
      automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
      metadata: {
        ...request.methodDetails.metadata,
        challenge_id: challengeId,
        ...(merchantId && { merchant_id: merchantId }),
        ...((payload.externalId ?? request.externalId) !== undefined && { external_id: payload.externalId ?? request.externalId }),
      },
      ...(request.description !== undefined && { description: request.description }),
    };
    // Shared Payment Tokens are a preview feature with no SDK types; where the token goes depends on the API version.
    if (this.settings().sptPlacement === 'payment_method_data') params.payment_method_data = { shared_payment_granted_token: payload.spt };
    else params.shared_payment_granted_token = payload.spt;
    return params as unknown as Stripe.PaymentIntentCreateParams;
  }

  private check(attempt: ChargeAttempt): { ok: true; value: StripeChargeCredential } | { ok: false; error: MppError } {
    const checked = checkStripeCharge(attempt.challenge, attempt.credential.payload);
    return checked.ok ? checked : { ok: false, error: checked.error };
  }

  private client(): Stripe {
    if (!this.stripe) throw new Error('Stripe is not configured');
    return this.stripe;
  }

  private settings(): StripeConfig {
    if (!this.config) throw new Error('Stripe is not configured');
    return this.config;
  }
}

function fail(detail: string): RailVerdict {
  return { ok: false, error: { code: 'verification-failed', detail } };
}

/** The facilitator's STRIPE_NETWORK_ID stands in for a request's missing methodDetails.networkId. */
export function withDefaultNetworkId(request: unknown, networkId: string | undefined): unknown {
  if (!networkId || typeof request !== 'object' || request === null) return request;
  const r = request as { methodDetails?: unknown };
  if (typeof r.methodDetails !== 'object' || r.methodDetails === null || 'networkId' in r.methodDetails) return request;
  return { ...r, methodDetails: { networkId, ...r.methodDetails } };
}
