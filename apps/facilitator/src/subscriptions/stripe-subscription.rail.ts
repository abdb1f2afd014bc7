import { randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import type Stripe from 'stripe';
import { periodBoundary, periodIndexAt, type Period } from '@mp/billing';
import {
  checkStripeSubscription,
  judgeSubscriptionInvoice,
  parseStripeSubscriptionRequest,
  STRIPE_METHOD,
  stripeRecurring,
  stripeSubscriptionIdempotencyKey,
  SUBSCRIPTION_INTENT,
  type MppError,
  type StripeInvoiceFacts,
  type StripeSubscriptionCredential,
} from '@mp/mpp';
import { canonicalJson, sha256Hex } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig, type StripeConfig } from '../config/facilitator.config';
import { withDefaultNetworkId } from '../mpp/charges/stripe-charge.rail';
import type { ChargeAttempt, ChargeRail, RailSettlement, RailVerdict, ReceiptFields, RequestCheck } from '../mpp/charges/charge-rail';
import type { NewPayment } from '../settlement/chain-payments.repository';
import { isStripeUnavailable, STRIPE_CLIENT, stripeCallOutcome, stripeFailure } from '../stripe/stripe.client';
import { Clock } from '../x402/clock';
import { planOf } from './evm-subscription.rail';
import type { ChargePreparation, SubscriptionRail } from './subscription-rail';
import { StripeSubscriptions, type PaidInvoice, type StripeSubscriptionLink } from './stripe-subscriptions.repository';
import { Subscriptions, type SubscriptionRecord } from './subscriptions.repository';

/** Stripe subscriptions are recorded with this network, as Stripe charges are; the asset is the currency, the payer the Customer. */
const STRIPE_NETWORK = 'stripe';

/** The Stripe events this profile acts on; every other one (invoice.created included) is ignored. */
export const STRIPE_SUBSCRIPTION_EVENTS = ['invoice.paid', 'invoice.payment_failed', 'customer.subscription.deleted'] as const;

type StripeInvoice = StripeInvoiceFacts & {
  status_transitions?: { paid_at: number | null } | null;
  attempt_count?: number;
};

/**
 * Method `stripe`, intent `subscription` (draft-stripe-subscription-00, recurring-and-streaming.md §1.3).
 *
 * Activation (ChargeRail): the PaymentMethod checked, then Customer (or the payer's), attach, Price (reused by
 * lookup_key), Subscription (charge_automatically, error_if_incomplete, no prorations) under a key over the credential,
 * its first invoice validated, and everything written in one transaction with the period 0 payment confirmed.
 *
 * Renewals (SubscriptionRail): Stripe Billing collects each period by itself; a period counts only once a validated
 * paid invoice is recorded (once per invoice and per period). The ledger's `charge` for (period, attempt) records a
 * payment that the period's invoice confirms, now if it is paid already, or when invoice.paid arrives; a failed
 * collection fails the attempt, and a retry attempt asks Stripe to pay the open invoice again. An invoice paid after
 * its period closed is recorded as late and never counts (its money is the merchant's to refund: runbook).
 */
@Injectable()
export class StripeSubscriptionRail implements ChargeRail, SubscriptionRail {
  readonly method = STRIPE_METHOD;
  readonly intent = SUBSCRIPTION_INTENT;
  private readonly logger = new Logger(StripeSubscriptionRail.name);
  private readonly config?: StripeConfig;

  constructor(
    @Inject(FACILITATOR_CONFIG) facilitatorConfig: FacilitatorConfig,
    @Optional() @Inject(STRIPE_CLIENT) private readonly stripe: Stripe | undefined,
    private readonly subscriptions: Subscriptions,
    private readonly records: StripeSubscriptions,
    private readonly clock: Clock,
  ) {
    this.config = facilitatorConfig.stripe;
  }

