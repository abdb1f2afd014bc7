/** Facilitator response bodies, as @x402/core 2.27's HTTPFacilitatorClient parses them. */
export interface VerifyResponse {
  isValid: boolean;
  invalidReason?: string;
  invalidMessage?: string;
  payer?: string;
  /** Scheme-specific facts the client reads (batch-settlement: the channel's state). */
  extra?: Record<string, unknown>;
}

export interface SettleResponse {
  success: boolean;
  errorReason?: string;
  errorMessage?: string;
  payer?: string;
  /** The transaction hash; "" when nothing was sent. */
  transaction: string;
  network: string;
  /** Atomic units actually charged, where the scheme charges less than the requirements' amount (`upto`). */
  amount?: string;
  /** Scheme-specific facts the client reads (batch-settlement: the channel's state). */
  extra?: Record<string, unknown>;
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
