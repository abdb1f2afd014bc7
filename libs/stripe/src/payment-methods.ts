import type { ApiContext, Handler } from './api';
import type { PaymentMethod } from './billing-types';
import { invalidRequest, resourceMissing } from './errors';
import type { RequestInfo } from './events';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readEnum, readString, required } from './params';
import { isTestPaymentMethod, outcomeFor, testCardDetails, type PaymentOutcome } from './test-tokens';

/**
 * PaymentMethods. The `pm_card_*` test ids stand for Stripe's test cards: reading one shows an unattached card, and
 * attaching one to a customer makes a new `pm_…` PaymentMethod (as Stripe does), which charges like the test card it
 * came from. `GET /v1/payment_methods/:id`, `POST …/attach {customer}`, `POST …/detach`, `GET /v1/payment_methods?customer=`.
 */

export const retrievePaymentMethod: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findPaymentMethod(context, request.pathIds[0]);
};

export const attachPaymentMethod: Handler = (context, request) => {
  onlyParams(request.params, ['customer']);
  const customer = required(readString(request.params.customer, 'customer'), 'customer');
  if (!context.store.customers.get(customer)) throw resourceMissing('customer', customer, 'customer');
  return attachToCustomer(context, request.info, findPaymentMethod(context, request.pathIds[0]), customer);
};

export const detachPaymentMethod: Handler = (context, request) => {
  onlyParams(request.params, []);
  const paymentMethod = findPaymentMethod(context, request.pathIds[0]);
  if (!paymentMethod.customer)
    throw invalidRequest(`The payment method ${paymentMethod.id} is not attached to a customer.`, { code: 'payment_method_unexpected_state' });
  paymentMethod.customer = null;
  context.events.emit('payment_method.detached', paymentMethod, request.info);
  return paymentMethod;
};

export const listPaymentMethods: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'customer', 'type']);
  const customer = readString(params.customer, 'customer');
  readEnum(params.type, 'type', ['card']);
  return paginate(context.store.paymentMethods.all(), params, request.path, (paymentMethod) => !customer || paymentMethod.customer === customer);
};

/** A stored PaymentMethod, or the unattached card a `pm_card_*` test id stands for. 404 (400 at `param`) otherwise. */
export function findPaymentMethod(context: ApiContext, id: string, param?: string): PaymentMethod {
  const stored = context.store.paymentMethods.get(id);
  if (stored) return stored;
  if (!isTestPaymentMethod(id)) throw resourceMissing('PaymentMethod', id, param);
  return cardFor(context, id, testCardDetails(id), null);
}

/** Attaching a test id stores a new PaymentMethod; attaching a stored one again to its customer changes nothing. */
export function attachToCustomer(context: ApiContext, info: RequestInfo, paymentMethod: PaymentMethod, customer: string): PaymentMethod {
  if (paymentMethod.customer === customer) return paymentMethod;
  if (paymentMethod.customer) {
    throw invalidRequest(`The payment method ${paymentMethod.id} is already attached to another customer.`, { code: 'payment_method_unexpected_state' });
  }
  const testCard = context.store.testCardOf.get(paymentMethod.id) ?? paymentMethod.id;
  const attached =
    context.store.paymentMethods.get(paymentMethod.id) ?? context.store.paymentMethods.add(cardFor(context, newId('pm'), paymentMethod.card, null));
  context.store.testCardOf.set(attached.id, testCard);
  attached.customer = customer;
  context.events.emit('payment_method.attached', attached, info);
  return attached;
}

/**
 * How a charge to `paymentMethod` (for `customer`) ends: a decline armed by the test hook first, then the test card
 * the PaymentMethod stands for. `peek` leaves an armed decline in place (a check before anything is stored).
 */
export function paymentOutcome(context: ApiContext, paymentMethod: string, customer: string | null, { peek = false } = {}): PaymentOutcome {
  const armed = peek ? context.declines.peek(paymentMethod, customer) : context.declines.take(paymentMethod, customer);
  return armed ?? outcomeFor(context.store.testCardOf.get(paymentMethod) ?? paymentMethod);
}

/** Can pay a PaymentIntent: a `pm_card_*` test id or a stored PaymentMethod. */
export function isKnownPaymentMethod(context: ApiContext, id: string): boolean {
  return isTestPaymentMethod(id) || context.store.paymentMethods.get(id) !== undefined;
}

function cardFor(context: ApiContext, id: string, card: { brand: string; last4: string }, customer: string | null): PaymentMethod {
  return {
    id,
    object: 'payment_method',
    allow_redisplay: 'unspecified',
    billing_details: { address: null, email: null, name: null, phone: null },
    card: {
      brand: card.brand,
      country: 'US',
      exp_month: 12,
      exp_year: new Date(context.nowSeconds() * 1000).getUTCFullYear() + 3,
      funding: 'credit',
      last4: card.last4,
    },
    created: context.nowSeconds(),
    customer,
    livemode: false,
    metadata: {},
    type: 'card',
  };
}