  normalize(request: unknown): RequestCheck {
    if (!this.config || !this.stripe) return { ok: false, problems: ['method: stripe is not configured on this facilitator (set STRIPE_SECRET_KEY)'] };
    const parsed = parseStripeSubscriptionRequest(withDefaultNetworkId(request, this.config.networkId));
    if (!parsed.ok) return { ok: false, problems: [`request.${parsed.error.detail}`] };
    return { ok: true, request: parsed.value };
  }

  /** The checks before any Stripe call that moves money: the credential's shape, then the PaymentMethod (a read). */
  async verify(attempt: ChargeAttempt): Promise<RailVerdict> {
    const checked = this.check(attempt);
    if (!checked.ok) return checked;
    const problem = await this.checkPaymentMethod(checked.value);
    return problem ? { ok: false, error: problem } : { ok: true, payer: checked.value.payload.customer ?? checked.value.payload.paymentMethod };
  }

  async settle(attempt: ChargeAttempt): Promise<RailSettlement> {
    const checked = this.check(attempt);
    if (!checked.ok) return { ...checked, final: true };
    const { challenge, merchantId } = attempt;
    const scope = merchantId ?? '';
    const known = await this.subscriptions.findByChallenge(scope, challenge.id);
    if (known) return this.activated(known);

    const credential = checked.value;
    const problem = await this.checkPaymentMethod(credential);
    if (problem) return { ok: false, error: problem, final: true };
    try {
      const started = await this.start(credential, challenge.id, merchantId);
      if (!started.ok) return started;
      const { customer, price, subscription, invoice, judged } = started;
      const id = randomBytes(16).toString('base64url');
      const anchor = new Date(invoice.lines.data[0]!.period.start * 1000);
      const { request, period } = credential;
      const paidInvoice: PaidInvoice = {
        invoiceId: invoice.id,
        periodIndex: 0,
        paymentIntentId: judged.paymentIntent,
        amount: BigInt(request.amount),
        currency: request.currency,
        paidAt: paidAt(invoice, this.clock),
      };
      const planId = planOf(challenge.opaque);
      const payment = this.newPayment({ id, challengeId: challenge.id, merchantId, customer, amount: request.amount, currency: request.currency }, 0, 0, {
        networkId: request.methodDetails.networkId,
        stripeSubscription: subscription.id,
        payloadHash: sha256Hex(canonicalJson({ challengeId: challenge.id, payload: credential.payload })),
      });
      payment.leadingEvents = [
        {
          type: 'subscription.activated',
          data: {
            subscriptionId: id,
            method: STRIPE_METHOD,
            planId,
            payer: customer,
            payTo: request.methodDetails.networkId,
            network: STRIPE_NETWORK,
            asset: request.currency,
            amount: request.amount,
            periodUnit: period.unit,
            periodCount: period.count,
            anchor: anchor.toISOString(),
            expiresAt: null,
            authorizedPeriods: null,
            challengeId: challenge.id,
            ...(request.externalId !== undefined && { externalId: request.externalId }),
            stripeCustomer: customer,
            stripeSubscription: subscription.id,
          },
        },
      ];
      await this.records.activate(
        {
          id,
          scope,
          merchantId,
          challengeId: challenge.id,
          method: STRIPE_METHOD,
          network: STRIPE_NETWORK,
          asset: request.currency,
          payer: customer,
          payTo: request.methodDetails.networkId,
          amount: BigInt(request.amount),
          periodUnit: period.unit,
          periodCount: period.count,
          anchor,
          expiresAt: null,
          authorizedPeriods: null,
          planId,
          externalId: request.externalId ?? null,
        },
        { customerId: customer, stripeSubscriptionId: subscription.id, priceId: price },
        paidInvoice,
        payment,
      );
      // ours, or a concurrent settlement's of the same credential (same idempotency key: the same Stripe subscription)
      const stored = await this.subscriptions.findByChallenge(scope, challenge.id);
      if (!stored) throw new Error(`the subscription of challenge ${challenge.id} is missing after its activation`);
      return this.activated(stored);
    } catch (error) {
      const failure = stripeFailure(error);
      if (!failure) throw error;
      if (stripeCallOutcome(failure) === 'unknown')
        return {
          ok: false,
          error: {
            code: 'internal-payment-error',
            detail: `Stripe's answer did not tell whether the subscription was made (${failure.message}); send the same credential again`,
          },
          final: false,
        };
      return { ok: false, error: { code: 'verification-failed', detail: `Stripe refused the subscription: ${failure.message}` }, final: true };
    }
  }

