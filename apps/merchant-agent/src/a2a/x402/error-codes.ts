import { X402Reason } from '@mp/x402';

/**
 * `x402.payment.error` codes: the a2a-x402 spec's (v0.2 §9.1), plus INVALID_PAYLOAD, ours, for a payload that is
 * malformed or is not a payment of this task's offer (scheme, asset, recipient, resource) and fits none of theirs.
 */
export type X402ErrorCode =
  | 'INSUFFICIENT_FUNDS'
  | 'INVALID_SIGNATURE'
  | 'EXPIRED_PAYMENT'
  | 'DUPLICATE_NONCE'
  | 'NETWORK_MISMATCH'
  | 'INVALID_AMOUNT'
  | 'SETTLEMENT_FAILED'
  | 'INVALID_PAYLOAD';

/** x402 reasons (the facilitator's, and our own checks', which use the same strings) by the code a buyer acts on. */
const CODES: Record<Exclude<X402ErrorCode, 'INVALID_PAYLOAD'>, readonly string[]> = {
  INSUFFICIENT_FUNDS: ['insufficient_funds', X402Reason.exactEvmInsufficientBalance],
  INVALID_SIGNATURE: [
    X402Reason.exactEvmSignature,
    X402Reason.exactEvmFailedToParseSignature,
    X402Reason.exactEvmTokenNameMismatch,
    X402Reason.exactEvmTokenVersionMismatch,
    X402Reason.exactEvmMissingEip712Domain,
    X402Reason.exactEvmUndeployedSmartWallet,
    X402Reason.eip6492FactoryNotAllowed,
  ],
  EXPIRED_PAYMENT: [X402Reason.exactEvmValidBefore, X402Reason.exactEvmValidAfter],
  DUPLICATE_NONCE: [X402Reason.exactEvmNonceAlreadyUsed],
  NETWORK_MISMATCH: [X402Reason.invalidNetwork, X402Reason.exactEvmNetworkMismatch],
  INVALID_AMOUNT: [X402Reason.exactEvmAuthorizationValue, X402Reason.exactEvmValueMismatch],
  SETTLEMENT_FAILED: [
    X402Reason.unexpectedVerifyError,
    X402Reason.unexpectedSettleError,
    X402Reason.settlementPending,
    X402Reason.exactEvmTransactionFailed,
    X402Reason.exactEvmTransferEventMismatch,
    X402Reason.exactEvmSimulationFailed,
    X402Reason.smartWalletDeploymentFailed,
    X402Reason.settlementGasExceedsCap,
  ],
};

const BY_REASON = new Map<string, X402ErrorCode>(
  Object.entries(CODES).flatMap(([code, reasons]) => reasons.map((reason) => [reason, code as X402ErrorCode] as const)),
);

export function errorCodeFor(reason: string | undefined): X402ErrorCode {
  return (reason && BY_REASON.get(reason)) || 'INVALID_PAYLOAD';
}
