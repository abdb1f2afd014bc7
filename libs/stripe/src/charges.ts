import type { ApiContext, Handler } from './api';
import { recordBalanceTransaction, stripeFee } from './balance-transactions';
import { resourceMissing } from './errors';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readString } from './params';
import type { Charge, PaymentIntent } from './store';

/**
 * The Charge behind each confirmation attempt. A successful one books a `charge` balance transaction with Stripe's
 * fee; a failed one books nothing.
 */
export function recordCharge(context: ApiContext, paymentIntent: PaymentIntent, paymentMethod: string, failure?: { code: string; message: string }): Charge {
  const id = newId('ch');
  const { amount, currency, description } = paymentIntent;
  const txn = failure ? null : recordBalanceTransaction(context, { type: 'charge', amount, fee: stripeFee(amount), currency, source: id, description });
  return context.store.charges.add({
    id,
    object: 'charge',
    amount,
    amount_captured: failure ? 0 : amount,
    amount_refunded: 0,
    balance_transaction: txn?.id ?? null,
    captured: !failure,
    created: context.nowSeconds(),
    currency,
    description,
    failure_code: failure?.code ?? null,
    failure_message: failure?.message ?? null,
    livemode: false,
    metadata: { ...paymentIntent.metadata },
    paid: !failure,
    payment_intent: paymentIntent.id,
    payment_method: paymentMethod,
    refunded: false,
    status: failure ? 'failed' : 'succeeded',
  });
}

export function findCharge(context: ApiContext, id: string, param?: string): Charge {
  const charge = context.store.charges.get(id);
  if (!charge) throw resourceMissing('charge', id, param);
  return charge;
}

export const retrieveCharge: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findCharge(context, request.pathIds[0]);
};

export const listCharges: Handler = (context, request) => {
  onlyParams(request.params, [...LIST_PARAMS, 'payment_intent']);
  const paymentIntent = readString(request.params.payment_intent, 'payment_intent');
  return paginate(context.store.charges.all(), request.params, request.path, (charge) => !paymentIntent || charge.payment_intent === paymentIntent);
};
