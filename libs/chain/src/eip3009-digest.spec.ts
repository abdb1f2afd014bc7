import fc from 'fast-check';
import { getAddress, hashTypedData, type Address, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { eip3009Types } from './abi';
import { transferWithAuthorizationDigest, type Eip3009Domain, type TransferWithAuthorizationMessage } from './eip3009-digest';

const viemDigest = (domain: Eip3009Domain, message: TransferWithAuthorizationMessage) =>
  hashTypedData({ domain, types: eip3009Types, primaryType: 'TransferWithAuthorization', message });

const address = fc.uint8Array({ minLength: 20, maxLength: 20 }).map((b) => getAddress(`0x${Buffer.from(b).toString('hex')}`));
const bytes32 = fc.uint8Array({ minLength: 32, maxLength: 32 }).map((b) => `0x${Buffer.from(b).toString('hex')}` as Hex);
const uint256 = fc.bigInt({ min: 0n, max: 2n ** 256n - 1n });
const domain = fc.record({
  name: fc.oneof(fc.constant('USD Coin'), fc.string(), fc.string({ unit: 'grapheme' })),
  version: fc.oneof(fc.constant('2'), fc.string()),
  chainId: fc.integer({ min: 1, max: 2 ** 48 }),
  verifyingContract: address,
});
const message = fc.record({ from: address, to: address, value: uint256, validAfter: uint256, validBefore: uint256, nonce: bytes32 });

describe('transferWithAuthorizationDigest', () => {
  it("equals viem's hashTypedData for any domain and message (and again, from the kept separator)", () => {
    fc.assert(
      fc.property(domain, message, (d, m) => {
        expect(transferWithAuthorizationDigest(d, m)).toBe(viemDigest(d, m));
        expect(transferWithAuthorizationDigest(d, { ...m, value: m.value ^ 1n })).toBe(viemDigest(d, { ...m, value: m.value ^ 1n }));
      }),
      { numRuns: 300 },
    );
  });

  it('takes addresses in any case, as viem does for lowercase ones', () => {
    const d = { name: 'USD Coin', version: '2', chainId: 8453, verifyingContract: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913' as Address };
    const m = {
      from: '0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266' as Address,
      to: '0x70997970c51812dc3a010c7d01b50e0d17dc79c8' as Address,
      value: 10_000n,
      validAfter: 0n,
      validBefore: 1_900_000_000n,
      nonce: `0x${'ab'.repeat(32)}` as Hex,
    };
    expect(transferWithAuthorizationDigest(d, m)).toBe(viemDigest(d, m));
  });

  it('throws where hashTypedData throws: a bad address, a uint256 out of range, a nonce of another size', () => {
    const d = { name: 'USD Coin', version: '2', chainId: 1, verifyingContract: getAddress('0x833589fcd6edb6e08f4c7c32d4f71b54bda02913') };
    const m = {
      from: getAddress('0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266'),
      to: getAddress('0x70997970c51812dc3a010c7d01b50e0d17dc79c8'),
      value: 1n,
      validAfter: 0n,
      validBefore: 2n,
      nonce: `0x${'00'.repeat(32)}` as Hex,
    };
    const cases: TransferWithAuthorizationMessage[] = [
      { ...m, from: '0xF39fd6e51aad88f6f4ce6ab8827279cfffb92266' as Address }, // a bad checksum
      { ...m, to: '0x1234' as Address },
      { ...m, value: -1n },
      { ...m, validBefore: 2n ** 256n },
      { ...m, nonce: '0x1234' as Hex },
    ];
    for (const bad of cases) {
      expect(() => viemDigest(d, bad)).toThrow();
      expect(() => transferWithAuthorizationDigest(d, bad)).toThrow();
    }
    expect(() => transferWithAuthorizationDigest({ ...d, verifyingContract: '0x12' as Address }, m)).toThrow();
    // a bad checksum of a token whose separator is already kept is refused too, as hashTypedData refuses it
    transferWithAuthorizationDigest(d, m);
    const badChecksum = { ...d, verifyingContract: '0x833589FCd6edb6e08f4c7c32d4f71b54bda02913' as Address };
    expect(() => viemDigest(badChecksum, m)).toThrow();
    expect(() => transferWithAuthorizationDigest(badChecksum, m)).toThrow();
  });
});
