import { Controller, HttpCode, Inject, Logger, Optional, Post, Req } from '@nestjs/common';
import type { Request } from 'express';
import type Stripe from 'stripe';
import { ApiDoc, ProblemError } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { StripeRefunds } from '../refunds/stripe-refunds';
import { STRIPE_SUBSCRIPTION_EVENTS, StripeSubscriptionRail } from '../subscriptions/stripe-subscription.rail';
import { STRIPE_CLIENT } from './stripe.client';
import { StripeEvents } from './stripe-events.repository';
import { StripeOutcomes } from './stripe-outcomes';
import { StripePayments } from './stripe-payments.repository';
import { STRIPE_WEBHOOKS_DOCS } from './stripe-webhooks.openapi';

/** Event types `handle` acts on whatever their object (payment_intent.* only when it names an MPP challenge). */
const HANDLED_EVENTS: ReadonlySet<string> = new Set(['refund.created', 'refund.updated', 'refund.failed', 'charge.refunded', ...STRIPE_SUBSCRIPTION_EVENTS]);

/**
 * Stripe's webhooks: verified on the raw body (Stripe-Signature, STRIPE_WEBHOOK_SECRET), handled once per event id.
 * They settle what a PaymentIntent call could not tell us (Stripe was unreachable, or the customer acted later), and
 * finish refunds Stripe answered `pending` (refund.updated, refund.failed, charge.refunded), and carry a stripe
 * subscription's renewals (invoice.paid, invoice.payment_failed) and its deletion (customer.subscription.deleted).
 */
@Controller('stripe')
export class StripeWebhooksController {
  private readonly logger = new Logger(StripeWebhooksController.name);

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    @Optional() @Inject(STRIPE_CLIENT) private readonly stripe: Stripe | undefined,
    private readonly events: StripeEvents,
    private readonly payments: StripePayments,
    private readonly outcomes: StripeOutcomes,
    private readonly refunds: StripeRefunds,
    private readonly subscriptions: StripeSubscriptionRail,
  ) {}

  @ApiDoc(STRIPE_WEBHOOKS_DOCS.receive)
  @Post('webhooks')
  @HttpCode(200)
  async receive(@Req() req: Request & { rawBody?: Buffer }): Promise<{ received: true; duplicate?: true }> {
    const secret = this.config.stripe?.webhookSecret;
    if (!secret || !this.stripe) throw new ProblemError('not_found', 'Stripe webhooks are not configured on this facilitator (set STRIPE_WEBHOOK_SECRET)');
    const signature = req.headers['stripe-signature'];
    if (typeof signature !== 'string' || !req.rawBody)
      throw new ProblemError('webhook_signature_invalid', 'a Stripe webhook needs a JSON body and a Stripe-Signature header');
    let event: Stripe.Event;
    try {
      event = this.stripe.webhooks.constructEvent(req.rawBody, signature, secret);
    } catch (error) {
      throw new ProblemError('webhook_signature_invalid', `the Stripe-Signature does not verify: ${(error as Error).message}`);
    }
    const object = event.data.object as { id?: string };
    const received = { id: event.id, type: event.type, objectId: object.id ?? null, created: event.created, data: event.data.object };
    // Most events are not ours to act on (a renewal brings about nine): recorded once, in one statement.
    if (!this.actsOn(event)) return this.record(received);
    // invoice.paid counts its invoice once (a unique key), however often it comes: no lookup of the event first, which a
    // renewal paid through Stripe would otherwise pay for on every delivery
    if (event.type !== 'invoice.paid' && (await this.events.seen(event.id))) return { received: true, duplicate: true };
    // Handle, then record: a crash in between means a redelivery handles it again, which the transitions tolerate.
    await this.handle(event);
    return this.record(received);
  }

  /** Records the event once; a second delivery of it is answered as the duplicate it is. */
  private async record(received: Parameters<StripeEvents['record']>[0]): Promise<{ received: true; duplicate?: true }> {
    return (await this.events.record(received)) ? { received: true } : { received: true, duplicate: true };
  }

  /** The events `handle` can change something for; every other one is only recorded. */
  private actsOn(event: Stripe.Event): boolean {
    if (HANDLED_EVENTS.has(event.type)) return true;
    if (event.type !== 'payment_intent.succeeded' && event.type !== 'payment_intent.payment_failed') return false;
    return Boolean(event.data.object.metadata?.challenge_id);
  }

  private async handle(event: Stripe.Event): Promise<void> {
    // A refund's snapshot decides it, as the refund sweep's lookup would (pending → executed or failed, once).
    if (event.type === 'refund.created' || event.type === 'refund.updated' || event.type === 'refund.failed') return this.refunds.applyEvent(event.data.object);
    if (event.type === 'charge.refunded') return this.refunds.applyCharge(event.data.object);
    // a subscription's invoices and its deletion (MPP subscription intent, Stripe profile); invoice.created is ignored
    if (await this.subscriptions.applyEvent(event)) return;
    if (event.type !== 'payment_intent.succeeded' && event.type !== 'payment_intent.payment_failed') return;
    const intent = event.data.object;
    const challengeId = intent.metadata?.challenge_id;
    if (!challengeId) return;
    const payment = await this.payments.findByChallenge('stripe', challengeId);
    if (!payment) {
      this.logger.warn(`Stripe event ${event.id}: PaymentIntent ${intent.id} names challenge ${challengeId}, which has no payment here`);
      return;
    }
    // The event's snapshot of the PaymentIntent decides, as the sweep's lookup would: a success confirms the payment
    // (correcting a failure answered earlier), a failure fails only a payment still unresolved. The challenge's
    // expiry does not matter here: Stripe's word on money already moved is recorded whenever it comes.
    const verdict = await this.outcomes.apply({ id: payment.id, challengeId }, intent, 'webhook');
    this.logger.log(`Stripe event ${event.id}: payment ${payment.id}, PaymentIntent ${intent.id}: ${verdict.kind}`);
  }
}
