import type { ApiContext, Handler } from './api';
import type { Price, RecurringInterval } from './billing-types';
import { invalidRequest, missingParam, oneOf, resourceMissing } from './errors';
import type { FormObject } from './form';
import { newId } from './ids';
import { LIST_PARAMS, paginate } from './list';
import { onlyParams, readBoolean, readCurrency, readEnum, readInteger, readMetadata, readObject, readString, readStringList, required } from './params';
import { addProduct, findProduct } from './products';

/**
 * Prices: `POST /v1/prices`, `GET /v1/prices/:id`, `GET /v1/prices` (filters `lookup_keys[]`, `product`, `active`,
 * `currency`, `type`). Recurring prices are `licensed` (per unit); metered prices are not modelled.
 */

/** Stripe's longest recurring interval, 3 years, in each unit (`year` is Stripe's; the MPP profile refuses it). */
export const MAX_INTERVAL_COUNT: Readonly<Record<RecurringInterval, number>> = { day: 1095, week: 156, month: 36, year: 3 };
const MAX_UNIT_AMOUNT = 99_999_999;

export const createPrice: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [
    'currency',
    'unit_amount',
    'recurring',
    'product',
    'product_data',
    'lookup_key',
    'transfer_lookup_key',
    'metadata',
    'nickname',
    'active',
  ]);
  const currency = required(readCurrency(params.currency, 'currency'), 'currency');
  const unitAmount = required(readInteger(params.unit_amount, 'unit_amount', { min: 0, max: MAX_UNIT_AMOUNT }), 'unit_amount');
  const recurring = readRecurring(params);
  const lookupKey = readString(params.lookup_key, 'lookup_key') ?? null;
  const transfer = readBoolean(params.transfer_lookup_key, 'transfer_lookup_key') ?? false;
  const productId = readString(params.product, 'product');
  const productData = readObject(params.product_data, 'product_data');
  if (productId && productData) throw oneOf('product', 'product_data');
  if (!productId && !productData) throw missingParam('product');
  const existing = productId ? findProduct(context, productId, 'product') : undefined;
  if (productData) onlyParams(productData, ['name', 'metadata'], 'product_data');
  const productName = productData && required(readString(productData.name, 'product_data[name]'), 'product_data[name]');
  const holder = lookupKey === null ? undefined : context.store.prices.all().find((price) => price.lookup_key === lookupKey);
  if (holder && !transfer) {
    throw invalidRequest(`A price (\`${holder.id}\`) already uses that lookup key. Pass transfer_lookup_key=true to move it to this price.`, {
      param: 'lookup_key',
    });
  }

  const product = existing ?? addProduct(context, request.info, { name: productName!, description: null, metadata: {}, active: true });
  if (holder) holder.lookup_key = null;
  const price = context.store.prices.add({
    id: newId('price'),
    object: 'price',
    active: readBoolean(params.active, 'active') ?? true,
    billing_scheme: 'per_unit',
    created: context.nowSeconds(),
    currency,
    custom_unit_amount: null,
    livemode: false,
    lookup_key: lookupKey,
    metadata: readMetadata(params.metadata),
    nickname: readString(params.nickname, 'nickname') ?? null,
    product: product.id,
    recurring,
    tax_behavior: 'unspecified',
    tiers_mode: null,
    transform_quantity: null,
    type: recurring ? 'recurring' : 'one_time',
    unit_amount: unitAmount,
    unit_amount_decimal: String(unitAmount),
  });
  context.events.emit('price.created', price, request.info);
  return price;
};

export const retrievePrice: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findPrice(context, request.pathIds[0]);
};

export const listPrices: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, [...LIST_PARAMS, 'lookup_keys', 'product', 'active', 'currency', 'type']);
  const lookupKeys = readStringList(params.lookup_keys, 'lookup_keys');
  const product = readString(params.product, 'product');
  const active = readBoolean(params.active, 'active');
  const currency = readCurrency(params.currency, 'currency');
  const type = readEnum(params.type, 'type', ['recurring', 'one_time']);
  return paginate(
    context.store.prices.all(),
    params,
    request.path,
    (price) =>
      (!lookupKeys || (price.lookup_key !== null && lookupKeys.includes(price.lookup_key))) &&
      (!product || price.product === product) &&
      (active === undefined || price.active === active) &&
      (!currency || price.currency === currency) &&
      (!type || price.type === type),
  );
};

export function findPrice(context: ApiContext, id: string, param?: string): Price {
  const price = context.store.prices.get(id);
  if (!price) throw resourceMissing('price', id, param);
  return price;
}

function readRecurring(params: FormObject): Price['recurring'] {
  const recurring = readObject(params.recurring, 'recurring');
  if (!recurring) return null;
  onlyParams(recurring, ['interval', 'interval_count', 'usage_type'], 'recurring');
  const interval = required(readEnum<RecurringInterval>(recurring.interval, 'recurring[interval]', ['day', 'week', 'month', 'year']), 'recurring[interval]');
  const intervalCount = readInteger(recurring.interval_count, 'recurring[interval_count]', { min: 1 }) ?? 1;
  if (intervalCount > MAX_INTERVAL_COUNT[interval]) {
    throw invalidRequest(
      `Invalid recurring[interval_count]: the maximum interval is 3 years (3 years, 36 months, 156 weeks or 1095 days); ${intervalCount} ${interval}s is longer.`,
      { param: 'recurring[interval_count]' },
    );
  }
  const usageType = readEnum(recurring.usage_type, 'recurring[usage_type]', ['licensed', 'metered']);
  if (usageType === 'metered')
    throw invalidRequest('The fake Stripe does not model metered prices: recurring[usage_type] must be licensed.', { param: 'recurring[usage_type]' });
  return { interval, interval_count: intervalCount, meter: null, trial_period_days: null, usage_type: 'licensed' };
}
