import fc from 'fast-check';
import { hashTypedData, recoverAddress, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { recoverSigner } from './ecdsa';

const domain = { name: 'USD Coin', version: '2', chainId: 31337, verifyingContract: '0x5FbDB2315678afecb367f032d93F642f64180aa3' } as const;
const types = { Ping: [{ name: 'value', type: 'uint256' }] } as const;

describe('recoverSigner', () => {
  it('agrees with viem for real signatures', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    for (const value of [0n, 1n, 123456789n]) {
      const signature = await account.signTypedData({ domain, types, primaryType: 'Ping', message: { value } });
      const digest = hashTypedData({ domain, types, primaryType: 'Ping', message: { value } });
      expect(recoverSigner(digest, signature)).toBe(account.address.toLowerCase());
      expect((await recoverAddress({ hash: digest, signature })).toLowerCase()).toBe(account.address.toLowerCase());
    }
  });

  it('rejects high-s signatures as the token contract does', async () => {
    const account = privateKeyToAccount(generatePrivateKey());
    const digest = hashTypedData({ domain, types, primaryType: 'Ping', message: { value: 7n } });
    const signature = await account.signTypedData({ domain, types, primaryType: 'Ping', message: { value: 7n } });
    const n = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n;
    const s = BigInt(`0x${signature.slice(66, 130)}`);
    const v = parseInt(signature.slice(130), 16);
    const flipped = `${signature.slice(0, 66)}${(n - s).toString(16).padStart(64, '0')}${(v === 27 ? 28 : 27).toString(16)}` as Hex;
    expect(recoverSigner(digest, flipped)).toBeUndefined();
  });

  it('never throws on garbage', () => {
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 32, maxLength: 32 }), fc.uint8Array({ minLength: 0, maxLength: 80 }), (digest, sig) => {
        const toHex = (b: Uint8Array) => `0x${Buffer.from(b).toString('hex')}` as Hex;
        const result = recoverSigner(toHex(digest), toHex(sig));
        expect(result === undefined || /^0x[0-9a-f]{40}$/.test(result)).toBe(true);
      }),
    );
  });
});