  async receiptFields(attempt: ChargeAttempt): Promise<ReceiptFields | undefined> {
    const subscription = await this.subscriptions.findByChallenge(attempt.merchantId ?? '', attempt.challenge.id);
    if (!subscription) return undefined;
    const link = await this.records.link(subscription.id);
    return {
      subscriptionId: subscription.id,
      ...(link && { stripeSubscription: link.stripeSubscriptionId }),
      ...(subscription.externalId !== null && { externalId: subscription.externalId }),
    };
  }

  /** A renewal payment for (period, attempt): nothing is sent anywhere; the period's invoice decides it (startCharge). */
  async prepareCharge(subscription: SubscriptionRecord, periodIndex: number, attempt: number): Promise<ChargePreparation> {
    const link = await this.records.link(subscription.id);
    if (!link || !this.stripe)
      return { ok: false, reason: 'rail_error', message: `subscription ${subscription.id} has no Stripe subscription here (or Stripe is not configured)` };
    return {
      ok: true,
      payment: this.newPayment(
        {
          id: subscription.id,
          challengeId: subscription.challengeId,
          merchantId: subscription.merchantId,
          customer: link.customerId,
          amount: subscription.amount.toString(),
          currency: subscription.asset,
        },
        periodIndex,
        attempt,
        {
          networkId: subscription.payTo,
          stripeSubscription: link.stripeSubscriptionId,
          payloadHash: sha256Hex(canonicalJson({ subscriptionId: subscription.id, periodIndex, attempt })),
        },
      ),
    };
  }

  /**
   * The recorded charge meets the period's invoice: confirmed if a validated paid invoice is recorded (or Stripe shows
   * it paid now); a retry attempt asks Stripe to pay the open invoice; a first attempt whose collection failed already
   * fails; an invoice not collected yet leaves the charge in flight for invoice.paid / invoice.payment_failed. Older
   * open invoices are voided first: a new period has started, so they can never count.
   */
  async startCharge(paymentId: string): Promise<void> {
    const charge = await this.records.chargeWithSubscription(paymentId);
    if (!charge || charge.state !== 'verified') return;
    const { subscription, link } = charge;
    const invoices = await this.invoicesOf(link);
    await this.voidOlderThan(subscription, invoices, charge.periodIndex);
    const counted = await this.records.countedInvoice(subscription.id, charge.periodIndex);
    if (counted) {
      await this.records.confirmWith(paymentId, counted);
      return;
    }
    // listed with its payments expanded: what Stripe shows now, read once for this charge
    let invoice = invoices.find((i) => this.periodOf(subscription, i) === charge.periodIndex);
    if (!invoice) return;
    if (invoice.status === 'paid') {
      await this.recordPaid(subscription, link, invoice);
      return;
    }
    if (invoice.status === 'void' || invoice.status === 'uncollectible') {
      await this.records.fail(paymentId, 'invoice_closed', `invoice ${invoice.id} of period ${charge.periodIndex} is ${invoice.status}`);
      return;
    }
    if (invoice.status !== 'open') return;
    if (charge.attempt === 0) {
      if ((invoice.attempt_count ?? 0) > 0)
        await this.records.fail(paymentId, 'invoice_payment_failed', `Stripe could not collect invoice ${invoice.id} of period ${charge.periodIndex}`);
      return;
    }
    // a retry the ledger's dunning asked for: Stripe's own retries are off, so this is the only one
    try {
      invoice = (await this.client().invoices.pay(invoice.id, {}, { idempotencyKey: `mpp_sub_pay_${paymentId}` })) as unknown as StripeInvoice;
    } catch (error) {
      const failure = stripeFailure(error);
      if (!failure || isStripeUnavailable(failure)) throw error;
      if (stripeCallOutcome(failure) === 'declined') {
        await this.records.fail(
          paymentId,
          failure.declineCode ?? failure.code ?? 'card_declined',
          `Stripe could not collect invoice ${invoice.id}: ${failure.message}`,
        );
        return;
      }
      // refused (already paid meanwhile, voided): what the invoice is now decides
      invoice = await this.retrieve(invoice.id);
      if (invoice.status !== 'paid') {
        await this.records.fail(paymentId, failure.code ?? 'invoice_unexpected_status', `invoice ${invoice.id} could not be paid: ${failure.message}`);
        return;
      }
    }
    if (invoice.status === 'paid') await this.recordPaid(subscription, link, await this.retrieve(invoice.id));
  }

