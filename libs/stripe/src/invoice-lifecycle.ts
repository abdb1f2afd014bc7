import type { ApiContext } from './api';
import type { Customer, Invoice, InvoicePayment, Subscription } from './billing-types';
import { findCustomer } from './customers';
import { invalidRequest } from './errors';
import { changedAttributes, type RequestInfo } from './events';
import { newId } from './ids';
import { attemptConfirmation, createCustomerPaymentIntent, type ConfirmationAttempt } from './payment-intents';
import { findProduct } from './products';

/**
 * The life of a subscription invoice: made as a draft (by the subscription for its first period, by a renewal in
 * billing-cycle.ts), finalized, then collected through a PaymentIntent on the customer's saved payment method, so
 * charges, balance transactions, fees and refunds work as for one-off payments; or voided.
 *
 * Stripe's automatic retries (Smart Retries) are off: a failed collection leaves the invoice `open` with
 * `next_payment_attempt: null` and is never tried again unless someone calls `pay`. The facilitator runs its own dunning.
 */

export const NO_PAYMENT_METHOD = 'This customer has no attached payment source or default payment method. Please consider adding a default payment method.';

/** Renewal invoices are drafts for about an hour before Stripe finalizes and collects them. */
export const DRAFT_SECONDS = 3600;

/**
 * A draft invoice for one period of the subscription's single item. `period` is the service period on the line;
 * the invoice's own `period_start`/`period_end` are the window before it (equal at creation), as Stripe sets them.
 */
export function createSubscriptionInvoice(
  context: ApiContext,
  info: RequestInfo,
  subscription: Subscription,
  customer: Customer,
  bill: {
    /** made in advance when the subscription must name its latest invoice before the invoice exists */
    id?: string;
    reason: Invoice['billing_reason'];
    period: { start: number; end: number };
    window: { start: number; end: number };
    finalizesAt: number | null;
  },
): Invoice {
  const item = subscription.items.data[0];
  const amount = item.price.unit_amount * item.quantity;
  const id = bill.id ?? newId('in');
  const product = findProduct(context, item.price.product);
  const invoice = context.store.invoices.add({
    id,
    object: 'invoice',
    amount_due: amount,
    amount_overpaid: 0,
    amount_paid: 0,
    amount_remaining: amount,
    attempt_count: 0,
    attempted: false,
    auto_advance: true,
    automatically_finalizes_at: bill.finalizesAt,
    billing_reason: bill.reason,
    collection_method: 'charge_automatically',
    created: context.nowSeconds(),
    currency: item.price.currency,
    customer: customer.id,
    customer_email: customer.email,
    customer_name: customer.name,
    default_payment_method: null,
    description: null,
    discounts: [],
    due_date: null,
    effective_at: null,
    ending_balance: null,
    issuer: { type: 'self' },
    last_finalization_error: null,
    lines: {
      object: 'list',
      data: [
        {
          id: newId('il'),
          object: 'line_item',
          amount,
          currency: item.price.currency,
          description: `${item.quantity} × ${product.name}`,
          discount_amounts: [],
          discountable: true,
          discounts: [],
          invoice: id,
          livemode: false,
          metadata: {},
          parent: {
            type: 'subscription_item_details',
            invoice_item_details: null,
            subscription_item_details: {
              invoice_item: null,
              proration: false,
              proration_details: { credited_items: null },
              subscription: subscription.id,
              subscription_item: item.id,
            },
          },
          period: { ...bill.period },
          pretax_credit_amounts: [],
          pricing: {
            type: 'price_details',
            price_details: { price: item.price.id, product: item.price.product },
            unit_amount_decimal: item.price.unit_amount_decimal,
          },
          quantity: item.quantity,
          subtotal: amount,
          taxes: [],
        },
      ],
      has_more: false,
      total_count: 1,
      url: `/v1/invoices/${id}/lines`,
    },
    livemode: false,
    metadata: {},
    next_payment_attempt: bill.finalizesAt,
    number: null,
    parent: {
      type: 'subscription_details',
      quote_details: null,
      subscription_details: { metadata: { ...subscription.metadata }, subscription: subscription.id },
    },
    period_end: bill.window.end,
    period_start: bill.window.start,
    starting_balance: 0,
    status: 'draft',
    status_transitions: { finalized_at: null, marked_uncollectible_at: null, paid_at: null, voided_at: null },
    subtotal: amount,
    subtotal_excluding_tax: amount,
    test_clock: customer.test_clock,
    total: amount,
    total_discount_amounts: [],
    total_excluding_tax: amount,
    total_pretax_credit_amounts: [],
    total_taxes: [],
  });
  context.events.emit('invoice.created', invoice, info);
  return invoice;
}

/** Draft to open, numbered with the customer's prefix and sequence. */
export function finalizeInvoice(context: ApiContext, info: RequestInfo, invoice: Invoice): void {
  const customer = findCustomer(context, invoice.customer);
  const now = context.nowSeconds();
  Object.assign(invoice, {
    status: 'open',
    number: `${customer.invoice_prefix}-${String(customer.next_invoice_sequence).padStart(4, '0')}`,
    effective_at: now,
    automatically_finalizes_at: null,
  });
  customer.next_invoice_sequence += 1;
  invoice.status_transitions.finalized_at = now;
  context.events.emit('invoice.finalized', invoice, info);
}

/**
 * One collection attempt with `paymentMethod` (the invoice's open PaymentIntent is reused, or one is made). Paid:
 * `invoice.paid`, `invoice.payment_succeeded`. Waiting for the customer to authenticate (only `onSession`, when the
 * subscription is made): `invoice.payment_action_required`. Otherwise, off session, an authentication request counts as
 * a decline: `invoice.payment_failed`. Then `invoice.updated`, and the subscription's status follows (`syncSubscriptionStatus`).
 */
