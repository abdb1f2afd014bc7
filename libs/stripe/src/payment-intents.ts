import type { ApiContext, Handler } from './api';
import { recordCharge } from './charges';
import { type ApiError, cardError, invalidRequest, oneOf, resourceMissing } from './errors';
import type { RequestInfo } from './events';
import type { FormObject } from './form';
import { newId, randomBase62 } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readBoolean, readCurrency, readEnum, readInteger, readMetadata, readObject, readString, readStringList, required } from './params';
import { checkTokenCanPay, consumeToken, findToken } from './shared-payment-tokens';
import type { LastPaymentError, PaymentIntent, PaymentIntentStatus, SharedPaymentToken } from './store';
import { isKnownPaymentMethod, paymentOutcome } from './payment-methods';
import type { PaymentOutcome } from './test-tokens';

/** What pays: a test payment method, or a Shared Payment Token (given top-level or in `payment_method_data`). */
const PAYMENT_PARAMS = ['payment_method', 'shared_payment_granted_token', 'payment_method_data', 'error_on_requires_action'];
/** Accepted so that real call sites work unchanged, but not modelled. */
const IGNORED_PARAMS = [
  'return_url',
  'off_session',
  'receipt_email',
  'statement_descriptor',
  'statement_descriptor_suffix',
  'application_fee_amount',
  'on_behalf_of',
  'transfer_data',
  'transfer_group',
];
const CREATE_PARAMS = [
  'amount',
  'currency',
  'confirm',
  'payment_method_types',
  'automatic_payment_methods',
  'metadata',
  'description',
  ...PAYMENT_PARAMS,
  ...IGNORED_PARAMS,
];
const CONFIRM_PARAMS = [...PAYMENT_PARAMS, 'return_url', 'off_session', 'receipt_email'];

const CONFIRMABLE: PaymentIntentStatus[] = ['requires_payment_method', 'requires_confirmation', 'requires_action'];
const CANCELABLE: PaymentIntentStatus[] = ['requires_payment_method', 'requires_confirmation', 'requires_action', 'processing'];
/** Stripe's ceiling for an amount in minor units (eight digits). */
const MAX_AMOUNT = 99_999_999;

interface TokenRef {
  id: string;
  /** where it was given, for error messages */
  param: string;
}

interface PaymentSource {
  paymentMethod?: string;
  token?: TokenRef;
  errorOnRequiresAction: boolean;
}

export const createPaymentIntent: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, CREATE_PARAMS);
  const amount = required(readInteger(params.amount, 'amount', { min: 1, max: MAX_AMOUNT }), 'amount');
  const currency = required(readCurrency(params.currency, 'currency'), 'currency');
  const confirm = readBoolean(params.confirm, 'confirm') ?? false;
  const description = readString(params.description, 'description') ?? null;
  const metadata = readMetadata(params.metadata);
  const methods = readPaymentMethodTypes(params);
  const source = readPaymentSource(context, params);
  // Every check runs before anything is stored: a request Stripe refuses with a 400 creates nothing.
  if (confirm && !source.token && !source.paymentMethod) throw missingPaymentMethod();
  const token =
    source.token &&
    (confirm ? checkTokenCanPay(context, source.token.id, source.token.param, { amount, currency }) : findToken(context, source.token.id, source.token.param));

  const id = newId('pi');
  const paymentIntent = context.store.paymentIntents.add({
    id,
    object: 'payment_intent',
    amount,
    amount_capturable: 0,
    amount_received: 0,
    ...methods,
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic',
    client_secret: `${id}_secret_${randomBase62(25)}`,
    confirmation_method: 'automatic',
    created: context.nowSeconds(),
    currency,
    customer: null,
    description,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    metadata,
    next_action: null,
    payment_method: source.paymentMethod ?? token?.payment_method ?? null,
    shared_payment_granted_token: token?.id ?? null,
    status: source.paymentMethod || token ? 'requires_confirmation' : 'requires_payment_method',
  });
  context.events.emit('payment_intent.created', paymentIntent, request.info);
  if (!confirm) return paymentIntent;
  return settle(context, request.info, paymentIntent, { paymentMethod: source.paymentMethod ?? token!.payment_method, token }, source.errorOnRequiresAction);
};

