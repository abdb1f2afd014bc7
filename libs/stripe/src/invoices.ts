import type { ApiContext, Handler } from './api';
import type { Invoice } from './billing-types';
import { customerContext, findCustomer } from './customers';
import { invalidRequest, resourceMissing } from './errors';
import { collectInvoice, defaultPaymentMethodFor, finalizeInvoice, markPaid, voidOpenInvoice } from './invoice-lifecycle';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readBoolean, readEnum, readString } from './params';
import { findPaymentMethod } from './payment-methods';

/**
 * Subscription invoices (made and collected in invoice-lifecycle.ts): `GET /v1/invoices/:id` (`expand[]=payments`),
 * `GET /v1/invoices`, `GET /v1/invoices/:id/lines`, `GET /v1/invoice_payments`,
 * `POST /v1/invoices/:id/{pay,void,mark_uncollectible}`.
 */

export const retrieveInvoice: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findInvoice(context, request.pathIds[0]);
};

export const listInvoices: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'customer', 'subscription', 'status', 'collection_method']);
  const customer = readString(params.customer, 'customer');
  const subscription = readString(params.subscription, 'subscription');
  const status = readEnum(params.status, 'status', ['draft', 'open', 'paid', 'uncollectible', 'void']);
  const collection = readEnum(params.collection_method, 'collection_method', ['charge_automatically', 'send_invoice']);
  return paginate(
    context.store.invoices.all(),
    params,
    request.path,
    (invoice) =>
      (!customer || invoice.customer === customer) &&
      (!subscription || invoice.parent.subscription_details.subscription === subscription) &&
      (!status || invoice.status === status) &&
      (!collection || invoice.collection_method === collection),
  );
};

export const listInvoiceLines: Handler = (context, request) => {
  onlyParams(request.params, LIST_PARAMS);
  const invoice = findInvoice(context, request.pathIds[0]);
  // a line has no `created`: the invoice's stands in; lines come in invoice order, which paginate's newest-first reverses
  const lines = invoice.lines.data.map((line) => ({ ...line, created: invoice.created })).reverse();
  const page = paginate(lines, request.params, request.path);
  return { ...page, data: page.data.map(({ created: _created, ...line }) => line) };
};

export const listInvoicePayments: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'invoice']);
  const invoice = readString(params.invoice, 'invoice');
  return paginate(context.store.invoicePayments.all(), params, request.path, (payment) => !invoice || payment.invoice === invoice);
};

/** Collects an open (or draft, finalized first) invoice now; a decline answers 402 after recording the attempt. */
export const payInvoice: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, ['payment_method', 'paid_out_of_band', 'off_session']);
  readBoolean(params.off_session, 'off_session');
  const invoice = findInvoice(context, request.pathIds[0]);
  const outOfBand = readBoolean(params.paid_out_of_band, 'paid_out_of_band') ?? false;
  const paymentMethodId = readString(params.payment_method, 'payment_method');
  if (invoice.status === 'paid') throw invalidRequest('Invoice is already paid.', { code: 'invoice_unexpected_status' });
  if (invoice.status === 'void') throw invalidRequest('This invoice has been voided and can no longer be paid.', { code: 'invoice_unexpected_status' });
  const customer = findCustomer(context, invoice.customer);
  const local = customerContext(context, customer);
  const paymentMethod = paymentMethodId ? findPaymentMethod(context, paymentMethodId, 'payment_method').id : defaultPaymentMethodFor(context, invoice);
  if (invoice.status === 'draft') finalizeInvoice(local, request.info, invoice);
  if (outOfBand) return markPaid(local, request.info, invoice, null);
  const attempt = collectInvoice(local, request.info, invoice, paymentMethod);
  if (attempt.kind === 'declined') throw attempt.error;
  return invoice;
};

export const voidInvoice: Handler = (context, request) => {
  onlyParams(request.params, []);
  const invoice = findInvoice(context, request.pathIds[0]);
  if (invoice.status !== 'open' && invoice.status !== 'uncollectible') throw unexpectedStatus(invoice, 'voided', 'open or uncollectible');
  return voidOpenInvoice(customerContext(context, findCustomer(context, invoice.customer)), request.info, invoice);
};

export const markInvoiceUncollectible: Handler = (context, request) => {
  onlyParams(request.params, []);
  const invoice = findInvoice(context, request.pathIds[0]);
  if (invoice.status !== 'open') throw unexpectedStatus(invoice, 'marked uncollectible', 'open');
  const local = customerContext(context, findCustomer(context, invoice.customer));
  Object.assign(invoice, { status: 'uncollectible', auto_advance: false, next_payment_attempt: null });
  invoice.status_transitions.marked_uncollectible_at = local.nowSeconds();
  context.events.emit('invoice.marked_uncollectible', invoice, request.info);
  return invoice;
};

export function findInvoice(context: ApiContext, id: string, param?: string): Invoice {
  const invoice = context.store.invoices.get(id);
  if (!invoice) throw resourceMissing('invoice', id, param);
  return invoice;
}

function unexpectedStatus(invoice: Invoice, action: string, allowed: string) {
  return invalidRequest(`This invoice can't be ${action}: its status is ${invoice.status}, and only ${allowed} invoices can be.`, {
    code: 'invoice_unexpected_status',
  });
}
