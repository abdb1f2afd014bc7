import { ecdsaRecover } from 'secp256k1';
import { hexToBytes, type Address, type Hex } from 'viem';
import { keccak256 } from './keccak';

const HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

/**
 * Recovers the signer of a 65-byte (r, s, v) signature over a 32-byte digest with native libsecp256k1, about 30×
 * faster than pure JS. Applies the same rules as OpenZeppelin's ECDSA.recover (which the token runs on chain):
 * v is 27/28 (or 0/1), s is in the lower half order. Returns undefined for anything that cannot verify.
 */
export function recoverSigner(digest: Hex, signature: Hex): Address | undefined {
  if (signature.length !== 132) return undefined;
  const bytes = hexToBytes(signature);
  const v = bytes[64];
  const recoveryId = v >= 27 ? v - 27 : v;
  if (recoveryId !== 0 && recoveryId !== 1) return undefined;
  const s = BigInt(`0x${signature.slice(66, 130)}`);
  if (s === 0n || s > HALF_ORDER) return undefined;
  try {
    const publicKey = ecdsaRecover(bytes.subarray(0, 64), recoveryId, hexToBytes(digest), false);
    const hash = keccak256(publicKey.subarray(1));
    return `0x${hash.slice(26)}` as Address;
  } catch {
    return undefined;
  }
}