export const confirmPaymentIntent: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, CONFIRM_PARAMS);
  const paymentIntent = findPaymentIntent(context, request.pathIds[0]);
  if (!CONFIRMABLE.includes(paymentIntent.status)) {
    throw unexpectedState(
      `You cannot confirm this PaymentIntent because it has a status of ${paymentIntent.status}. Only a PaymentIntent with one of the following statuses may be confirmed: ${CONFIRMABLE.join(', ')}.`,
    );
  }
  const source = readPaymentSource(context, params);
  const stored = paymentIntent.shared_payment_granted_token;
  // A payment method given now replaces what the PaymentIntent held; otherwise its token, then its payment method.
  const tokenRef = source.token ?? (!source.paymentMethod && stored ? { id: stored, param: 'shared_payment_granted_token' } : undefined);
  const paymentMethod = source.paymentMethod ?? (tokenRef ? undefined : (paymentIntent.payment_method ?? undefined));
  if (!tokenRef && !paymentMethod) throw missingPaymentMethod();
  const token = tokenRef && checkTokenCanPay(context, tokenRef.id, tokenRef.param, paymentIntent);
  return settle(context, request.info, paymentIntent, { paymentMethod: paymentMethod ?? token!.payment_method, token }, source.errorOnRequiresAction);
};

export const retrievePaymentIntent: Handler = (context, request) => {
  onlyParams(request.params, ['client_secret']);
  return findPaymentIntent(context, request.pathIds[0]);
};

export const listPaymentIntents: Handler = (context, request) => {
  onlyParams(request.params, LIST_PARAMS);
  return paginate(context.store.paymentIntents.all(), request.params, request.path);
};

export const cancelPaymentIntent: Handler = (context, request) => {
  onlyParams(request.params, ['cancellation_reason']);
  const reason = readEnum(request.params.cancellation_reason, 'cancellation_reason', ['duplicate', 'fraudulent', 'requested_by_customer', 'abandoned']);
  const paymentIntent = findPaymentIntent(context, request.pathIds[0]);
  if (!CANCELABLE.includes(paymentIntent.status)) {
    throw unexpectedState(
      `You cannot cancel this PaymentIntent because it has a status of ${paymentIntent.status}. Only a PaymentIntent with one of the following statuses may be canceled: ${CANCELABLE.join(', ')}.`,
    );
  }
  Object.assign(paymentIntent, { status: 'canceled', canceled_at: context.nowSeconds(), cancellation_reason: reason ?? null, next_action: null });
  context.events.emit('payment_intent.canceled', paymentIntent, request.info);
  return paymentIntent;
};

export function findPaymentIntent(context: ApiContext, id: string, param?: string): PaymentIntent {
  const paymentIntent = context.store.paymentIntents.get(id);
  if (!paymentIntent) throw resourceMissing('payment_intent', id, param);
  return paymentIntent;
}

/**
 * The confirmation itself; the test payment method decides the outcome (test-tokens.ts).
 * - succeeds: a Charge and its balance transaction, status `succeeded`, the token (if any) consumed;
 * - requires_action: status `requires_action` with a `use_stripe_sdk` next action; the token stays usable;
 * - declined: a failed Charge, status `requires_payment_method` with `last_payment_error`, and a 402 card_error
 *   carrying the PaymentIntent (the token stays usable, as nothing was captured).
 */
