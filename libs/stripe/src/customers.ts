import { atTime, type ApiContext, type Handler } from './api';
import type { Customer } from './billing-types';
import { invalidRequest, resourceMissing } from './errors';
import { changedAttributes } from './events';
import type { FormObject } from './form';
import { newId, randomBase62 } from './ids';
import { attachToCustomer, findPaymentMethod } from './payment-methods';
import { mergeMetadata, onlyParams, readMetadata, readObject, readString } from './params';

/**
 * Customers: `POST /v1/customers`, `GET /v1/customers/:id`, `POST /v1/customers/:id`. A customer created with a
 * `test_clock` lives at that clock's time, and so do its subscriptions, invoices and payments.
 */

const EDITABLE = ['email', 'name', 'description', 'metadata', 'invoice_settings'];

export const createCustomer: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...EDITABLE, 'payment_method', 'test_clock']);
  const clockId = readString(params.test_clock, 'test_clock');
  const clock = clockId === undefined ? undefined : context.store.testClocks.get(clockId);
  if (clockId !== undefined && !clock) throw resourceMissing('test_clock', clockId, 'test_clock');
  const paymentMethodId = readString(params.payment_method, 'payment_method');
  const paymentMethod = paymentMethodId === undefined ? undefined : findPaymentMethod(context, paymentMethodId, 'payment_method');
  const settings = readInvoiceSettings(params);
  const local = clock ? atTime(context, clock.frozen_time) : context;

  const customer = context.store.customers.add({
    id: newId('cus'),
    object: 'customer',
    address: null,
    balance: 0,
    created: local.nowSeconds(),
    currency: null,
    default_source: null,
    delinquent: false,
    description: readString(params.description, 'description') ?? null,
    email: readString(params.email, 'email') ?? null,
    invoice_prefix: randomBase62(8).toUpperCase(),
    invoice_settings: { custom_fields: null, default_payment_method: null, footer: null, rendering_options: null },
    livemode: false,
    metadata: readMetadata(params.metadata),
    name: readString(params.name, 'name') ?? null,
    next_invoice_sequence: 1,
    phone: null,
    preferred_locales: [],
    shipping: null,
    tax_exempt: 'none',
    test_clock: clock?.id ?? null,
  });
  const attached = paymentMethod && attachToCustomer(local, request.info, paymentMethod, customer.id);
  if (settings.defaultPaymentMethod) {
    // the test id given as `payment_method` names the PaymentMethod its attachment made
    const wanted = attached && settings.defaultPaymentMethod === paymentMethodId ? attached.id : settings.defaultPaymentMethod;
    customer.invoice_settings.default_payment_method = checkOwnPaymentMethod(context, customer, wanted);
  }
  context.events.emit('customer.created', customer, request.info);
  return customer;
};

export const retrieveCustomer: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findCustomer(context, request.pathIds[0]);
};

export const updateCustomer: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, EDITABLE);
  const customer = findCustomer(context, request.pathIds[0]);
  const before = structuredClone(customer);
  const settings = readInvoiceSettings(params);
  if (params.email !== undefined) customer.email = readString(params.email, 'email') ?? null;
  if (params.name !== undefined) customer.name = readString(params.name, 'name') ?? null;
  if (params.description !== undefined) customer.description = readString(params.description, 'description') ?? null;
  customer.metadata = mergeMetadata(customer.metadata, params.metadata);
  if (settings.defaultPaymentMethod !== undefined) {
    customer.invoice_settings.default_payment_method = settings.defaultPaymentMethod && checkOwnPaymentMethod(context, customer, settings.defaultPaymentMethod);
  }
  const previous = changedAttributes(before, customer);
  if (Object.keys(previous).length > 0) context.events.emit('customer.updated', customer, request.info, previous);
  return customer;
};

export function findCustomer(context: ApiContext, id: string, param?: string): Customer {
  const customer = context.store.customers.get(id);
  if (!customer) throw resourceMissing('customer', id, param);
  return customer;
}

/** The context a customer's objects are made in: at its test clock's frozen time, or the fake's own time. */
export function customerContext(context: ApiContext, customer: Customer): ApiContext {
  const clock = customer.test_clock ? context.store.testClocks.get(customer.test_clock) : undefined;
  return clock ? atTime(context, clock.frozen_time) : context;
}

/** A default payment method must be attached to the customer (Stripe refuses any other). Returns its id. */
export function checkOwnPaymentMethod(context: ApiContext, customer: Customer, id: string, param = 'invoice_settings[default_payment_method]'): string {
  const paymentMethod = context.store.paymentMethods.get(id);
  if (!paymentMethod || paymentMethod.customer !== customer.id) {
    throw invalidRequest(`The customer does not have a payment method with the ID ${id}. The payment method must be attached to the customer.`, {
      code: 'resource_missing',
      param,
    });
  }
  return paymentMethod.id;
}

/** `invoice_settings[default_payment_method]`: a PaymentMethod id, '' to clear it (null), or not given (undefined). */
function readInvoiceSettings(params: FormObject): { defaultPaymentMethod?: string | null } {
  const settings = readObject(params.invoice_settings, 'invoice_settings');
  if (!settings) return {};
  onlyParams(settings, ['default_payment_method'], 'invoice_settings');
  if (settings.default_payment_method === undefined) return {};
  return { defaultPaymentMethod: readString(settings.default_payment_method, 'invoice_settings[default_payment_method]') ?? null };
}