  /** Period end: Stripe stops renewing when the current period ends; immediately (or nothing paid is left): deleted now. */
  async cancel(subscription: SubscriptionRecord, command: { commandId: string; at: 'period_end' | 'immediately'; effectiveAt: Date }): Promise<void> {
    const link = await this.records.link(subscription.id);
    if (!link) return;
    await this.records.markCancelRequested(subscription.id, new Date(this.clock.nowMs()));
    const current = await this.client().subscriptions.retrieve(link.stripeSubscriptionId);
    if (current.status === 'canceled' || current.status === 'incomplete_expired') return;
    if (command.at === 'immediately' || command.effectiveAt.getTime() <= this.clock.nowMs()) {
      await this.client().subscriptions.cancel(link.stripeSubscriptionId, {}, { idempotencyKey: `mpp_sub_cancel_${command.commandId}` });
    } else {
      await this.client().subscriptions.update(
        link.stripeSubscriptionId,
        { cancel_at_period_end: true },
        { idempotencyKey: `mpp_sub_cancel_${command.commandId}` },
      );
    }
  }

  /**
   * A verified Stripe event for a subscription of ours. The event is only a cue: the invoice is read again from Stripe
   * (expanded with its payments), so a reordered or duplicate delivery acts on what is true now. False: not ours.
   */
  async applyEvent(event: Stripe.Event): Promise<boolean> {
    if (!(STRIPE_SUBSCRIPTION_EVENTS as readonly string[]).includes(event.type)) return false;
    if (event.type === 'customer.subscription.deleted') return this.deleted(event.data.object);
    const snapshot = event.data.object as unknown as StripeInvoice;
    const stripeSubscription = idOf(snapshot.parent?.subscription_details?.subscription);
    const ours = stripeSubscription && (await this.records.ofStripe(stripeSubscription));
    // not a subscription invoice of ours, or the activation writing it has not committed (it records period 0 itself)
    if (!ours) return false;
    const { subscription, link } = ours;
    const invoice = await this.retrieve(snapshot.id);
    if (event.type === 'invoice.paid') {
      await this.recordPaid(subscription, link, invoice, event.id);
      return true;
    }
    // invoice.payment_failed: the attempt in flight for its period fails, unless the invoice is paid by now
    const periodIndex = this.periodOf(subscription, invoice);
    if (periodIndex === undefined || invoice.status === 'paid') return true;
    const inFlight = await this.records.inFlight(subscription.id, periodIndex);
    if (inFlight) await this.records.fail(inFlight.id, 'invoice_payment_failed', `Stripe could not collect invoice ${invoice.id} of period ${periodIndex}`);
    return true;
  }

  /** Deleted without our cancel command (the merchant's dashboard, Stripe ending it): the payer's grant is gone. */
  private async deleted(object: Stripe.Subscription): Promise<boolean> {
    const link = await this.records.linkOfStripe(object.id);
    if (!link) return false;
    if (link.cancelRequestedAt) return true;
    const at = new Date((object.ended_at ?? object.canceled_at ?? Math.floor(this.clock.nowMs() / 1000)) * 1000);
    await this.subscriptions.revoke(
      link.subscriptionId,
      { reason: 'stripe_subscription_deleted', message: `Stripe subscription ${object.id} was deleted outside our cancel command`, at },
      new Date(this.clock.nowMs()),
    );
    return true;
  }