function settle(
  context: ApiContext,
  info: RequestInfo,
  paymentIntent: PaymentIntent,
  by: { paymentMethod: string; token?: SharedPaymentToken },
  errorOnRequiresAction: boolean,
): PaymentIntent {
  const { paymentMethod, token } = by;
  paymentIntent.shared_payment_granted_token = token?.id ?? null;
  const attempt = attemptConfirmation(context, info, paymentIntent, paymentMethod, errorOnRequiresAction);
  if (attempt.kind === 'declined') throw attempt.error;
  if (attempt.kind === 'succeeded' && token) consumeToken(context, token, paymentIntent, info);
  return paymentIntent;
}

/** How one confirmation ended; a decline carries the 402 the API answers with. */
export type ConfirmationAttempt = { kind: 'succeeded' } | { kind: 'requires_action' } | { kind: 'declined'; error: ApiError };

/** Charges `paymentMethod` for the PaymentIntent (see `settle`), recording the Charge and the events; never throws a decline. */
export function attemptConfirmation(
  context: ApiContext,
  info: RequestInfo,
  paymentIntent: PaymentIntent,
  paymentMethod: string,
  errorOnRequiresAction: boolean,
): ConfirmationAttempt {
  const outcome = paymentOutcome(context, paymentMethod, paymentIntent.customer);

  if (outcome.kind === 'succeeds') {
    const charge = recordCharge(context, paymentIntent, paymentMethod);
    Object.assign(paymentIntent, {
      status: 'succeeded',
      amount_received: paymentIntent.amount,
      latest_charge: charge.id,
      payment_method: paymentMethod,
      next_action: null,
      last_payment_error: null,
    });
    context.events.emit('charge.succeeded', charge, info);
    context.events.emit('payment_intent.succeeded', paymentIntent, info);
    return { kind: 'succeeded' };
  }

  if (outcome.kind === 'requires_action' && !errorOnRequiresAction) {
    const nextAction = {
      type: 'use_stripe_sdk',
      use_stripe_sdk: { type: 'three_d_secure_redirect', stripe_js: `https://hooks.stripe.com/3d_secure_2/hosted/${paymentIntent.id}` },
    };
    Object.assign(paymentIntent, { status: 'requires_action', payment_method: paymentMethod, next_action: nextAction, last_payment_error: null });
    context.events.emit('payment_intent.requires_action', paymentIntent, info);
    return { kind: 'requires_action' };
  }

  const decline = declineOf(outcome);
  const charge = recordCharge(context, paymentIntent, paymentMethod, { code: decline.code, message: decline.message });
  const lastError: LastPaymentError = {
    type: 'card_error',
    code: decline.code,
    decline_code: decline.declineCode,
    message: decline.message,
    charge: charge.id,
    payment_method: { id: paymentMethod, object: 'payment_method', type: 'card' },
  };
  Object.assign(paymentIntent, {
    status: 'requires_payment_method',
    payment_method: null,
    latest_charge: charge.id,
    last_payment_error: lastError,
    next_action: null,
  });
  context.events.emit('charge.failed', charge, info);
  context.events.emit('payment_intent.payment_failed', paymentIntent, info);
  const error = cardError({
    code: decline.code,
    decline_code: decline.declineCode,
    message: decline.message,
    charge: charge.id,
    payment_intent: structuredClone(paymentIntent),
  });
  return { kind: 'declined', error };
}

/** The card error a failed outcome answers with (an authentication Stripe could not ask for counts as a decline). */
export function declineOf(outcome: PaymentOutcome): { code: string; declineCode: string; message: string } {
  return outcome.kind === 'declined'
    ? { code: 'card_declined', declineCode: outcome.declineCode, message: outcome.message }
    : {
        code: 'authentication_required',
        declineCode: 'authentication_required',
        message: 'Your card was declined. This transaction requires authentication.',
      };
}

/**
 * A PaymentIntent Stripe makes itself, to collect an invoice from a customer's saved payment method (not yet
 * confirmed; `attemptConfirmation` charges it).
 */
