import { encodeFunctionData, isAddress, parseSignature, toFunctionSelector, type Hex } from 'viem';

import { eip3009Abi } from './abi';
import type { TransferWithAuthorizationMessage } from './eip3009-digest';

const VRS_SELECTOR = toFunctionSelector('transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,uint8,bytes32,bytes32)');
const BYTES_SELECTOR = toFunctionSelector('transferWithAuthorization(address,address,uint256,uint256,uint256,bytes32,bytes)');
const UINT256_MAX = (1n << 256n) - 1n;
const SECP256K1_N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
const BYTES32 = /^0x[0-9a-fA-F]{64}$/;
const EVEN_HEX = /^0x(?:[0-9a-fA-F]{2})*$/;
/** Where the `bytes` overload's signature starts: after its seven head words. */
const SIGNATURE_OFFSET = 7n * 32n;

/**
 * The calldata of EIP-3009 `transferWithAuthorization`: the (v, r, s) overload for a 65-byte signature (v 0/1 read as
 * 27/28), the `bytes` overload for any other (ERC-1271 wallets). The same hex as viem's
 * `encodeFunctionData({ abi: eip3009Abi, … })`, written out by hand because viem looks the overload up by its
 * arguments on every call: 35 µs against 2–3 here, on every /verify and /settle (bench/README.md, "Pipelined
 * statements", the verify profile). Arguments outside the ABI's types go to viem, which throws as it always did.
 */
export function transferWithAuthorizationCalldata(args: TransferWithAuthorizationMessage, signature: Hex): Hex {
  const head = headWords(args);
  if (head === undefined || !EVEN_HEX.test(signature)) return viaViem(args, signature);
  if (signature.length === 132) {
    const [r, s, v] = [signature.slice(2, 66).toLowerCase(), signature.slice(66, 130).toLowerCase(), Number.parseInt(signature.slice(130), 16)];
    if ((v !== 0 && v !== 1 && v !== 27 && v !== 28) || !onCurveOrder(r) || !onCurveOrder(s)) return viaViem(args, signature);
    return `${VRS_SELECTOR}${head}${word(BigInt(v < 27 ? v + 27 : v))}${r}${s}`;
  }
  const bytes = signature.slice(2);
  return `${BYTES_SELECTOR}${head}${word(SIGNATURE_OFFSET)}${word(BigInt(bytes.length / 2))}${bytes.padEnd(Math.ceil(bytes.length / 64) * 64, '0')}`;
}

/** from, to, value, validAfter, validBefore, nonce as six ABI words, or undefined when one is not of its type. */
function headWords({ from, to, value, validAfter, validBefore, nonce }: TransferWithAuthorizationMessage): string | undefined {
  if (!isAddress(from) || !isAddress(to) || !BYTES32.test(nonce)) return undefined;
  if (![value, validAfter, validBefore].every((n) => typeof n === 'bigint' && n >= 0n && n <= UINT256_MAX)) return undefined;
  return `${from.slice(2).toLowerCase().padStart(64, '0')}${to.slice(2).toLowerCase().padStart(64, '0')}${word(value)}${word(validAfter)}${word(validBefore)}${nonce.slice(2)}`;
}

/** viem's parseSignature refuses r or s outside [1, n) of secp256k1. */
function onCurveOrder(word: string): boolean {
  const n = BigInt(`0x${word}`);
  return n > 0n && n < SECP256K1_N;
}

function word(n: bigint): string {
  return n.toString(16).padStart(64, '0');
}

function viaViem({ from, to, value, validAfter, validBefore, nonce }: TransferWithAuthorizationMessage, signature: Hex): Hex {
  if (signature.length === 132) {
    const { r, s, v, yParity } = parseSignature(signature);
    return encodeFunctionData({
      abi: eip3009Abi,
      functionName: 'transferWithAuthorization',
      args: [from, to, value, validAfter, validBefore, nonce, Number(v ?? BigInt(yParity + 27)), r, s],
    });
  }
  return encodeFunctionData({ abi: eip3009Abi, functionName: 'transferWithAuthorization', args: [from, to, value, validAfter, validBefore, nonce, signature] });
}
