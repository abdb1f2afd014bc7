import { getAddress } from 'viem';

/** How many receiving addresses one merchant may declare (across networks). */
export const MAX_RECEIVING_ADDRESSES = 100;

const EVM_NETWORK = /^eip155:[1-9][0-9]{0,19}$/;
const EVM_ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ZERO_ADDRESS = '0x0000000000000000000000000000000000000000';

/** An address a merchant is paid at on one network: CAIP-2 network, EIP-55 checksummed address. */
export interface ReceivingAddress {
  network: string;
  address: string;
}

export type ReceivingAddressCheck = { ok: true; value: ReceivingAddress } | { ok: false; problems: { name: string; reason: string }[] };

/**
 * Validates a declared address: an `eip155:<chainId>` network and a non-zero 20-byte hex address in any case (a
 * mixed-case one must carry a valid checksum, so a typo in a checksummed address is caught). The address comes back
 * checksummed; storage and comparisons use its lowercase form.
 */
export function receivingAddress(network: unknown, address: unknown): ReceivingAddressCheck {
  const problems: { name: string; reason: string }[] = [];
  if (typeof network !== 'string' || !EVM_NETWORK.test(network))
    problems.push({ name: 'network', reason: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' });
  let checksummed: string | undefined;
  if (typeof address !== 'string' || !EVM_ADDRESS.test(address)) {
    problems.push({ name: 'address', reason: 'must be a 0x-prefixed 20-byte hex address' });
  } else if (address.toLowerCase() === ZERO_ADDRESS) {
    problems.push({ name: 'address', reason: 'the zero address cannot receive payments' });
  } else {
    checksummed = getAddress(address.toLowerCase());
    const mixedCase = address.slice(2) !== address.slice(2).toLowerCase() && address.slice(2) !== address.slice(2).toUpperCase();
    if (mixedCase && address !== checksummed) problems.push({ name: 'address', reason: `has a wrong EIP-55 checksum (did you mean ${checksummed}?)` });
  }
  if (problems.length || checksummed === undefined) return { ok: false, problems };
  return { ok: true, value: { network: network as string, address: checksummed } };
}

/** True for something that can be compared as an EVM address (the scheme judges malformed ones itself). */
export function isEvmAddress(value: string): boolean {
  return EVM_ADDRESS.test(value);
}
