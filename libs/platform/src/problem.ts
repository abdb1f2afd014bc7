/**
 * Errors are data: a stable code, mapped to an HTTP status in exactly this one table, and rendered as
 * RFC 9457 problem+json. Protocol endpoints answer in their protocol's own shape instead; this is for the rest.
 */
export const PROBLEM_STATUS = {
  validation_failed: 400,
  malformed_json: 400,
  json_too_deep: 400,
  webhook_signature_invalid: 400,
  webhook_destination_not_allowed: 400,
  event_too_old: 400,
  event_in_future: 400,
  unauthorized: 401,
  payer_proof_invalid: 401,
  insufficient_balance: 402,
  not_found: 404,
  method_not_allowed: 405,
  payment_identifier_conflict: 409,
  settlement_in_progress: 409,
  reconciliation_in_progress: 409,
  plan_conflict: 409,
  meter_conflict: 409,
  refund_idempotency_conflict: 409,
  subscription_ended: 409,
  merchant_disabled: 409,
  balance_conflict: 409,
  hold_closed: 409,
  session_charge_conflict: 409,
  webhook_not_configured: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  rate_limited: 429,
  internal_error: 500,
  upstream_unavailable: 503,
} as const;

export type ProblemCode = keyof typeof PROBLEM_STATUS;

const TITLES: Record<ProblemCode, string> = {
  validation_failed: 'The request body is invalid',
  malformed_json: 'The request body is not valid JSON',
  json_too_deep: 'The request body nests too deeply',
  webhook_signature_invalid: 'The webhook signature does not verify',
  webhook_destination_not_allowed: 'Webhooks may not go to this address',
  event_too_old: 'A usage event is older than 35 days',
  event_in_future: 'A usage event lies more than 5 minutes in the future',
  unauthorized: 'Authentication required',
  payer_proof_invalid: "The payer's proof does not hold",
  insufficient_balance: 'The prepaid balance is too low; top it up',
  not_found: 'Not found',
  method_not_allowed: 'Method not allowed',
  payment_identifier_conflict: 'Payment identifier reused with a different payment',
  settlement_in_progress: 'Settlement of this payment is in progress',
  reconciliation_in_progress: 'Another reconciliation run of this merchant is in progress',
  plan_conflict: 'The plan conflicts with an existing plan',
  meter_conflict: 'The meter key is taken by another definition',
  refund_idempotency_conflict: 'Refund idempotency key reused with a different request',
  subscription_ended: 'The subscription has ended',
  merchant_disabled: 'The merchant is disabled',
  balance_conflict: 'The id is taken by another balance operation',
  hold_closed: 'The hold was already captured, released or expired',
  session_charge_conflict: 'The chargeId was used on this channel with another amount',
  webhook_not_configured: 'The merchant has no webhook URL',
  payload_too_large: 'The request body is too large',
  unsupported_media_type: 'Unsupported media type',
  rate_limited: 'Too many requests',
  internal_error: 'Internal error',
  upstream_unavailable: 'An upstream service is unavailable',
};

export interface InvalidParam {
  name: string;
  reason: string;
}

export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  code: ProblemCode;
  detail: string;
  instance?: string;
  invalidParams?: InvalidParam[];
  [extension: string]: unknown;
}

export class ProblemError extends Error {
  constructor(
    readonly code: ProblemCode,
    detail: string,
    readonly extensions: { invalidParams?: InvalidParam[]; [key: string]: unknown } = {},
  ) {
    super(detail);
    this.name = 'ProblemError';
  }

  get status(): number {
    return PROBLEM_STATUS[this.code];
  }
}

export function problemBody(code: ProblemCode, detail: string, instance?: string, extensions: Record<string, unknown> = {}): ProblemDetails {
  return {
    type: `urn:problem:${code}`,
    title: TITLES[code],
    status: PROBLEM_STATUS[code],
    code,
    detail,
    ...(instance ? { instance } : {}),
    ...extensions,
  };
}

export const PROBLEM_CONTENT_TYPE = 'application/problem+json; charset=utf-8';

const UNAVAILABLE_CODES = new Set(['P1001', 'P1002', 'P1008', 'P1017', 'P2024', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', '57P01', '57P03']);
const UNAVAILABLE_MESSAGE =
  /ECONNREFUSED|ECONNRESET|Connection terminated|terminating connection|Can't reach database|timeout exceeded when trying to connect|connection is closed|Connection is closed|server (has )?closed the connection/i;

/**
 * Whether an error means a backing service (PostgreSQL, Redis) is unreachable rather than that the request or
 * our code is wrong: such errors are answered 503 upstream_unavailable, and the client may retry.
 */
export function isUnavailableError(error: unknown): boolean {
  for (let e: unknown = error, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === 'string' && UNAVAILABLE_CODES.has(code)) return true;
    if (e instanceof Error && UNAVAILABLE_MESSAGE.test(e.message)) return true;
  }
  return false;
}
