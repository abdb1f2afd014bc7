/** Facilitator response bodies, as @x402/core 2.27's HTTPFacilitatorClient parses them. */
export interface VerifyResponse {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer?: string;
}

export interface SettleResponse {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer?: string;
  /** The transaction hash; "" when nothing was sent. */
  transaction: string;
  network: string;
  /** upto: the amount actually charged, in atomic units ("0" when nothing was). */
  amount?: string;
}

export interface SupportedKind {
  x402Version: number;
  scheme: string;
  network: string;
  extra?: Record<string, unknown>;
}

export interface SupportedResponse {
  kinds: SupportedKind[];
  extensions: string[];
  signers: Record<string, string[]>;
}