export function collectInvoice(
  context: ApiContext,
  info: RequestInfo,
  invoice: Invoice,
  paymentMethod: string | null,
  { onSession = false } = {},
): ConfirmationAttempt {
  const before = structuredClone(invoice);
  const open = paymentsOf(context, invoice).find((payment) => payment.status === 'open');
  const paymentIntent = open
    ? context.store.paymentIntents.get(open.payment.payment_intent)!
    : createCustomerPaymentIntent(context, info, {
        amount: invoice.amount_due,
        currency: invoice.currency,
        customer: invoice.customer,
        description: invoice.billing_reason === 'subscription_create' ? 'Subscription creation' : 'Subscription update',
        paymentMethod,
      });
  const payment = open ?? addInvoicePayment(context, invoice, paymentIntent.id);
  invoice.attempt_count += 1;
  invoice.attempted = true;
  invoice.next_payment_attempt = null;

  const attempt: ConfirmationAttempt = paymentMethod
    ? attemptConfirmation(context, info, paymentIntent, paymentMethod, !onSession)
    : { kind: 'declined', error: invalidRequest(NO_PAYMENT_METHOD) };
  if (attempt.kind === 'succeeded') {
    markPaid(context, info, invoice, payment);
    return attempt;
  }
  context.events.emit(attempt.kind === 'requires_action' ? 'invoice.payment_action_required' : 'invoice.payment_failed', invoice, info);
  context.events.emit('invoice.updated', invoice, info, changedAttributes(before, invoice));
  syncSubscriptionStatus(context, info, invoice);
  return attempt;
}

/** The payment method a collection uses: the subscription's default, else the customer's invoice default. */
export function defaultPaymentMethodFor(context: ApiContext, invoice: Invoice): string | null {
  const subscription = context.store.subscriptions.get(invoice.parent.subscription_details.subscription);
  const customer = context.store.customers.get(invoice.customer);
  return subscription?.default_payment_method ?? customer?.invoice_settings.default_payment_method ?? null;
}

/**
 * A subscription follows its latest invoice: paid makes an `incomplete` or `past_due` one `active`; a failed renewal
 * makes an `active` one `past_due` (retries being off, it stays so until an invoice is paid or it is canceled).
 */
export function syncSubscriptionStatus(context: ApiContext, info: RequestInfo, invoice: Invoice): void {
  const subscription = context.store.subscriptions.get(invoice.parent.subscription_details.subscription);
  if (!subscription || subscription.latest_invoice !== invoice.id) return;
  const before = structuredClone(subscription);
  if (invoice.status === 'paid' && (subscription.status === 'past_due' || subscription.status === 'incomplete')) subscription.status = 'active';
  else if (invoice.status === 'open' && invoice.billing_reason === 'subscription_cycle' && subscription.status === 'active') subscription.status = 'past_due';
  else return;
  context.events.emit('customer.subscription.updated', subscription, info, changedAttributes(before, subscription));
}

export function markPaid(context: ApiContext, info: RequestInfo, invoice: Invoice, payment: InvoicePayment | null): Invoice {
  const now = context.nowSeconds();
  Object.assign(invoice, { status: 'paid', amount_paid: invoice.amount_due, amount_remaining: 0, auto_advance: false, next_payment_attempt: null });
  invoice.status_transitions.paid_at = now;
  if (payment) {
    Object.assign(payment, { status: 'paid', amount_paid: invoice.amount_due });
    payment.status_transitions.paid_at = now;
  }
  context.events.emit('invoice.paid', invoice, info);
  context.events.emit('invoice.payment_succeeded', invoice, info);
  syncSubscriptionStatus(context, info, invoice);
  return invoice;
}

function addInvoicePayment(context: ApiContext, invoice: Invoice, paymentIntent: string): InvoicePayment {
  return context.store.invoicePayments.add({
    id: newId('inpay'),
    object: 'invoice_payment',
    amount_paid: null,
    amount_requested: invoice.amount_due,
    created: context.nowSeconds(),
    currency: invoice.currency,
    invoice: invoice.id,
    is_default: true,
    livemode: false,
    payment: { type: 'payment_intent', payment_intent: paymentIntent },
    status: 'open',
    status_transitions: { canceled_at: null, paid_at: null },
  });
}

function paymentsOf(context: ApiContext, invoice: Invoice): InvoicePayment[] {
  return context.store.invoicePayments.withKey(invoice.id);
}

/** Open or uncollectible to void: its open PaymentIntent is canceled, so nothing can collect it any more. */
export function voidOpenInvoice(context: ApiContext, info: RequestInfo, invoice: Invoice): Invoice {
  const now = context.nowSeconds();
  for (const payment of paymentsOf(context, invoice).filter((entry) => entry.status === 'open')) {
    payment.status = 'canceled';
    payment.status_transitions.canceled_at = now;
    const paymentIntent = context.store.paymentIntents.get(payment.payment.payment_intent);
    if (paymentIntent && paymentIntent.status !== 'succeeded' && paymentIntent.status !== 'canceled') {
      Object.assign(paymentIntent, { status: 'canceled', canceled_at: now, cancellation_reason: 'void_invoice', next_action: null });
      context.events.emit('payment_intent.canceled', paymentIntent, info);
    }
  }
  Object.assign(invoice, { status: 'void', auto_advance: false, next_payment_attempt: null });
  invoice.status_transitions.voided_at = now;
  context.events.emit('invoice.voided', invoice, info);
  return invoice;
}
