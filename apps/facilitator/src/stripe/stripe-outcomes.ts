import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type Stripe from 'stripe';
import type { ProblemCode } from '@mp/mpp';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { MppClaims } from '../mpp/mpp-claims.repository';
import { STRIPE_CLIENT } from './stripe.client';
import { StripePayments } from './stripe-payments.repository';

/** What a PaymentIntent says about the payment it was made for. */
export type IntentVerdict =
  | { kind: 'succeeded' }
  | { kind: 'failed'; reason: string; message: string; problem: ProblemCode }
  /** processing (an asynchronous method), or not confirmed yet: Stripe will tell later */
  | { kind: 'pending' };

/** Judged by the PaymentIntent's status and its error's codes, never by a message. */
export function judgeIntent(intent: Pick<Stripe.PaymentIntent, 'id' | 'status' | 'last_payment_error' | 'next_action'>): IntentVerdict {
  switch (intent.status) {
    case 'succeeded':
      return { kind: 'succeeded' };
    case 'canceled':
      return { kind: 'failed', reason: 'canceled', message: `PaymentIntent ${intent.id} was canceled`, problem: 'verification-failed' };
    case 'requires_action':
      return {
        kind: 'failed',
        reason: 'requires_action',
        message: `PaymentIntent ${intent.id} requires customer action (${intent.next_action?.type ?? 'unknown'}); a machine payment cannot complete it`,
        problem: 'payment-action-required',
      };
    case 'requires_payment_method': {
      const error = intent.last_payment_error;
      if (!error) return { kind: 'pending' };
      return {
        kind: 'failed',
        reason: error.decline_code ?? error.code ?? 'payment_failed',
        message: error.message ?? `PaymentIntent ${intent.id} failed`,
        problem: 'verification-failed',
      };
    }
    default:
      return { kind: 'pending' };
  }
}

/** Of the PaymentIntents made for one challenge (one, but for a key reused after Stripe forgot it), the one that counts. */
export function intentThatCounts<T extends Pick<Stripe.PaymentIntent, 'status'>>(intents: T[]): T | undefined {
  return intents.find((intent) => intent.status === 'succeeded') ?? intents[0];
}

/** A payment settled through Stripe, as the outcome needs it. */
export interface StripePaymentRef {
  id: string;
  challengeId: string;
}

/** How far before the payment was recorded a PaymentIntent for it may have been created (clock skew), seconds. */
const CREATED_SLACK_SECONDS = 300;
/** The most PaymentIntents one list fallback reads before it gives up for this round. */
const LIST_CAP = 1_000;

/**
 * Stripe's word on a payment, from its PaymentIntent (looked up by `metadata.challenge_id`, which every PaymentIntent
 * we create carries), applied to the payment and its MPP claim. The settling request (after an unknown outcome),
 * Stripe's webhooks and the sweep all go through `apply`, so they agree; its transitions are compare-and-sets.
 */
@Injectable()
export class StripeOutcomes {
  private readonly logger = new Logger(StripeOutcomes.name);

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    @Optional() @Inject(STRIPE_CLIENT) private readonly stripe: Stripe | undefined,
    private readonly payments: StripePayments,
    private readonly claims: MppClaims,
  ) {}

  /**
   * The PaymentIntents made for a challenge, newest first, by Stripe's search. Search lags writes (usually under a
   * minute), so an empty answer proves nothing: `listFor` does. `retry: false`: one try (a caller is waiting).
   */
  async searchFor(challengeId: string, { retry = true } = {}): Promise<Stripe.PaymentIntent[]> {
    const found = await this.client().paymentIntents.search(
      { query: `metadata['challenge_id']:'${challengeId.replace(/['\\]/g, '\\$&')}'`, limit: 10 },
      { apiVersion: this.settings().apiVersion, ...(!retry && { maxNetworkRetries: 0 }) },
    );
    return found.data.filter((intent) => intent.metadata?.challenge_id === challengeId);
  }

  /**
   * The same by listing PaymentIntents created since the payment was recorded (lists read what was written):
   * undefined when more than LIST_CAP were created since, so absence could not be established this time.
   */
  async listFor(challengeId: string, since: Date): Promise<Stripe.PaymentIntent[] | undefined> {
    const found: Stripe.PaymentIntent[] = [];
    let read = 0;
    const created = { gte: Math.floor(since.getTime() / 1000) - CREATED_SLACK_SECONDS };
    for await (const intent of this.client().paymentIntents.list({ created, limit: 100 }, { apiVersion: this.settings().apiVersion })) {
      if (intent.metadata?.challenge_id === challengeId) found.push(intent);
      if (++read >= LIST_CAP) return undefined;
    }
    return found;
  }

  async retrieve(id: string): Promise<Stripe.PaymentIntent> {
    return this.client().paymentIntents.retrieve(id, {}, { apiVersion: this.settings().apiVersion });
  }

  /** Applies what the PaymentIntent says to the payment and its claim; returns the verdict. `payer`: the token. */
  async apply(payment: StripePaymentRef, intent: Stripe.PaymentIntent, via: 'settle' | 'webhook' | 'sweep', payer?: string): Promise<IntentVerdict> {
    const verdict = judgeIntent(intent);
    if (verdict.kind === 'succeeded') {
      const was = await this.payments.confirm(payment.id, intent.id, { amountReceived: String(intent.amount_received), currency: intent.currency, via });
      if (was === 'failed')
        this.logger.warn(`payment ${payment.id} was answered failed, but PaymentIntent ${intent.id} succeeded (${via}): corrected to confirmed`);
      await this.claims.resolveByReference(payment.challengeId, { state: 'settled', reference: intent.id, ...(payer && { payer }) });
    } else if (verdict.kind === 'failed') {
      await this.payments.markFailedExternally(payment.id, verdict.reason, verdict.message, intent.id);
      await this.claims.resolveByReference(payment.challengeId, { state: 'failed', reference: intent.id, problem: verdict.problem, detail: verdict.message });
    }
    return verdict;
  }

  /** No PaymentIntent was ever made for it (established by `listFor`): the payment fails, its hold is released. */
  async applyAbsent(payment: StripePaymentRef): Promise<void> {
    const message = 'Stripe has no PaymentIntent for this challenge: nothing was charged';
    if (await this.payments.markFailedExternally(payment.id, 'no_payment_intent', message)) this.logger.warn(`payment ${payment.id}: ${message}`);
    await this.claims.resolveByReference(payment.challengeId, { state: 'failed', problem: 'verification-failed', detail: message });
  }

  get configured(): boolean {
    return Boolean(this.stripe && this.config.stripe);
  }

  private client(): Stripe {
    if (!this.stripe) throw new Error('Stripe is not configured');
    return this.stripe;
  }

  private settings() {
    if (!this.config.stripe) throw new Error('Stripe is not configured');
    return this.config.stripe;
  }
}
