import { randomBytes } from 'node:crypto';

import { encodeFunctionData, getAddress, parseSignature, type Address, type Hex } from 'viem';

import { eip3009Abi } from './abi';
import { transferWithAuthorizationCalldata } from './eip3009-calldata';
import type { TransferWithAuthorizationMessage } from './eip3009-digest';

const hex = (bytes: number): Hex => `0x${randomBytes(bytes).toString('hex')}`;
const mixedCase = (h: Hex): Hex => `0x${[...h.slice(2)].map((c, i) => (i % 3 === 0 ? c.toUpperCase() : c)).join('')}`;
const uint = (bytes: number) => BigInt(hex(bytes));

/** What the facilitator encoded before: viem's encodeFunctionData, the overload chosen by the arguments. */
function viem(args: TransferWithAuthorizationMessage, signature: Hex): Hex {
  const { from, to, value, validAfter, validBefore, nonce } = args;
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

function randomArgs(i: number): TransferWithAuthorizationMessage {
  return {
    from: i % 2 ? getAddress(hex(20)) : (hex(20).toLowerCase() as Address),
    to: getAddress(hex(20)),
    value: i === 0 ? (1n << 256n) - 1n : uint(1 + (i % 32)),
    validAfter: i === 1 ? 0n : uint(4),
    validBefore: uint(8),
    nonce: i % 3 ? hex(32) : mixedCase(hex(32)),
  };
}

describe('transferWithAuthorizationCalldata', () => {
  it('is viem’s encoding for 65-byte signatures, v as 27/28 or 0/1, any case', () => {
    for (let i = 0; i < 200; i++) {
      const v = [0x1b, 0x1c, 0x00, 0x01][i % 4].toString(16).padStart(2, '0');
      const signature = `${i % 5 ? hex(64) : mixedCase(hex(64))}${v}` as Hex;
      const args = randomArgs(i);
      expect(transferWithAuthorizationCalldata(args, signature)).toBe(viem(args, signature));
    }
  });

  it('is viem’s encoding of the bytes overload for any other signature length, whole words or not', () => {
    for (const length of [0, 1, 31, 32, 33, 64, 66, 96, 97, 200, 1000]) {
      const args = randomArgs(length);
      const signature = hex(length);
      expect(transferWithAuthorizationCalldata(args, signature)).toBe(viem(args, signature));
    }
  });

  it('leaves what is outside the ABI’s types to viem, which refuses it as before', () => {
    const args = randomArgs(7);
    const signature = `${hex(64)}1b` as Hex;
    const refusals: [TransferWithAuthorizationMessage, Hex][] = [
      [{ ...args, from: '0x1234' as Address }, signature],
      [
        {
          ...args,
          to: `0x${getAddress(hex(20))
            .slice(2)
            .replace(/[a-f]/, (c) => c.toUpperCase())}` as Address,
        },
        signature,
      ], // bad checksum
      [{ ...args, value: -1n }, signature],
      [{ ...args, validBefore: 1n << 256n }, signature],
      [{ ...args, nonce: hex(31) }, signature],
      [args, `${hex(64)}1d` as Hex], // v neither 27/28 nor 0/1
      [args, `0x${'00'.repeat(32)}${hex(32).slice(2)}1b` as Hex], // r = 0
      [args, `${hex(32)}${'ff'.repeat(32)}1c` as Hex], // s beyond the curve's order
    ];
    for (const [bad, sig] of refusals) {
      let expected: unknown;
      try {
        viem(bad, sig);
      } catch (error) {
        expected = error;
      }
      expect(
        expected,
        JSON.stringify(bad, (_, x) => (typeof x === 'bigint' ? String(x) : x)),
      ).toBeInstanceOf(Error);
      expect(() => transferWithAuthorizationCalldata(bad, sig)).toThrow((expected as Error).message);
    }
  });
});
