/**
 * Problem types of the Payment scheme (RFC 9457 `type` URIs under https://paymentauth.org/problems/).
 * Titles and statuses follow mppx's `Errors` classes; statuses not given there follow the core draft.
 */
export const PROBLEM_BASE = 'https://paymentauth.org/problems/';

export const PROBLEMS = {
  'payment-required': { title: 'Payment Required', status: 402 },
  'payment-insufficient': { title: 'Payment Insufficient', status: 402 },
  'verification-failed': { title: 'Verification Failed', status: 402 },
  'malformed-credential': { title: 'Malformed Credential', status: 402 },
  'invalid-challenge': { title: 'Invalid Challenge', status: 402 },
  'payment-expired': { title: 'Payment Expired', status: 402 },
  'invalid-payload': { title: 'Invalid Payload', status: 402 },
  'payment-action-required': { title: 'Payment Action Required', status: 402 },
  'method-unsupported': { title: 'Method Unsupported', status: 400 },
  'bad-request': { title: 'Bad Request', status: 400 },
  'internal-payment-error': { title: 'Internal Payment Error', status: 500 },
  'session/invalid-signature': { title: 'Invalid Signature', status: 402 },
  'session/signer-mismatch': { title: 'Signer Mismatch', status: 402 },
  'session/amount-exceeds-deposit': { title: 'Amount Exceeds Deposit', status: 402 },
  'session/delta-too-small': { title: 'Delta Too Small', status: 402 },
  'session/insufficient-balance': { title: 'Insufficient Balance', status: 402 },
  'session/challenge-not-found': { title: 'Challenge Not Found', status: 402 },
  'session/channel-not-found': { title: 'Channel Not Found', status: 410 },
  'session/channel-finalized': { title: 'Channel Closed', status: 410 },
  'session/transaction-reverted': { title: 'Transaction Reverted', status: 409 },
} as const satisfies Record<string, { title: string; status: number }>;

export type ProblemCode = keyof typeof PROBLEMS;

export function problemType(code: ProblemCode): string {
  return `${PROBLEM_BASE}${code}`;
}

/** RFC 9457 body (`application/problem+json`); extension members such as `challengeId` ride along. */
export interface ProblemDetails {
  type: string;
  title: string;
  status: number;
  detail?: string;
  challengeId?: string;
  [extension: string]: unknown;
}

export function toProblemDetails(
  code: ProblemCode,
  options: { detail?: string; challengeId?: string; extensions?: Record<string, unknown> } = {},
): ProblemDetails {
  const { title, status } = PROBLEMS[code];
  return {
    ...options.extensions,
    type: problemType(code),
    title,
    status,
    ...(options.detail !== undefined && { detail: options.detail }),
    ...(options.challengeId !== undefined && { challengeId: options.challengeId }),
  };
}

/** The failure half of the result types this library returns for bad input. */
export interface MppError {
  code: ProblemCode;
  detail: string;
}

export type Result<T, E = MppError> = { ok: true; value: T } | { ok: false; error: E };

export const ok = <T>(value: T): { ok: true; value: T } => ({ ok: true, value });
export const fail = (code: ProblemCode, detail: string): { ok: false; error: MppError } => ({ ok: false, error: { code, detail } });
