/** The `error` object of a Stripe API error response. */
export interface StripeErrorBody {
  type: 'invalid_request_error' | 'card_error' | 'idempotency_error' | 'api_error';
  message: string;
  code?: string;
  param?: string;
  decline_code?: string;
  doc_url?: string;
  charge?: string;
  payment_intent?: unknown;
}

/** Thrown by handlers; the server turns it into `{ error: body }` with this status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly body: StripeErrorBody,
  ) {
    super(body.message);
  }
}

/**
 * Error codes for Shared Payment Tokens. Stripe has not published the codes it uses for these cases, so these are
 * ours, named after the token field they concern. All come as HTTP 400 `invalid_request_error`, param = where the token
 * was given (`shared_payment_granted_token` or `payment_method_data[shared_payment_granted_token]`).
 */
export const SPT_ERROR_CODES = {
  /** the token already paid for a PaymentIntent (single use) */
  used: 'shared_payment_granted_token_used',
  /** the token was revoked by the issuer or a test helper */
  revoked: 'shared_payment_granted_token_revoked',
  /** `usage_limits.expires_at` has passed */
  expired: 'shared_payment_granted_token_expired',
  /** the PaymentIntent's currency is not `usage_limits.currency` */
  currencyMismatch: 'shared_payment_granted_token_currency_mismatch',
  /** the PaymentIntent's amount is above `usage_limits.max_amount` */
  amountExceeded: 'shared_payment_granted_token_amount_exceeded',
} as const;

export function invalidRequest(message: string, extra: { code?: string; param?: string } = {}): ApiError {
  return new ApiError(400, withDocUrl({ type: 'invalid_request_error', message, ...extra }));
}

/** `No such <what>: '<id>'`. 404 for an id in the path, 400 for an id given as a parameter (as Stripe does). */
export function resourceMissing(what: string, id: string, param?: string): ApiError {
  const body = withDocUrl({ type: 'invalid_request_error', code: 'resource_missing', message: `No such ${what}: '${id}'`, param });
  return new ApiError(param ? 400 : 404, body);
}

export function missingParam(param: string): ApiError {
  return invalidRequest(`Missing required param: ${param}.`, { code: 'parameter_missing', param });
}

export function unknownParam(param: string): ApiError {
  return invalidRequest(`Received unknown parameter: ${param}`, { code: 'parameter_unknown', param });
}

export function oneOf(...params: string[]): ApiError {
  return invalidRequest(`You may only specify one of these parameters: ${params.join(', ')}.`, { param: params[0] });
}

/** A decline: HTTP 402, the PaymentIntent (in its failed state) nested in the error. */
export function cardError(body: Omit<StripeErrorBody, 'type'>): ApiError {
  return new ApiError(402, withDocUrl({ type: 'card_error', ...body }));
}

function withDocUrl(body: StripeErrorBody): StripeErrorBody {
  const clean = Object.fromEntries(Object.entries(body).filter(([, value]) => value !== undefined)) as unknown as StripeErrorBody;
  return body.code ? { ...clean, doc_url: `https://stripe.com/docs/error-codes/${body.code.replace(/_/g, '-')}` } : clean;
}
