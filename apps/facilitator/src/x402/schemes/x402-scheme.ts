import type { PaymentRequest, SettleResponse, SupportedKind, VerifyResponse } from '@mp/x402';

/**
 * One x402 scheme the facilitator serves (`exact`, …). The service has decoded the request and applied the checks
 * every scheme shares (the envelope, the merchant's declared payTo); a scheme answers in the protocol's own shape and
 * throws a ProblemError only for a payload it cannot read at all (a 400).
 */
export interface X402Scheme {
  /** The `scheme` of the payment requirements this handler serves. */
  readonly scheme: string;
  /** `merchantId`: the caller's merchant (from its API key), or null in open mode without a key. */
  verify(request: PaymentRequest, merchantId: string | null): Promise<VerifyResponse>;
  settle(request: PaymentRequest, merchantId: string | null): Promise<SettleResponse>;
  /** What `/supported` lists for this scheme. */
  kinds(): SupportedKind[];
  /** The payer the payload names, read without checking it: for the answers that refuse it before the scheme runs. */
  payer?(request: PaymentRequest): string | undefined;
}

/** The served schemes, in the order `/supported` lists them. */
export const X402_SCHEMES = Symbol('X402_SCHEMES');
