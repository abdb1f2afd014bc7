import type { ApiContext, Handler } from './api';
import type { Price, Subscription } from './billing-types';
import { checkOwnPaymentMethod, customerContext, findCustomer } from './customers';
import { cardError, invalidRequest, missingParam, oneOf, resourceMissing } from './errors';
import { changedAttributes, type RequestInfo } from './events';
import type { FormObject } from './form';
import { newId } from './ids';
import { collectInvoice, createSubscriptionInvoice, finalizeInvoice, NO_PAYMENT_METHOD } from './invoice-lifecycle';
import { LIST_PARAMS, paginate } from './list';
import { mergeMetadata, onlyParams, readBoolean, readEnum, readInteger, readMetadata, readObject, readString, required } from './params';
import { declineOf } from './payment-intents';
import { paymentOutcome } from './payment-methods';
import { periodBoundary } from './periods';
import { findPrice } from './prices';

/**
 * Subscriptions with one licensed item, collected automatically: `POST /v1/subscriptions`, `GET …/:id`, `GET
 * /v1/subscriptions`, `POST …/:id` (cancel_at_period_end, cancel_at, metadata, default_payment_method), `DELETE …/:id`.
 * The first invoice is made, finalized and collected at once. With `payment_behavior=error_if_incomplete` a first
 * invoice that cannot be paid answers 402 and creates nothing; with `allow_incomplete` (Stripe's default) the
 * subscription is `incomplete` and expires after 23 hours. Renewals happen when a test clock advances (billing-cycle.ts).
 */

/** Stripe has these; the fake does not model them, and says so rather than ignoring them. */
const NOT_MODELLED = [
  'add_invoice_items',
  'application_fee_percent',
  'automatic_tax',
  'backdate_start_date',
  'billing_cycle_anchor',
  'billing_cycle_anchor_config',
  'billing_mode',
  'billing_thresholds',
  'cancel_at',
  'currency',
  'days_until_due',
  'default_source',
  'default_tax_rates',
  'discounts',
  'invoice_settings',
  'on_behalf_of',
  'payment_settings',
  'pending_invoice_item_interval',
  'transfer_data',
  'trial_end',
  'trial_from_plan',
  'trial_period_days',
  'trial_settings',
];
const CREATE_PARAMS = [
  'customer',
  'items',
  'default_payment_method',
  'collection_method',
  'payment_behavior',
  'proration_behavior',
  'metadata',
  'description',
  'off_session',
  'cancel_at_period_end',
  ...NOT_MODELLED,
];
const UPDATE_PARAMS = [
  'cancel_at_period_end',
  'cancel_at',
  'cancellation_details',
  'metadata',
  'description',
  'default_payment_method',
  'proration_behavior',
  'payment_behavior',
  'off_session',
];
/** Subscriptions that ended; Stripe's list leaves them out unless asked. */
const ENDED: Subscription['status'][] = ['canceled', 'incomplete_expired'];
const INCOMPLETE_SECONDS = 23 * 3600;

