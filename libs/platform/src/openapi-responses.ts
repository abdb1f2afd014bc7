/**
 * The blocks that the `@ApiDoc` of almost every route repeats, written once: problem and JSON responses, the no-store
 * header, the merchant API key security and UUID path parameters. Each is plain data, so a route spreads it and
 * overrides what it says differently.
 */

/** A response's headers, and the example (or named examples) of its body. */
export interface ResponseExtras {
  headers?: Record<string, object>;
  example?: unknown;
  examples?: Record<string, object>;
}

/** An RFC 9457 `application/problem+json` response: the Problem schema every document has. */
export function problemResponse(description: string, { headers, ...media }: ResponseExtras = {}) {
  return { description, ...(headers && { headers }), content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' }, ...media } } };
}

/** An `application/json` response; a body the document does not describe further is any object. */
export function jsonResponse(description: string, schema: object = { type: 'object' }, { headers, ...media }: ResponseExtras = {}) {
  return { description, ...(headers && { headers }), content: { 'application/json': { schema, ...media } } };
}

/** `Cache-Control: no-store`, on answers with a merchant's data or secrets: no proxy or browser may keep them. */
export const NO_STORE_HEADERS = { 'Cache-Control': { schema: { type: 'string', const: 'no-store' } } };

/** Either form of the merchant API key (the securitySchemes of MERCHANT_API_KEY_SCHEMES). */
export const MERCHANT_API_KEY_SECURITY = [{ merchantApiKey: [] }, { merchantApiKeyHeader: [] }];

export function uuidPathParameter(name: string, description: string) {
  return { name, in: 'path', required: true, schema: { type: 'string', format: 'uuid' }, description };
}
