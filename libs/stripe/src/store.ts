import type { Customer, Invoice, InvoicePayment, PaymentMethod, Price, Product, Subscription, TestClock } from './billing-types';

/**
 * The fake's objects, shaped like Stripe's JSON (snake_case, unix-second timestamps, ids with Stripe's prefixes).
 * Only the fields the fake fills are listed; everything lives in memory for the life of the process.
 */

export interface SharedPaymentToken {
  id: string;
  /** how it was minted: the seller's test helper, or the agent's live-style endpoint; one store, one id either way */
  object: 'shared_payment.granted_token' | 'shared_payment.issued_token';
  created: number;
  livemode: false;
  payment_method: string;
  usage_limits: { currency: string; max_amount: number; expires_at: number };
  seller_details: { network_id?: string; network_business_profile?: string } | null;
  deactivated_at: number | null;
  deactivated_reason: 'consumed' | 'revoked' | 'expired' | null;
  usage_details: { amount_captured: { currency: string; value: number } } | null;
}

export type PaymentIntentStatus = 'requires_payment_method' | 'requires_confirmation' | 'requires_action' | 'processing' | 'succeeded' | 'canceled';

export interface LastPaymentError {
  type: 'card_error';
  code: string;
  decline_code: string;
  message: string;
  charge: string;
  payment_method: { id: string; object: 'payment_method'; type: 'card' };
}

export interface PaymentIntent {
  id: string;
  object: 'payment_intent';
  amount: number;
  amount_capturable: number;
  amount_received: number;
  automatic_payment_methods: { enabled: boolean; allow_redirects?: 'always' | 'never' } | null;
  canceled_at: number | null;
  cancellation_reason: string | null;
  capture_method: 'automatic';
  client_secret: string;
  confirmation_method: 'automatic';
  created: number;
  currency: string;
  customer: string | null;
  description: string | null;
  last_payment_error: LastPaymentError | null;
  latest_charge: string | null;
  livemode: false;
  metadata: Record<string, string>;
  next_action: { type: 'use_stripe_sdk'; use_stripe_sdk: { type: 'three_d_secure_redirect'; stripe_js: string } } | null;
  payment_method: string | null;
  payment_method_types: string[];
  shared_payment_granted_token: string | null;
  status: PaymentIntentStatus;
}

export interface Charge {
  id: string;
  object: 'charge';
  amount: number;
  amount_captured: number;
  amount_refunded: number;
  balance_transaction: string | null;
  captured: boolean;
  created: number;
  currency: string;
  description: string | null;
  failure_code: string | null;
  failure_message: string | null;
  livemode: false;
  metadata: Record<string, string>;
  paid: boolean;
  payment_intent: string;
  payment_method: string;
  refunded: boolean;
  status: 'succeeded' | 'failed';
}

export interface Refund {
  id: string;
  object: 'refund';
  amount: number;
  balance_transaction: string;
  charge: string;
  created: number;
  currency: string;
  metadata: Record<string, string>;
  payment_intent: string;
  reason: 'duplicate' | 'fraudulent' | 'requested_by_customer' | null;
  /** `pending` for a PaymentIntent whose refunds a test made pending (`FakeStripe.pendRefunds`), until `finishRefund` */
  status: 'pending' | 'succeeded' | 'failed' | 'canceled';
  /** set when it failed */
  failure_reason?: 'lost_or_stolen_card' | 'expired_or_canceled_card' | 'unknown';
}

export interface BalanceTransaction {
  id: string;
  object: 'balance_transaction';
  amount: number;
  available_on: number;
  created: number;
  currency: string;
  description: string | null;
  exchange_rate: null;
  fee: number;
  fee_details: { amount: number; application: null; currency: string; description: string; type: 'stripe_fee' }[];
  net: number;
  reporting_category: 'charge' | 'refund' | 'refund_failure';
  source: string;
  status: 'available';
  type: 'charge' | 'refund' | 'refund_failure';
}