export const createSubscription: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, CREATE_PARAMS);
  const notModelled = NOT_MODELLED.find((param) => params[param] !== undefined);
  if (notModelled) throw invalidRequest(`The fake Stripe does not model ${notModelled} on subscriptions.`, { param: notModelled });
  const customer = findCustomer(context, required(readString(params.customer, 'customer'), 'customer'), 'customer');
  const { price, quantity } = readItem(context, params);
  const collection = readEnum(params.collection_method, 'collection_method', ['charge_automatically', 'send_invoice']);
  if (collection === 'send_invoice') throw invalidRequest('The fake Stripe does not model collection_method=send_invoice.', { param: 'collection_method' });
  const behavior =
    readEnum(params.payment_behavior, 'payment_behavior', ['allow_incomplete', 'error_if_incomplete', 'default_incomplete', 'pending_if_incomplete']) ??
    'allow_incomplete';
  if (behavior !== 'allow_incomplete' && behavior !== 'error_if_incomplete') {
    throw invalidRequest(`The fake Stripe does not model payment_behavior=${behavior}.`, { param: 'payment_behavior' });
  }
  readEnum(params.proration_behavior, 'proration_behavior', ['create_prorations', 'none', 'always_invoice']);
  readBoolean(params.off_session, 'off_session');
  const given = readString(params.default_payment_method, 'default_payment_method');
  const defaultPaymentMethod = given === undefined ? null : checkOwnPaymentMethod(context, customer, given, 'default_payment_method');
  const paymentMethod = defaultPaymentMethod ?? customer.invoice_settings.default_payment_method;
  if (!paymentMethod) throw invalidRequest(NO_PAYMENT_METHOD, { code: 'resource_missing' });
  const cancelAtPeriodEnd = readBoolean(params.cancel_at_period_end, 'cancel_at_period_end') ?? false;
  const metadata = readMetadata(params.metadata);
  const description = readString(params.description, 'description') ?? null;

  const local = customerContext(context, customer);
  // Settled before anything is stored, so a refused first payment leaves nothing behind (the decline is used up below).
  const outcome = paymentOutcome(local, paymentMethod, customer.id, { peek: true });
  if (outcome.kind !== 'succeeds' && behavior === 'error_if_incomplete') {
    const decline = declineOf(outcome);
    throw cardError({ code: decline.code, decline_code: decline.declineCode, message: decline.message });
  }

  const start = local.nowSeconds();
  const end = periodBoundary(start, price.recurring!, 1);
  const id = newId('sub');
  const invoiceId = newId('in');
  const subscription = context.store.subscriptions.add({
    id,
    object: 'subscription',
    application: null,
    application_fee_percent: null,
    automatic_tax: { disabled_reason: null, enabled: false, liability: null },
    billing_cycle_anchor: start,
    billing_cycle_anchor_config: null,
    cancel_at: cancelAtPeriodEnd ? end : null,
    cancel_at_period_end: cancelAtPeriodEnd,
    canceled_at: cancelAtPeriodEnd ? start : null,
    cancellation_details: { comment: null, feedback: null, reason: null },
    collection_method: 'charge_automatically',
    created: start,
    currency: price.currency,
    customer: customer.id,
    days_until_due: null,
    default_payment_method: defaultPaymentMethod,
    default_source: null,
    description,
    discounts: [],
    ended_at: null,
    items: {
      object: 'list',
      data: [
        {
          id: newId('si'),
          object: 'subscription_item',
          billing_thresholds: null,
          created: start,
          current_period_end: end,
          current_period_start: start,
          discounts: [],
          metadata: {},
          price: structuredClone(price),
          quantity,
          subscription: id,
          tax_rates: [],
        },
      ],
      has_more: false,
      total_count: 1,
      url: `/v1/subscription_items?subscription=${id}`,
    },
    latest_invoice: invoiceId,
    livemode: false,
    metadata,
    pause_collection: null,
    pending_setup_intent: null,
    pending_update: null,
    schedule: null,
    start_date: start,
    status: outcome.kind === 'succeeds' ? 'active' : 'incomplete',
    test_clock: customer.test_clock,
    trial_end: null,
    trial_start: null,
  });
  context.events.emit('customer.subscription.created', subscription, request.info);
  const invoice = createSubscriptionInvoice(local, request.info, subscription, customer, {
    id: invoiceId,
    reason: 'subscription_create',
    period: { start, end },
    window: { start, end: start },
    finalizesAt: null,
  });
  finalizeInvoice(local, request.info, invoice);
  collectInvoice(local, request.info, invoice, paymentMethod, { onSession: true });
  return subscription;
};

export const retrieveSubscription: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findSubscription(context, request.pathIds[0]);
};