  /** A paid invoice validated and recorded once: counted for its period, or late when its period had closed. */
  private async recordPaid(subscription: SubscriptionRecord, link: StripeSubscriptionLink, invoice: StripeInvoice, eventId?: string): Promise<void> {
    const judged = judgeSubscriptionInvoice(invoice, {
      subscription: link.stripeSubscriptionId,
      customer: link.customerId,
      amount: subscription.amount.toString(),
      currency: subscription.asset,
      anchor: subscription.anchor,
      period: periodOf(subscription),
    });
    if (!judged.ok) {
      this.logger.warn(`subscription ${subscription.id}: ${judged.detail} (${judged.reason}); not counted`);
      return;
    }
    const paid = paidAt(invoice, this.clock);
    const end = periodBoundary(subscription.anchor, periodOf(subscription), judged.periodIndex + 1);
    const late = paid.getTime() >= end.getTime();
    const recorded = await this.records.recordPaid(
      subscription.id,
      {
        invoiceId: invoice.id,
        periodIndex: judged.periodIndex,
        paymentIntentId: judged.paymentIntent,
        amount: subscription.amount,
        currency: subscription.asset,
        paidAt: paid,
        ...(eventId && { eventId }),
      },
      late,
    );
    if (recorded.kind === 'late')
      this.logger.warn(
        `subscription ${subscription.id}: invoice ${invoice.id} paid ${paid.toISOString()}, after period ${judged.periodIndex} closed; never counted`,
      );
  }

  /** Open invoices of periods before `periodIndex`: voided, so nothing can collect them after their period. */
  private async voidOlderThan(subscription: SubscriptionRecord, invoices: StripeInvoice[], periodIndex: number): Promise<void> {
    for (const invoice of invoices) {
      const index = this.periodOf(subscription, invoice);
      if (invoice.status !== 'open' || index === undefined || index >= periodIndex) continue;
      try {
        await this.client().invoices.voidInvoice(invoice.id, {}, { idempotencyKey: `mpp_sub_void_${invoice.id}` });
      } catch (error) {
        const failure = stripeFailure(error);
        if (!failure || isStripeUnavailable(failure)) throw error;
        // paid or closed meanwhile: invoice.paid (late) or nothing
        this.logger.warn(`subscription ${subscription.id}: invoice ${invoice.id} could not be voided: ${failure.message}`);
      }
    }
  }

  /** The period an invoice's single line bills, when it starts exactly on a boundary. */
  private periodOf(subscription: SubscriptionRecord, invoice: StripeInvoice): number | undefined {
    const line = invoice.lines.data.length === 1 ? invoice.lines.data[0] : undefined;
    if (!line) return undefined;
    const period = periodOf(subscription);
    const start = new Date(line.period.start * 1000);
    const index = periodIndexAt(subscription.anchor, period, start);
    return index >= 0 && periodBoundary(subscription.anchor, period, index).getTime() === start.getTime() ? index : undefined;
  }

  /** The subscription's invoices, newest first, each with its payments (what `judgeSubscriptionInvoice` reads). */
  private async invoicesOf(link: StripeSubscriptionLink): Promise<StripeInvoice[]> {
    const page = await this.client().invoices.list({ subscription: link.stripeSubscriptionId, limit: 100, expand: ['data.payments'] });
    return page.data as unknown as StripeInvoice[];
  }

  private async retrieve(id: string): Promise<StripeInvoice> {
    return (await this.client().invoices.retrieve(id, { expand: ['payments'] })) as unknown as StripeInvoice;
  }

