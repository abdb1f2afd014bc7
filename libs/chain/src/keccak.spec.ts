import { randomBytes } from 'node:crypto';
import { bytesToHex, keccak256 as viemKeccak256, type Hex } from 'viem';
import { keccak256, keccakImplementation, keccakReady } from './keccak';

describe('keccak256 (WebAssembly)', () => {
  beforeAll(() => keccakReady);

  it('is in use once ready', () => {
    expect(keccakImplementation()).toBe('webassembly');
  });

  it("gives viem's hash for bytes and hex of every length up to three blocks and more", () => {
    for (let length = 0; length <= 600; length++) {
      const bytes = new Uint8Array(randomBytes(length));
      const expected = viemKeccak256(bytes);
      expect(keccak256(bytes)).toBe(expected);
      expect(keccak256(bytesToHex(bytes))).toBe(expected);
      expect(keccak256(bytesToHex(bytes).toUpperCase().replace('0X', '0x') as Hex)).toBe(expected);
    }
  });

  it('hashes one input after another without carrying state between them', () => {
    const a = new Uint8Array(randomBytes(200));
    const b = new Uint8Array(randomBytes(50));
    const first = keccak256(a);
    keccak256(b);
    expect(keccak256(a)).toBe(first);
  });

  it("gives viem's answer for strings that are not whole bytes of hex, which viem reads its own way", () => {
    for (const value of ['0x123', '0xzz', '0xGG00', '0x'] as Hex[]) expect(keccak256(value)).toBe(viemKeccak256(value));
  });
});