/** Filters `customer`, `price`, `status` (`all` and `ended` too; by default every one not ended) and `test_clock`. */
export const listSubscriptions: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'customer', 'price', 'status', 'test_clock', 'collection_method']);
  const customer = readString(params.customer, 'customer');
  const price = readString(params.price, 'price');
  const clock = readString(params.test_clock, 'test_clock');
  const status = readEnum(params.status, 'status', [
    'active',
    'all',
    'canceled',
    'ended',
    'incomplete',
    'incomplete_expired',
    'past_due',
    'paused',
    'trialing',
    'unpaid',
  ]);
  const statusMatches = (subscription: Subscription) =>
    status === 'all' ||
    (status === 'ended' ? ENDED.includes(subscription.status) : status ? subscription.status === status : !ENDED.includes(subscription.status));
  return paginate(
    context.store.subscriptions.all(),
    params,
    request.path,
    (subscription) =>
      statusMatches(subscription) &&
      (!customer || subscription.customer === customer) &&
      (!price || subscription.items.data.some((item) => item.price.id === price)) &&
      (!clock || subscription.test_clock === clock),
  );
};

/**
 * `cancel_at_period_end=true` ends it when the current period ends (and sets `cancel_at` to then); `cancel_at` ends
 * it at that time (`min_period_end`/`max_period_end`: the current period's end); `''` or false undoes either.
 */
export const updateSubscription: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, UPDATE_PARAMS);
  const subscription = findSubscription(context, request.pathIds[0]);
  const customer = findCustomer(context, subscription.customer);
  const now = customerContext(context, customer).nowSeconds();
  const before = structuredClone(subscription);
  if (ENDED.includes(subscription.status) && Object.keys(params).some((key) => !['metadata', 'cancellation_details', 'expand'].includes(key))) {
    throw invalidRequest('A canceled subscription can only update its cancellation_details and metadata.');
  }
  readEnum(params.proration_behavior, 'proration_behavior', ['create_prorations', 'none', 'always_invoice']);
  readEnum(params.payment_behavior, 'payment_behavior', ['allow_incomplete', 'error_if_incomplete', 'default_incomplete', 'pending_if_incomplete']);
  readBoolean(params.off_session, 'off_session');
  const periodEnd = subscription.items.data[0].current_period_end;
  const atPeriodEnd = readBoolean(params.cancel_at_period_end, 'cancel_at_period_end');
  const cancelAt = readCancelAt(params, periodEnd, now);
  if (atPeriodEnd && cancelAt) throw oneOf('cancel_at', 'cancel_at_period_end');

  if (atPeriodEnd) Object.assign(subscription, cancellation(periodEnd, true, now));
  else if (cancelAt !== undefined) Object.assign(subscription, cancellation(cancelAt, false, now));
  else if (atPeriodEnd === false) Object.assign(subscription, cancellation(null, false, now));
  if (params.default_payment_method !== undefined) {
    const id = readString(params.default_payment_method, 'default_payment_method');
    subscription.default_payment_method = id === undefined ? null : checkOwnPaymentMethod(context, customer, id, 'default_payment_method');
  }
  if (params.description !== undefined) subscription.description = readString(params.description, 'description') ?? null;
  subscription.metadata = mergeMetadata(subscription.metadata, params.metadata);
  readCancellationDetails(subscription, params);
  const previous = changedAttributes(before, subscription);
  if (Object.keys(previous).length > 0) context.events.emit('customer.subscription.updated', subscription, request.info, previous);
  return subscription;
};

/** Ends it now; its invoices are no longer collected automatically. `invoice_now` and `prorate` are accepted, no proration is made. */
export const cancelSubscription: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, ['invoice_now', 'prorate', 'cancellation_details']);
  readBoolean(params.invoice_now, 'invoice_now');
  readBoolean(params.prorate, 'prorate');
  const subscription = findSubscription(context, request.pathIds[0]);
  if (ENDED.includes(subscription.status)) {
    throw invalidRequest(`The subscription ${subscription.id} has already ended (status ${subscription.status}).`, { code: 'resource_missing' });
  }
  readCancellationDetails(subscription, params);
  const now = customerContext(context, findCustomer(context, subscription.customer)).nowSeconds();
  endSubscription(context, request.info, subscription, now, { canceledAt: now });
  return subscription;
};

export function findSubscription(context: ApiContext, id: string, param?: string): Subscription {
  const subscription = context.store.subscriptions.get(id);
  if (!subscription) throw resourceMissing('subscription', id, param);
  return subscription;
}

