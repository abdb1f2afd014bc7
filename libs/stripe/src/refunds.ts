import type { ApiContext, Handler } from './api';
import { recordBalanceTransaction } from './balance-transactions';
import { findCharge } from './charges';
import type { RequestInfo } from './events';
import { invalidRequest, resourceMissing } from './errors';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readEnum, readInteger, readMetadata, readString } from './params';
import { findPaymentIntent } from './payment-intents';

/**
 * Refunds of a succeeded payment, by `payment_intent` or `charge`, whole (the default: whatever is left) or partial.
 * Each books a negative `refund` balance transaction (no fee back) and raises the charge's `amount_refunded`.
 */
export const createRefund: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, ['payment_intent', 'charge', 'amount', 'reason', 'metadata']);
  const paymentIntentId = readString(params.payment_intent, 'payment_intent');
  const chargeId = readString(params.charge, 'charge');
  if (!paymentIntentId && !chargeId) throw invalidRequest('One of the following params should be provided for this request: payment_intent or charge.');
  const requestedAmount = readInteger(params.amount, 'amount', { min: 1 });
  const reason = readEnum(params.reason, 'reason', ['duplicate', 'fraudulent', 'requested_by_customer']);
  const metadata = readMetadata(params.metadata);

  const paymentIntent = paymentIntentId ? findPaymentIntent(context, paymentIntentId, 'payment_intent') : undefined;
  if (paymentIntent && paymentIntent.status !== 'succeeded') {
    throw invalidRequest(`This PaymentIntent (${paymentIntent.id}) does not have a successful charge to refund.`, {
      code: 'charge_not_refundable',
      param: 'payment_intent',
    });
  }
  const charge = findCharge(context, chargeId ?? paymentIntent!.latest_charge!, chargeId ? 'charge' : 'payment_intent');
  if (paymentIntent && charge.payment_intent !== paymentIntent.id)
    throw invalidRequest(`Charge ${charge.id} does not belong to PaymentIntent ${paymentIntent.id}.`, { param: 'charge' });
  if (charge.status !== 'succeeded')
    throw invalidRequest(`Charge ${charge.id} did not succeed and cannot be refunded.`, { code: 'charge_not_refundable', param: 'charge' });

  const remaining = charge.amount - charge.amount_refunded;
  if (remaining === 0) throw invalidRequest(`Charge ${charge.id} has already been refunded.`, { code: 'charge_already_refunded' });
  const amount = requestedAmount ?? remaining;
  if (amount > remaining) {
    throw invalidRequest(
      `Refund amount (${amount}) is greater than the unrefunded amount on charge ${charge.id} (${remaining}, in ${charge.currency} minor units).`,
      { code: 'amount_too_large', param: 'amount' },
    );
  }

  const id = newId('re');
  const txn = recordBalanceTransaction(context, {
    type: 'refund',
    amount: -amount,
    fee: 0,
    currency: charge.currency,
    source: id,
    description: 'REFUND FOR PAYMENT',
  });
  const refund = context.store.refunds.add({
    id,
    object: 'refund',
    amount,
    balance_transaction: txn.id,
    charge: charge.id,
    created: context.nowSeconds(),
    currency: charge.currency,
    metadata,
    payment_intent: charge.payment_intent,
    reason: reason ?? null,
    status: context.pendingRefunds?.has(charge.payment_intent) ? 'pending' : 'succeeded',
  });
  // a pending refund counts against what is left to refund, as at Stripe; it is given back if it fails
  charge.amount_refunded += amount;
  charge.refunded = charge.amount_refunded === charge.amount;
  context.events.emit('refund.created', refund, request.info);
  if (refund.status === 'succeeded') context.events.emit('charge.refunded', charge, request.info);
  return refund;
};

/**
 * A test hook: a pending refund ends as Stripe would later end it, with `refund.updated` (and `charge.refunded` when
 * it succeeded, `refund.failed` when it failed; a failed refund's amount is refundable again).
 */
export function finishRefund(context: ApiContext, info: RequestInfo, id: string, outcome: 'succeeded' | 'failed'): void {
  const refund = context.store.refunds.get(id);
  if (!refund) throw new Error(`no refund ${id}`);
  if (refund.status !== 'pending') throw new Error(`refund ${id} is ${refund.status}, not pending`);
  const charge = findCharge(context, refund.charge, 'charge');
  refund.status = outcome;
  if (outcome === 'succeeded') {
    context.events.emit('refund.updated', refund, info, { status: 'pending' });
    context.events.emit('charge.refunded', charge, info);
    return;
  }
  refund.failure_reason = 'expired_or_canceled_card';
  charge.amount_refunded -= refund.amount;
  charge.refunded = false;
  recordBalanceTransaction(context, {
    type: 'refund_failure',
    amount: refund.amount,
    fee: 0,
    currency: refund.currency,
    source: refund.id,
    description: 'REFUND FAILURE',
  });
  context.events.emit('refund.updated', refund, info, { status: 'pending' });
  context.events.emit('refund.failed', refund, info);
}

export const retrieveRefund: Handler = (context, request) => {
  onlyParams(request.params, []);
  const refund = context.store.refunds.get(request.pathIds[0]);
  if (!refund) throw resourceMissing('refund', request.pathIds[0]);
  return refund;
};

export const listRefunds: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'payment_intent', 'charge']);
  const paymentIntent = readString(params.payment_intent, 'payment_intent');
  const charge = readString(params.charge, 'charge');
  return paginate(
    context.store.refunds.all(),
    params,
    request.path,
    (refund) => (!paymentIntent || refund.payment_intent === paymentIntent) && (!charge || refund.charge === charge),
  );
};
