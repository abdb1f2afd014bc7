import type { Address, Hex } from 'viem';

/** A relayed open as the escrow takes it: the channel's terms and the payer's EIP-3009 ReceiveWithAuthorization of the deposit. */
export interface RelayedOpen {
  terms: { payer: Address; payee: Address; token: Address; salt: Hex; authorizedSigner: Address };
  deposit: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: Hex;
  signature: Hex;
}

/** SessionEscrow.openWithAuthorization's arguments, in the contract's order (the call the payee, or the facilitator, submits). */
export function openWithAuthorizationArgs(open: RelayedOpen) {
  const { terms, deposit, validAfter, validBefore, nonce, signature } = open;
  return [terms.payee, terms.token, deposit, terms.salt, terms.authorizedSigner, terms.payer, validAfter, validBefore, nonce, signature] as const;
}
