import type { Address, Hex, TransactionReceipt } from 'viem';
import type { ContractCall } from '@mp/chain';
import type { TransferAuthorization } from '@mp/money';
import type { ReceiptJudgement, SettledTransfer } from './receipt-judgement';

/**
 * Why the rail refuses an authorization or a settlement failed, in the rail's own terms. The protocols map these to
 * their answers (x402 reasons, MPP problems); the payment records keep them as x402 reasons (recordedReason).
 */
export type TransferFault =
  /** The authorization's network or token is not (or no longer) served here. */
  | 'network_not_served'
  | 'asset_not_accepted'
  | 'signature_invalid'
  | 'signature_unparseable'
  /** A counterfactual payer's wallet factory is not on the network's allowlist. */
  | 'factory_not_allowed'
  | 'recipient_mismatch'
  /** validBefore leaves too little time to settle. */
  | 'expires_too_soon'
  | 'not_yet_valid'
  | 'value_mismatch'
  | 'asset_not_contract'
  | 'token_name_mismatch'
  | 'token_version_mismatch'
  | 'eip3009_unsupported'
  /** The authorization's nonce is used or canceled. */
  | 'nonce_used'
  | 'insufficient_balance'
  | 'simulation_failed'
  /** A settlement transaction reverted, or a send failed for a reason the chain did not name. */
  | 'transaction_failed'
  /** A mined settlement does not show the authorized transfer. */
  | 'transfer_mismatch'
  /** Our side cannot send: no signer configured, or a hot wallet that cannot pay the gas. Never the payer's fault. */
  | 'facilitator_unable';

export type TransferVerdict = { ok: true } | { ok: false; fault: TransferFault; message: string };

export type SettlementCallResult = { ok: true; call: ContractCall } | { ok: false; fault: TransferFault; message: string };

/** Who took an authorization on chain: nobody yet, a transaction, or the payer's cancellation. */
export type AuthorizationUse = { used: false } | { used: true; canceled: boolean; transaction: Hex | undefined };

/** The chain (an RPC node) could not be reached: no verdict, never guessed. Thrown by every chain-facing method. */
export class ChainUnavailableError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ChainUnavailableError';
  }
}

/**
 * The EIP-3009 rail: everything that touches a transferWithAuthorization on chain, for every protocol that carries
 * one. It answers in verdicts and faults, never in a protocol's wire shape.
 */
export interface TransferAuthorizationRail {
  /**
   * Signature, recipient, time window, amount, token and, with `simulate`, one eth_call of the transfer (settling
   * skips it: estimating the gas simulates the same call; a transfer that simulates has a signature the token
   * accepts, so ours is then checked only when something refuses the payment). No side effects.
   */
  verify(authorization: TransferAuthorization, options: { simulate: boolean }): Promise<TransferVerdict>;
  /** The settlement transaction with its raw gas estimate (which simulates it); the gas margin is added once, at signing. */
  settlementCall(authorization: TransferAuthorization): Promise<SettlementCallResult>;
  /**
   * verify without its simulation, then settlementCall: the same outcome, but the signature is checked by the
   * settlement call's simulation (the token's own check), and by us only when the payment is refused.
   */
  verifiedSettlementCall(authorization: TransferAuthorization): Promise<SettlementCallResult>;
  /**
   * settlementCall for many plain authorizations (ordinary signatures, not ERC-6492) of one network at once: one
   * eth_call of them all in a Multicall3 aggregate3 (each allowed to fail) and one gas estimate of the ones that pass.
   * Each answer is the call with its share of the gas (as if estimated alone), or undefined: that one failed, or needs
   * settlementCall's own checks and diagnosis.
   */
  settlementCalls(authorizations: readonly TransferAuthorization[]): Promise<(ContractCall | undefined)[]>;
  /**
   * Settlement calls recorded earlier, simulated again one after another in one round trip (a batch whose claims'
   * estimates have aged): the gas of each as a transaction of its own, or undefined where it would fail now, or where
   * the node cannot simulate them together (each then takes its own estimate, which says why).
   */
  estimateEach(network: string, calls: readonly { to: Address; data: Hex }[]): Promise<(bigint | undefined)[]>;
  /** Why settling at `estimate` gas would cost more than the token's gas cap allows, or undefined when it would not. */
  gasCapExceeded(authorization: TransferAuthorization, estimate: bigint): Promise<string | undefined>;
  /** Whether the chain has used (or the payer canceled) an authorization, and by which transaction. */
  authorizationUse(network: string, transfer: SettledTransfer): Promise<AuthorizationUse>;
  /** Whether a mined transaction carried the authorized transfer, and if not, why. */
  judgeReceipt(transfer: SettledTransfer, receipt: TransactionReceipt): ReceiptJudgement;
  /** The fault behind an error from estimating or sending a settlement. */
  sendFault(error: unknown): TransferFault;
}

export const TRANSFER_AUTHORIZATION_RAIL = Symbol('TRANSFER_AUTHORIZATION_RAIL');
