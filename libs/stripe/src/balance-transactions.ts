import type { ApiContext, Handler } from './api';
import { resourceMissing } from './errors';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readCurrency, readString } from './params';
import type { BalanceTransaction } from './store';

/** Stripe's standard US card pricing, 2.9% + 30¢, in the charge's minor units. Refunds carry no fee. */
export function stripeFee(amount: number): number {
  return Math.round(amount * 0.029) + 30;
}

/** Money moving in or out of the balance; available at once (the fake has no payouts schedule). */
export function recordBalanceTransaction(
  context: ApiContext,
  entry: { type: BalanceTransaction['type']; amount: number; fee: number; currency: string; source: string; description: string | null },
): BalanceTransaction {
  const created = context.nowSeconds();
  return context.store.balanceTransactions.add({
    id: newId('txn'),
    object: 'balance_transaction',
    amount: entry.amount,
    available_on: created,
    created,
    currency: entry.currency,
    description: entry.description,
    exchange_rate: null,
    fee: entry.fee,
    fee_details: entry.fee
      ? [{ amount: entry.fee, application: null, currency: entry.currency, description: 'Stripe processing fees', type: 'stripe_fee' }]
      : [],
    net: entry.amount - entry.fee,
    reporting_category: entry.type,
    source: entry.source,
    status: 'available',
    type: entry.type,
  });
}

export const retrieveBalanceTransaction: Handler = (context, request) => {
  onlyParams(request.params, []);
  const txn = context.store.balanceTransactions.get(request.pathIds[0]);
  if (!txn) throw resourceMissing('balance transaction', request.pathIds[0]);
  return txn;
};

export const listBalanceTransactions: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'type', 'source', 'currency']);
  const type = readString(params.type, 'type');
  const source = readString(params.source, 'source');
  const currency = readCurrency(params.currency, 'currency');
  return paginate(
    context.store.balanceTransactions.all(),
    params,
    request.path,
    (txn) => (!type || txn.type === type) && (!source || txn.source === source) && (!currency || txn.currency === currency),
  );
};
