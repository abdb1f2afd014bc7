import type { Handler } from './api';
import { listBalanceTransactions, retrieveBalanceTransaction } from './balance-transactions';
import { listCharges, retrieveCharge } from './charges';
import { listEvents, retrieveEvent } from './events';
import { cancelPaymentIntent, confirmPaymentIntent, createPaymentIntent, listPaymentIntents, retrievePaymentIntent } from './payment-intents';
import { createRefund, listRefunds, retrieveRefund } from './refunds';
import { searchPaymentIntents } from './search';
import { createCustomer, retrieveCustomer, updateCustomer } from './customers';
import { listInvoiceLines, listInvoicePayments, listInvoices, markInvoiceUncollectible, payInvoice, retrieveInvoice, voidInvoice } from './invoices';
import { attachPaymentMethod, detachPaymentMethod, listPaymentMethods, retrievePaymentMethod } from './payment-methods';
import { createPrice, listPrices, retrievePrice } from './prices';
import { createProduct, retrieveProduct } from './products';
import { cancelSubscription, createSubscription, listSubscriptions, retrieveSubscription, updateSubscription } from './subscriptions';
import { advanceTestClock, createTestClock, listTestClocks, retrieveTestClock } from './test-clocks';
import { createGrantedToken, createIssuedToken, retrieveToken, revokeToken } from './shared-payment-tokens';

export interface Route {
  method: 'GET' | 'POST' | 'DELETE';
  /** e.g. `/v1/payment_intents/:id/confirm` */
  template: string;
  pattern: RegExp;
  handler: Handler;
}

function route(method: Route['method'], template: string, handler: Handler): Route {
  const pattern = new RegExp(`^${template.replace(/:id/g, '([^/]+)')}$`);
  return { method, template, pattern, handler };
}

/** Every endpoint the fake serves. */
export const ROUTES: readonly Route[] = [
  route('POST', '/v1/test_helpers/shared_payment/granted_tokens', createGrantedToken),
  route('POST', '/v1/test_helpers/shared_payment/granted_tokens/:id/revoke', revokeToken),
  route('GET', '/v1/shared_payment/granted_tokens/:id', retrieveToken),
  route('POST', '/v1/shared_payment/issued_tokens', createIssuedToken),
  route('GET', '/v1/shared_payment/issued_tokens/:id', retrieveToken),
  route('POST', '/v1/shared_payment/issued_tokens/:id/revoke', revokeToken),

  route('POST', '/v1/payment_intents', createPaymentIntent),
  route('GET', '/v1/payment_intents', listPaymentIntents),
  // before /:id, which would take "search" for an id
  route('GET', '/v1/payment_intents/search', searchPaymentIntents),
  route('GET', '/v1/payment_intents/:id', retrievePaymentIntent),
  route('POST', '/v1/payment_intents/:id/confirm', confirmPaymentIntent),
  route('POST', '/v1/payment_intents/:id/cancel', cancelPaymentIntent),

  route('GET', '/v1/charges', listCharges),
  route('GET', '/v1/charges/:id', retrieveCharge),

  route('POST', '/v1/refunds', createRefund),
  route('GET', '/v1/refunds', listRefunds),
  route('GET', '/v1/refunds/:id', retrieveRefund),

  route('GET', '/v1/balance_transactions', listBalanceTransactions),
  route('GET', '/v1/balance_transactions/:id', retrieveBalanceTransaction),

  route('POST', '/v1/test_helpers/test_clocks', createTestClock),
  route('GET', '/v1/test_helpers/test_clocks', listTestClocks),
  route('GET', '/v1/test_helpers/test_clocks/:id', retrieveTestClock),
  route('POST', '/v1/test_helpers/test_clocks/:id/advance', advanceTestClock),

  route('POST', '/v1/customers', createCustomer),
  route('GET', '/v1/customers/:id', retrieveCustomer),
  route('POST', '/v1/customers/:id', updateCustomer),

  route('GET', '/v1/payment_methods', listPaymentMethods),
  route('GET', '/v1/payment_methods/:id', retrievePaymentMethod),
  route('POST', '/v1/payment_methods/:id/attach', attachPaymentMethod),
  route('POST', '/v1/payment_methods/:id/detach', detachPaymentMethod),

  route('POST', '/v1/products', createProduct),
  route('GET', '/v1/products/:id', retrieveProduct),

  route('POST', '/v1/prices', createPrice),
  route('GET', '/v1/prices', listPrices),
  route('GET', '/v1/prices/:id', retrievePrice),

  route('POST', '/v1/subscriptions', createSubscription),
  route('GET', '/v1/subscriptions', listSubscriptions),
  route('GET', '/v1/subscriptions/:id', retrieveSubscription),
  route('POST', '/v1/subscriptions/:id', updateSubscription),
  route('DELETE', '/v1/subscriptions/:id', cancelSubscription),

  route('GET', '/v1/invoices', listInvoices),
  route('GET', '/v1/invoices/:id', retrieveInvoice),
  route('GET', '/v1/invoices/:id/lines', listInvoiceLines),
  route('POST', '/v1/invoices/:id/pay', payInvoice),
  route('POST', '/v1/invoices/:id/void', voidInvoice),
  route('POST', '/v1/invoices/:id/mark_uncollectible', markInvoiceUncollectible),
  route('GET', '/v1/invoice_payments', listInvoicePayments),

  route('GET', '/v1/events', listEvents),
  route('GET', '/v1/events/:id', retrieveEvent),
];

export function matchRoute(method: string, path: string): { route: Route; pathIds: string[] } | undefined {
  for (const candidate of ROUTES) {
    const match = candidate.method === method ? candidate.pattern.exec(path) : null;
    if (match) return { route: candidate, pathIds: match.slice(1).map(safeDecode) };
  }
  return undefined;
}

function safeDecode(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}
