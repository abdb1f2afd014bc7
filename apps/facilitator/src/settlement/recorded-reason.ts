import { X402Reason, type X402ReasonCode } from '@mp/x402';
import type { TransferFault } from '../eip3009/transfer-authorization.rail';

/**
 * The reason a payment record (and so the payments API, webhooks and x402 answers) gives for a rail's fault: x402's
 * reason codes, the vocabulary the records have always kept. Defined once, here.
 */
const REASONS: Record<TransferFault, X402ReasonCode> = {
  network_not_served: X402Reason.invalidNetwork,
  asset_not_accepted: X402Reason.invalidPaymentRequirements,
  signature_invalid: X402Reason.exactEvmSignature,
  signature_unparseable: X402Reason.exactEvmFailedToParseSignature,
  factory_not_allowed: X402Reason.eip6492FactoryNotAllowed,
  recipient_mismatch: X402Reason.exactEvmRecipientMismatch,
  expires_too_soon: X402Reason.exactEvmValidBefore,
  not_yet_valid: X402Reason.exactEvmValidAfter,
  value_mismatch: X402Reason.exactEvmValueMismatch,
  asset_not_contract: X402Reason.assetNotDeployedContract,
  token_name_mismatch: X402Reason.exactEvmTokenNameMismatch,
  token_version_mismatch: X402Reason.exactEvmTokenVersionMismatch,
  eip3009_unsupported: X402Reason.exactEvmEip3009NotSupported,
  nonce_used: X402Reason.exactEvmNonceAlreadyUsed,
  insufficient_balance: X402Reason.exactEvmInsufficientBalance,
  simulation_failed: X402Reason.exactEvmSimulationFailed,
  transaction_failed: X402Reason.exactEvmTransactionFailed,
  transfer_mismatch: X402Reason.exactEvmTransferEventMismatch,
  facilitator_unable: X402Reason.unexpectedSettleError,
};

export function recordedReason(fault: TransferFault): X402ReasonCode {
  return REASONS[fault];
}
