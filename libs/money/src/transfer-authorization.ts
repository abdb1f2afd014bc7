/** A 0x-prefixed hex string (an address, a nonce, a signature); the same type as viem's Address and Hex. */
export type HexString = `0x${string}`;

/**
 * One EIP-3009 `transferWithAuthorization`, whichever protocol carried it (an x402 `exact` payload, an MPP `evm`
 * credential): the payer's signed permission to move `value` of one token to `to`, and what the payee asked for.
 * The protocols decode into it; the EIP-3009 rail verifies and settles it. Addresses are checksummed, the nonce
 * lowercase.
 */
export interface TransferAuthorization {
  /** The CAIP-2 id of the network, as this facilitator configures it (e.g. eip155:8453). */
  network: string;
  /** The token contract, as this facilitator configures it. */
  asset: HexString;
  from: HexString;
  to: HexString;
  value: bigint;
  validAfter: bigint;
  validBefore: bigint;
  nonce: HexString;
  /** As presented: an EOA's 65 bytes, a contract wallet's ERC-1271 bytes, or either wrapped in ERC-6492. */
  signature: HexString;
  /** The token's EIP-712 domain the payer signed over, as the payer's side names it (checked against the token's). */
  domain: { name: string; version: string };
  /** What the payee asked for: the authorization must pay exactly `amount` to `payTo` (as the request wrote it). */
  requirement: { payTo: string; amount: bigint };
}

/**
 * EIP-3009 `receiveWithAuthorization`'s EIP-712 type, signed under the token's own domain: how a payer funds a
 * contract that pulls the tokens itself (an MPP session escrow's relayed open or top-up, an x402 batch-settlement
 * deposit collector).
 */
export const receiveWithAuthorizationTypes = {
  ReceiveWithAuthorization: [
    { name: 'from', type: 'address' },
    { name: 'to', type: 'address' },
    { name: 'value', type: 'uint256' },
    { name: 'validAfter', type: 'uint256' },
    { name: 'validBefore', type: 'uint256' },
    { name: 'nonce', type: 'bytes32' },
  ],
} as const;