  /** Customer, attach, Price, Subscription; then its first invoice, validated. A refusal is final: 402 and a fresh challenge. */
  private async start(
    credential: StripeSubscriptionCredential,
    challengeId: string,
    merchantId: string | null,
  ): Promise<
    | {
        ok: true;
        customer: string;
        price: string;
        subscription: Stripe.Subscription;
        invoice: StripeInvoice;
        judged: { periodIndex: number; paymentIntent: string };
      }
    | { ok: false; error: MppError; final: true }
  > {
    const { request, payload } = credential;
    const stripe = this.client();
    // not `challenge_id`: that key makes a PaymentIntent an MPP charge's to the charge webhook and the Stripe sweep
    const metadata = { ...request.methodDetails.metadata, mpp_subscription_challenge: challengeId, ...(merchantId && { merchant_id: merchantId }) };
    const customer =
      payload.customer ??
      (await stripe.customers.create({ metadata }, { idempotencyKey: `mpp_sub_customer_${sha256Hex(canonicalJson([challengeId, payload.paymentMethod]))}` }))
        .id;
    const attached = await stripe.paymentMethods.attach(
      payload.paymentMethod,
      { customer },
      { idempotencyKey: `mpp_sub_attach_${sha256Hex(canonicalJson([challengeId, customer, payload.paymentMethod]))}` },
    );
    const price = await this.price(credential);
    let subscription: Stripe.Subscription;
    try {
      subscription = await stripe.subscriptions.create(
        {
          customer,
          items: [{ price, quantity: 1 }],
          default_payment_method: attached.id,
          collection_method: 'charge_automatically',
          payment_behavior: 'error_if_incomplete',
          proration_behavior: 'none',
          metadata,
          ...(request.description !== undefined && { description: request.description }),
        },
        {
          idempotencyKey: stripeSubscriptionIdempotencyKey({ challengeId, customer, paymentMethod: payload.paymentMethod, request }),
        },
      );
    } catch (error) {
      const failure = stripeFailure(error);
      // error_if_incomplete: the first invoice could not be paid, and Stripe made nothing
      if (failure && stripeCallOutcome(failure) === 'declined')
        return {
          ok: false,
          error: {
            code: 'verification-failed',
            detail: `Stripe could not collect the first period: ${failure.message} (${failure.declineCode ?? failure.code ?? 'declined'})`,
          },
          final: true,
        };
      throw error;
    }
    const latest = idOf(subscription.latest_invoice as string | { id: string } | null);
    const invoice = latest ? await this.retrieve(latest) : undefined;
    const judged =
      invoice &&
      judgeSubscriptionInvoice(invoice, {
        subscription: subscription.id,
        customer,
        amount: request.amount,
        currency: request.currency,
        anchor: new Date((invoice.lines.data[0]?.period.start ?? 0) * 1000),
        period: credential.period,
      });
    if (!invoice || !judged?.ok || judged.periodIndex !== 0) {
      // not paid at once (processing, an action needed) or not what was offered: no continuation, the subscription ends
      const detail = judged && !judged.ok ? judged.detail : `subscription ${subscription.id} has no paid first invoice`;
      await stripe.subscriptions.cancel(subscription.id, {}, { idempotencyKey: `mpp_sub_abandon_${subscription.id}` }).catch((e: unknown) => {
        this.logger.error(`subscription ${subscription.id} could not be canceled after a refused activation: ${(e as Error).message}`);
      });
      return { ok: false, error: { code: 'verification-failed', detail: `the first invoice does not pay the first period: ${detail}` }, final: true };
    }
    return { ok: true, customer, price, subscription, invoice, judged };
  }

  /** The offer's Price, reused by lookup_key (one per currency, amount and period), or made. */
  private async price({ request }: StripeSubscriptionCredential): Promise<string> {
    const recurring = stripeRecurring(request);
    const lookupKey = `mpp_sub_${request.currency}_${request.amount}_${recurring.interval_count}_${recurring.interval}`;
    const found = await this.client().prices.list({ lookup_keys: [lookupKey], active: true, limit: 1 });
    if (found.data[0]) return found.data[0].id;
    const created = await this.client().prices.create(
      {
        currency: request.currency,
        unit_amount: Number(request.amount),
        recurring,
        product_data: {
          name: request.description ?? `Subscription: ${request.amount} ${request.currency} every ${recurring.interval_count} ${recurring.interval}`,
        },
        lookup_key: lookupKey,
      },
      { idempotencyKey: `mpp_price_${lookupKey}` },
    );
    return created.id;
  }