/** `status: canceled` at `at`, `customer.subscription.deleted`; its unpaid invoices stop being collected automatically. */
export function endSubscription(
  context: ApiContext,
  info: RequestInfo,
  subscription: Subscription,
  at: number,
  { canceledAt = subscription.canceled_at ?? at, status = 'canceled' }: { canceledAt?: number | null; status?: 'canceled' | 'incomplete_expired' } = {},
): void {
  Object.assign(subscription, { status, canceled_at: canceledAt, ended_at: at, cancel_at_period_end: false });
  if (status === 'canceled') subscription.cancellation_details.reason = 'cancellation_requested';
  for (const invoice of context.store.invoices.all()) {
    if (invoice.parent.subscription_details.subscription !== subscription.id || (invoice.status !== 'draft' && invoice.status !== 'open')) continue;
    Object.assign(invoice, { auto_advance: false, automatically_finalizes_at: null, next_payment_attempt: null });
  }
  context.events.emit('customer.subscription.deleted', subscription, info);
}

/** An `incomplete` subscription whose first invoice stayed unpaid expires 23 hours after it was made. */
export function incompleteExpiresAt(subscription: Subscription): number {
  return subscription.created + INCOMPLETE_SECONDS;
}

function cancellation(cancelAt: number | null, atPeriodEnd: boolean, now: number): Partial<Subscription> {
  return { cancel_at: cancelAt, cancel_at_period_end: atPeriodEnd, canceled_at: cancelAt === null ? null : now };
}

/** A time, `min_period_end`/`max_period_end` (one item: the current period's end), '' (null: no cancellation) or absent. */
function readCancelAt(params: FormObject, periodEnd: number, now: number): number | null | undefined {
  if (params.cancel_at === undefined) return undefined;
  const text = readString(params.cancel_at, 'cancel_at');
  if (text === undefined) return null;
  if (text === 'min_period_end' || text === 'max_period_end') return periodEnd;
  const at = readInteger(text, 'cancel_at')!;
  if (at <= now) throw invalidRequest('cancel_at must be in the future.', { param: 'cancel_at' });
  return at;
}

function readCancellationDetails(subscription: Subscription, params: FormObject): void {
  const details = readObject(params.cancellation_details, 'cancellation_details');
  if (!details) return;
  onlyParams(details, ['comment', 'feedback'], 'cancellation_details');
  const feedback = readEnum(details.feedback, 'cancellation_details[feedback]', [
    'customer_service',
    'low_quality',
    'missing_features',
    'other',
    'switched_service',
    'too_complex',
    'too_expensive',
    'unused',
  ]);
  if (details.comment !== undefined) subscription.cancellation_details.comment = readString(details.comment, 'cancellation_details[comment]') ?? null;
  if (details.feedback !== undefined) subscription.cancellation_details.feedback = feedback ?? null;
}

/** `items[0][price]` and `items[0][quantity]` (default 1): exactly one item, with an active recurring price. */
function readItem(context: ApiContext, params: FormObject): { price: Price; quantity: number } {
  if (params.items === undefined) throw missingParam('items');
  if (!Array.isArray(params.items)) throw invalidRequest('Invalid array: items must be a list (items[0][price]=…).', { param: 'items' });
  if (params.items.length !== 1) throw invalidRequest('The fake Stripe models subscriptions with exactly one item.', { param: 'items' });
  const item = readObject(params.items[0], 'items[0]')!;
  onlyParams(item, ['price', 'quantity', 'metadata'], 'items[0]');
  const price = findPrice(context, required(readString(item.price, 'items[0][price]'), 'items[0][price]'), 'items[0][price]');
  if (!price.recurring) throw invalidRequest(`The price ${price.id} is not recurring; a subscription needs a recurring price.`, { param: 'items[0][price]' });
  if (!price.active) throw invalidRequest(`The price ${price.id} is not active.`, { param: 'items[0][price]' });
  const quantity = readInteger(item.quantity, 'items[0][quantity]', { min: 1 }) ?? 1;
  if (price.unit_amount * quantity > 99_999_999)
    throw invalidRequest('The amount due is above what one invoice can collect (99999999).', { param: 'items[0][quantity]' });
  return { price, quantity };
}
