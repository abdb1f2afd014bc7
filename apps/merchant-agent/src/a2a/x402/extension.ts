import type { PaymentRequired, SettleResponse } from '@x402/core/types';
import type { X402ErrorCode } from './error-codes';

/**
 * The a2a-x402 extension's vocabulary (google-agentic-commerce/a2a-x402, spec v0.2 §7). Its metadata keys are the
 * same in every version; only the URI differs between sources, so the agent declares both and accepts either.
 */
export const X402_EXTENSION_URIS = {
  /** spec v0.2 */
  v02: 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2',
  /** spec v0.1, the Python x402_a2a library and x402's own A2A transport document */
  v01: 'https://github.com/google-a2a/a2a-x402/v0.1',
} as const;

export const X402_METADATA = {
  status: 'x402.payment.status',
  required: 'x402.payment.required',
  payload: 'x402.payment.payload',
  receipts: 'x402.payment.receipts',
  error: 'x402.payment.error',
} as const;

export type X402PaymentStatus = 'payment-required' | 'payment-submitted' | 'payment-rejected' | 'payment-verified' | 'payment-completed' | 'payment-failed';

/** The x402 extension URIs the caller activated (A2A-Extensions, or X-A2A-Extensions from a v0.3 client), newest first. */
export function activatedX402Uris(requested: readonly string[] | undefined): string[] {
  return [X402_EXTENSION_URIS.v02, X402_EXTENSION_URIS.v01].filter((uri) => requested?.includes(uri));
}

/** The x402 keys of an agent message's metadata: the status, and what goes with it. */
export function x402Metadata(
  status: X402PaymentStatus,
  fields: { required?: PaymentRequired; receipts?: readonly SettleResponse[]; error?: X402ErrorCode } = {},
): Record<string, unknown> {
  return {
    [X402_METADATA.status]: status,
    ...(fields.required && { [X402_METADATA.required]: fields.required }),
    ...(fields.error && { [X402_METADATA.error]: fields.error }),
    ...(fields.receipts && { [X402_METADATA.receipts]: fields.receipts }),
  };
}