  /** The PaymentMethod exists, pays synchronously off session (a type the offer allows), and is unattached or the payer's. */
  private async checkPaymentMethod({ request, payload }: StripeSubscriptionCredential): Promise<MppError | undefined> {
    let paymentMethod: Stripe.PaymentMethod;
    try {
      paymentMethod = await this.client().paymentMethods.retrieve(payload.paymentMethod);
    } catch (error) {
      const failure = stripeFailure(error);
      if (!failure) throw error;
      if (isStripeUnavailable(failure)) return { code: 'internal-payment-error', detail: `Stripe is unavailable: ${failure.message}` };
      return { code: 'verification-failed', detail: `payload.paymentMethod: ${failure.message}` };
    }
    if (!(request.methodDetails.paymentMethodTypes as string[]).includes(paymentMethod.type))
      return {
        code: 'verification-failed',
        detail: `payload.paymentMethod is a ${paymentMethod.type}, the offer accepts ${request.methodDetails.paymentMethodTypes.join(', ')}`,
      };
    const owner = idOf(paymentMethod.customer as string | { id: string } | null);
    if (owner && owner !== payload.customer)
      return { code: 'verification-failed', detail: 'payload.paymentMethod belongs to another customer (send that customer as payload.customer)' };
    return undefined;
  }

  private async activated(subscription: SubscriptionRecord): Promise<RailSettlement> {
    const invoice = await this.records.countedInvoice(subscription.id, 0);
    const link = await this.records.link(subscription.id);
    if (!invoice || !link) throw new Error(`stripe subscription ${subscription.id} has no recorded first invoice`);
    return {
      ok: true,
      reference: invoice.invoiceId,
      payer: subscription.payer,
      receipt: {
        subscriptionId: subscription.id,
        stripeSubscription: link.stripeSubscriptionId,
        ...(subscription.externalId !== null && { externalId: subscription.externalId }),
      },
    };
  }

  private newPayment(
    s: { id: string; challengeId: string; merchantId: string | null; customer: string; amount: string; currency: string },
    periodIndex: number,
    attempt: number,
    extra: { networkId: string; stripeSubscription: string; payloadHash: string },
  ): NewPayment {
    return {
      rail: 'stripe',
      network: STRIPE_NETWORK,
      asset: s.currency,
      payer: s.customer,
      // one payment per attempt of a period of this Stripe subscription
      nonce: `${extra.stripeSubscription}:${periodIndex}:${attempt}`,
      payTo: extra.networkId,
      amount: BigInt(s.amount),
      validAfter: 0n,
      validBefore: 0n,
      scheme: STRIPE_METHOD,
      payloadHash: extra.payloadHash,
      settleTo: '',
      settleData: '',
      settleGas: 0n,
      merchantId: s.merchantId,
      origin: { protocol: 'mpp', challengeId: s.challengeId },
      subscription: { id: s.id, periodIndex, attempt },
    };
  }

  private check(attempt: ChargeAttempt): { ok: true; value: StripeSubscriptionCredential } | { ok: false; error: MppError } {
    const checked = checkStripeSubscription(attempt.challenge, attempt.credential.payload);
    return checked.ok ? checked : { ok: false, error: checked.error };
  }

  private client(): Stripe {
    if (!this.stripe) throw new Error('Stripe is not configured');
    return this.stripe;
  }
}

function periodOf(subscription: SubscriptionRecord): Period {
  return { unit: subscription.periodUnit, count: subscription.periodCount };
}

/** When Stripe says the invoice was paid; now, if it does not say. */
function paidAt(invoice: StripeInvoice, clock: Clock): Date {
  const at = invoice.status_transitions?.paid_at;
  return new Date(at ? at * 1000 : clock.nowMs());
}

function idOf(value: string | { id: string } | null | undefined): string | undefined {
  return typeof value === 'string' ? value : (value?.id ?? undefined);
}
