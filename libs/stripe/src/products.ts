import type { ApiContext, Handler } from './api';
import type { Product } from './billing-types';
import { resourceMissing } from './errors';
import type { RequestInfo } from './events';
import { newId } from './ids';
import { onlyParams, readBoolean, readMetadata, readString, required } from './params';

/** Products: `POST /v1/products {name, description?, metadata?, active?}`, `GET /v1/products/:id`. */
export const createProduct: Handler = (context, request) => {
  const { params } = request;
  onlyParams(params, ['name', 'description', 'metadata', 'active']);
  return addProduct(context, request.info, {
    name: required(readString(params.name, 'name'), 'name'),
    description: readString(params.description, 'description') ?? null,
    metadata: readMetadata(params.metadata),
    active: readBoolean(params.active, 'active') ?? true,
  });
};

export const retrieveProduct: Handler = (context, request) => {
  onlyParams(request.params, []);
  return findProduct(context, request.pathIds[0]);
};

export function findProduct(context: ApiContext, id: string, param?: string): Product {
  const product = context.store.products.get(id);
  if (!product) throw resourceMissing('product', id, param);
  return product;
}

/** Also used by `POST /v1/prices {product_data[name]}`. */
export function addProduct(
  context: ApiContext,
  info: RequestInfo,
  fields: { name: string; description: string | null; metadata: Record<string, string>; active: boolean },
): Product {
  const now = context.nowSeconds();
  const product = context.store.products.add({
    id: newId('prod'),
    object: 'product',
    active: fields.active,
    created: now,
    default_price: null,
    description: fields.description,
    images: [],
    livemode: false,
    marketing_features: [],
    metadata: fields.metadata,
    name: fields.name,
    package_dimensions: null,
    shippable: null,
    type: 'service',
    updated: now,
    url: null,
  });
  context.events.emit('product.created', product, info);
  return product;
}
