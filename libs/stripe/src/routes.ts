import type { Handler } from './api';
import { listBalanceTransactions, retrieveBalanceTransaction } from './balance-transactions';
import { listCharges, retrieveCharge } from './charges';
import { listEvents, retrieveEvent } from './events';
import { cancelPaymentIntent, confirmPaymentIntent, createPaymentIntent, listPaymentIntents, retrievePaymentIntent } from './payment-intents';
import { createRefund, listRefunds, retrieveRefund } from './refunds';
import { searchPaymentIntents } from './search';
import { createGrantedToken, createIssuedToken, retrieveToken, revokeToken } from './shared-payment-tokens';

export interface Route {
  method: 'GET' | 'POST';
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
