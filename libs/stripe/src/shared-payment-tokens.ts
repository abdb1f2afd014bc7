import type { ApiContext, Handler } from './api';
import type { RequestInfo } from './events';
import { invalidRequest, resourceMissing, SPT_ERROR_CODES } from './errors';
import type { FormObject } from './form';
import { newId } from './ids';
import { onlyParams, readCurrency, readInteger, readObject, readString, required } from './params';
import type { SharedPaymentToken } from './store';
import { isTestPaymentMethod } from './test-tokens';

/**
 * Shared Payment Tokens (SPT): an agent's scoped, single-use grant to charge a payment method.
 * Seller side (test helper): POST /v1/test_helpers/shared_payment/granted_tokens, GET /v1/shared_payment/granted_tokens/:id.
 * Agent side (live-style): POST /v1/shared_payment/issued_tokens. Both mint the same kind of `spt_` token.
 */

const TOKEN_KIND = 'shared payment granted token';

export const createGrantedToken: Handler = (context, request) => mintToken(context, request.params, 'shared_payment.granted_token');
export const createIssuedToken: Handler = (context, request) => mintToken(context, request.params, 'shared_payment.issued_token');

export const retrieveToken: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findToken(context, request.pathIds[0]);
};

/** Revoking twice, or revoking a used or expired token, leaves it as it is. */
export const revokeToken: Handler = (context, request) => {
  onlyParams(request.params, []);
  const token = findToken(context, request.pathIds[0]);
  if (!token.deactivated_at) {
    token.deactivated_at = context.nowSeconds();
    token.deactivated_reason = 'revoked';
  }
  return token;
};

function mintToken(context: ApiContext, params: FormObject, object: SharedPaymentToken['object']): SharedPaymentToken {
  onlyParams(params, ['payment_method', 'usage_limits', 'seller_details']);
  const paymentMethod = required(readString(params.payment_method, 'payment_method'), 'payment_method');
  if (!isTestPaymentMethod(paymentMethod)) throw resourceMissing('PaymentMethod', paymentMethod, 'payment_method');

  const limits = required(readObject(params.usage_limits, 'usage_limits'), 'usage_limits');
  onlyParams(limits, ['currency', 'max_amount', 'expires_at'], 'usage_limits');
  const currency = required(readCurrency(limits.currency, 'usage_limits[currency]'), 'usage_limits[currency]');
  const maxAmount = required(readInteger(limits.max_amount, 'usage_limits[max_amount]', { min: 1 }), 'usage_limits[max_amount]');
  const expiresAt = required(readInteger(limits.expires_at, 'usage_limits[expires_at]'), 'usage_limits[expires_at]');
  if (expiresAt <= context.nowSeconds()) throw invalidRequest('usage_limits[expires_at] must be in the future.', { param: 'usage_limits[expires_at]' });

  const seller = readObject(params.seller_details, 'seller_details');
  if (seller) onlyParams(seller, ['network_id', 'network_business_profile'], 'seller_details');
  const networkId = readString(seller?.network_id, 'seller_details[network_id]');
  const profile = readString(seller?.network_business_profile, 'seller_details[network_business_profile]');

  return context.store.tokens.add({
    id: newId('spt'),
    object,
    created: context.nowSeconds(),
    livemode: false,
    payment_method: paymentMethod,
    usage_limits: { currency, max_amount: maxAmount, expires_at: expiresAt },
    seller_details: seller ? { ...(networkId && { network_id: networkId }), ...(profile && { network_business_profile: profile }) } : null,
    deactivated_at: null,
    deactivated_reason: null,
    usage_details: null,
  });
}

/**
 * The token by id (404, or 400 at `param` when it came as a parameter). One past its `expires_at` is shown, and kept,
 * as deactivated with reason `expired`.
 */
export function findToken(context: ApiContext, id: string, param?: string): SharedPaymentToken {
  const token = context.store.tokens.get(id);
  if (!token) throw resourceMissing(TOKEN_KIND, id, param);
  if (!token.deactivated_at && token.usage_limits.expires_at <= context.nowSeconds()) {
    token.deactivated_at = token.usage_limits.expires_at;
    token.deactivated_reason = 'expired';
  }
  return token;
}

/** Throws unless the token can pay `amount` `currency` right now: active, not expired, within its usage limits. */
export function checkTokenCanPay(context: ApiContext, id: string, param: string, payment: { amount: number; currency: string }): SharedPaymentToken {
  const token = findToken(context, id, param);
  const { currency, max_amount: maxAmount } = token.usage_limits;
  if (token.deactivated_reason === 'consumed')
    throw invalidRequest(`The shared payment granted token ${id} has already been used.`, { code: SPT_ERROR_CODES.used, param });
  if (token.deactivated_reason === 'revoked')
    throw invalidRequest(`The shared payment granted token ${id} has been revoked.`, { code: SPT_ERROR_CODES.revoked, param });
  if (token.deactivated_reason === 'expired')
    throw invalidRequest(`The shared payment granted token ${id} expired at ${token.usage_limits.expires_at}.`, { code: SPT_ERROR_CODES.expired, param });
  if (payment.currency !== currency) {
    throw invalidRequest(
      `The PaymentIntent's currency (${payment.currency}) does not match the shared payment granted token's usage_limits[currency] (${currency}).`,
      { code: SPT_ERROR_CODES.currencyMismatch, param },
    );
  }
  if (payment.amount > maxAmount) {
    throw invalidRequest(
      `The PaymentIntent's amount (${payment.amount}) is greater than the shared payment granted token's usage_limits[max_amount] (${maxAmount}).`,
      { code: SPT_ERROR_CODES.amountExceeded, param },
    );
  }
  return token;
}

/** Single use: a successful payment deactivates the token and emits `shared_payment.granted_token.used`. */
export function consumeToken(context: ApiContext, token: SharedPaymentToken, payment: { amount: number; currency: string }, info: RequestInfo): void {
  token.deactivated_at = context.nowSeconds();
  token.deactivated_reason = 'consumed';
  token.usage_details = { amount_captured: { currency: payment.currency, value: payment.amount } };
  context.events.emit('shared_payment.granted_token.used', token, info);
}
