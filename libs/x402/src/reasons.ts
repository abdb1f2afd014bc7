/**
 * Reason strings, character for character those of @x402/core and @x402/evm 2.27 (which keep them identical
 * to the Go SDK). Clients treat them as opaque strings, so never rename one.
 */
export const X402Reason = {
  // generic (x402 specification §9)
  invalidX402Version: 'invalid_x402_version',
  invalidScheme: 'invalid_scheme',
  unsupportedScheme: 'unsupported_scheme',
  invalidNetwork: 'invalid_network',
  invalidPayload: 'invalid_payload',
  invalidPaymentRequirements: 'invalid_payment_requirements',
  unexpectedVerifyError: 'unexpected_verify_error',
  unexpectedSettleError: 'unexpected_settle_error',
  invalidTransactionState: 'invalid_transaction_state',
  settlementPending: 'settlement_pending',
  unsupportedPayloadType: 'unsupported_payload_type',
  // exact on EVM
  assetNotDeployedContract: 'asset_not_deployed_contract',
  exactEvmScheme: 'invalid_exact_evm_scheme',
  exactEvmNetworkMismatch: 'invalid_exact_evm_network_mismatch',
  exactEvmMissingEip712Domain: 'invalid_exact_evm_missing_eip712_domain',
  exactEvmRecipientMismatch: 'invalid_exact_evm_recipient_mismatch',
  exactEvmSignature: 'invalid_exact_evm_signature',
  exactEvmValidBefore: 'invalid_exact_evm_payload_authorization_valid_before',
  exactEvmValidAfter: 'invalid_exact_evm_payload_authorization_valid_after',
  exactEvmAuthorizationValue: 'invalid_exact_evm_authorization_value',
  exactEvmValueMismatch: 'invalid_exact_evm_payload_authorization_value_mismatch',
  exactEvmTransactionFailed: 'invalid_exact_evm_transaction_failed',
  exactEvmTransferEventMismatch: 'invalid_exact_evm_transfer_event_mismatch',
  exactEvmFailedToParseSignature: 'invalid_exact_evm_failed_to_parse_signature',
  exactEvmTokenNameMismatch: 'invalid_exact_evm_token_name_mismatch',
  exactEvmTokenVersionMismatch: 'invalid_exact_evm_token_version_mismatch',
  exactEvmEip3009NotSupported: 'invalid_exact_evm_eip3009_not_supported',
  exactEvmNonceAlreadyUsed: 'invalid_exact_evm_nonce_already_used',
  exactEvmInsufficientBalance: 'invalid_exact_evm_insufficient_balance',
  exactEvmSimulationFailed: 'invalid_exact_evm_transaction_simulation_failed',
  exactEvmUndeployedSmartWallet: 'invalid_exact_evm_payload_undeployed_smart_wallet',
  eip6492FactoryNotAllowed: 'eip6492_factory_not_allowed',
  smartWalletDeploymentFailed: 'smart_wallet_deployment_failed',
  // ours: the facilitator's own policy, not a protocol reason of @x402/evm
  settlementGasExceedsCap: 'settlement_gas_exceeds_cap',
  payToNotAllowed: 'pay_to_not_allowed',
} as const;

export type X402ReasonCode = (typeof X402Reason)[keyof typeof X402Reason];