export type StripeEventType =
  | 'payment_intent.created'
  | 'payment_intent.succeeded'
  | 'payment_intent.payment_failed'
  | 'payment_intent.requires_action'
  | 'payment_intent.canceled'
  | 'charge.succeeded'
  | 'charge.failed'
  | 'charge.refunded'
  | 'refund.created'
  | 'refund.updated'
  | 'refund.failed'
  | 'shared_payment.granted_token.used'
  | 'customer.created'
  | 'customer.updated'
  | 'payment_method.attached'
  | 'payment_method.detached'
  | 'product.created'
  | 'price.created'
  | 'customer.subscription.created'
  | 'customer.subscription.updated'
  | 'customer.subscription.deleted'
  | 'invoice.created'
  | 'invoice.finalized'
  | 'invoice.updated'
  | 'invoice.paid'
  | 'invoice.payment_succeeded'
  | 'invoice.payment_failed'
  | 'invoice.payment_action_required'
  | 'invoice.voided'
  | 'invoice.marked_uncollectible'
  | 'test_helpers.test_clock.created'
  | 'test_helpers.test_clock.advancing'
  | 'test_helpers.test_clock.ready';

export interface StripeEvent {
  id: string;
  object: 'event';
  api_version: string;
  created: number;
  /** `previous_attributes`: on `*.updated` events, the changed top-level fields as they were before */
  data: { object: unknown; previous_attributes?: Record<string, unknown> };
  livemode: false;
  pending_webhooks: number;
  request: { id: string | null; idempotency_key: string | null };
  type: StripeEventType;
}

/** Objects of one kind, in creation order (a Map keeps insertion order). */
export class Collection<T extends { id: string; created: number }> {
  private readonly byId = new Map<string, T>();

  add(item: T): T {
    this.byId.set(item.id, item);
    return item;
  }

  get(id: string): T | undefined {
    return this.byId.get(id);
  }

  /** Oldest first. */
  all(): T[] {
    return [...this.byId.values()];
  }
}

/** A Collection that also finds its objects by one key (an invoice's payments by the invoice), in creation order. */
export class IndexedCollection<T extends { id: string; created: number }> extends Collection<T> {
  private readonly byKey = new Map<string, T[]>();

  constructor(private readonly keyOf: (item: T) => string) {
    super();
  }

  override add(item: T): T {
    super.add(item);
    const key = this.keyOf(item);
    const list = this.byKey.get(key);
    if (list) list.push(item);
    else this.byKey.set(key, [item]);
    return item;
  }

  /** Oldest first; the key of a stored object never changes. */
  withKey(key: string): T[] {
    return [...(this.byKey.get(key) ?? [])];
  }
}

export class Store {
  readonly tokens = new Collection<SharedPaymentToken>();
  readonly paymentIntents = new Collection<PaymentIntent>();
  readonly charges = new Collection<Charge>();
  readonly refunds = new Collection<Refund>();
  readonly balanceTransactions = new Collection<BalanceTransaction>();
  readonly events = new Collection<StripeEvent>();
  readonly testClocks = new Collection<TestClock>();
  readonly customers = new Collection<Customer>();
  /** only PaymentMethods attached to a customer are stored; the `pm_card_*` test ids are virtual */
  readonly paymentMethods = new Collection<PaymentMethod>();
  readonly products = new Collection<Product>();
  readonly prices = new Collection<Price>();
  readonly subscriptions = new Collection<Subscription>();
  readonly invoices = new Collection<Invoice>();
  readonly invoicePayments = new IndexedCollection<InvoicePayment>((payment) => payment.invoice);
  /** the `pm_card_*` test id a stored PaymentMethod was made from: it decides how charges to it end (test-tokens.ts) */
  readonly testCardOf = new Map<string, string>();

  /** Any stored object by its id (the prefix says which kind); used by `expand`. */
  find(id: string): { id: string; created: number } | undefined {
    const prefix = id.slice(0, id.indexOf('_') + 1);
    const byPrefix: Record<string, Collection<{ id: string; created: number }> | undefined> = {
      spt_: this.tokens,
      pi_: this.paymentIntents,
      ch_: this.charges,
      re_: this.refunds,
      txn_: this.balanceTransactions,
      evt_: this.events,
      clock_: this.testClocks,
      cus_: this.customers,
      pm_: this.paymentMethods,
      prod_: this.products,
      price_: this.prices,
      sub_: this.subscriptions,
      in_: this.invoices,
      inpay_: this.invoicePayments,
    };
    return byPrefix[prefix]?.get(id);
  }
}