export function createCustomerPaymentIntent(
  context: ApiContext,
  info: RequestInfo,
  charge: { amount: number; currency: string; customer: string; description: string; paymentMethod: string | null },
): PaymentIntent {
  const id = newId('pi');
  const paymentIntent = context.store.paymentIntents.add({
    id,
    object: 'payment_intent',
    amount: charge.amount,
    amount_capturable: 0,
    amount_received: 0,
    payment_method_types: ['card'],
    automatic_payment_methods: null,
    canceled_at: null,
    cancellation_reason: null,
    capture_method: 'automatic',
    client_secret: `${id}_secret_${randomBase62(25)}`,
    confirmation_method: 'automatic',
    created: context.nowSeconds(),
    currency: charge.currency,
    customer: charge.customer,
    description: charge.description,
    last_payment_error: null,
    latest_charge: null,
    livemode: false,
    metadata: {},
    next_action: null,
    payment_method: charge.paymentMethod,
    shared_payment_granted_token: null,
    status: charge.paymentMethod ? 'requires_confirmation' : 'requires_payment_method',
  });
  context.events.emit('payment_intent.created', paymentIntent, info);
  return paymentIntent;
}

function readPaymentSource(context: ApiContext, params: FormObject): PaymentSource {
  const paymentMethod = readString(params.payment_method, 'payment_method');
  const topLevel = readString(params.shared_payment_granted_token, 'shared_payment_granted_token');
  const data = readObject(params.payment_method_data, 'payment_method_data');
  // In the fake, payment_method_data only carries a token (real card details never reach a test server).
  if (data) onlyParams(data, ['shared_payment_granted_token', 'type'], 'payment_method_data');
  const nested =
    data &&
    required(
      readString(data.shared_payment_granted_token, 'payment_method_data[shared_payment_granted_token]'),
      'payment_method_data[shared_payment_granted_token]',
    );
  if (topLevel && nested) throw oneOf('shared_payment_granted_token', 'payment_method_data[shared_payment_granted_token]');
  const token = topLevel
    ? { id: topLevel, param: 'shared_payment_granted_token' }
    : nested
      ? { id: nested, param: 'payment_method_data[shared_payment_granted_token]' }
      : undefined;
  if (paymentMethod && token) throw oneOf('payment_method', token.param);
  if (paymentMethod && !isKnownPaymentMethod(context, paymentMethod)) throw resourceMissing('PaymentMethod', paymentMethod, 'payment_method');
  return { paymentMethod, token, errorOnRequiresAction: readBoolean(params.error_on_requires_action, 'error_on_requires_action') ?? false };
}

/** `payment_method_types` or `automatic_payment_methods`, not both; automatic is Stripe's default. */
function readPaymentMethodTypes(params: FormObject): Pick<PaymentIntent, 'payment_method_types' | 'automatic_payment_methods'> {
  const types = readStringList(params.payment_method_types, 'payment_method_types');
  const automatic = readObject(params.automatic_payment_methods, 'automatic_payment_methods');
  if (types && automatic) throw oneOf('automatic_payment_methods', 'payment_method_types');
  if (types) return { payment_method_types: types, automatic_payment_methods: null };
  if (!automatic) return { payment_method_types: ['card'], automatic_payment_methods: { enabled: true } };
  onlyParams(automatic, ['enabled', 'allow_redirects'], 'automatic_payment_methods');
  const enabled = required(readBoolean(automatic.enabled, 'automatic_payment_methods[enabled]'), 'automatic_payment_methods[enabled]');
  const redirects = readEnum(automatic.allow_redirects, 'automatic_payment_methods[allow_redirects]', ['always', 'never']);
  return { payment_method_types: ['card'], automatic_payment_methods: { enabled, ...(redirects && { allow_redirects: redirects }) } };
}

function missingPaymentMethod() {
  return invalidRequest("You cannot confirm this PaymentIntent because it's missing a payment method. Pass payment_method or a shared_payment_granted_token.", {
    code: 'payment_intent_unexpected_state',
  });
}

function unexpectedState(message: string) {
  return invalidRequest(message, { code: 'payment_intent_unexpected_state' });
}
