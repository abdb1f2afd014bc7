import fc from 'fast-check';
import { hexToBytes, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { signEip1559 } from './signer';

describe('signEip1559', () => {
  it('produces exactly the bytes viem produces, for any call, nonce and fees', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.uint8Array({ minLength: 0, maxLength: 200 }),
        fc.nat({ max: 1_000_000 }),
        fc.bigInt({ min: 21_000n, max: 10_000_000n }),
        fc.bigInt({ min: 1n, max: 10n ** 12n }),
        async (data, nonce, gas, tip) => {
          const key = generatePrivateKey();
          const transaction = {
            type: 'eip1559' as const,
            chainId: 31337,
            nonce,
            to: '0x5FbDB2315678afecb367f032d93F642f64180aa3' as Hex,
            data: `0x${Buffer.from(data).toString('hex')}` as Hex,
            gas,
            maxPriorityFeePerGas: tip,
            maxFeePerGas: tip * 3n,
          };
          expect(signEip1559(transaction, hexToBytes(key))).toBe(await privateKeyToAccount(key).signTransaction(transaction));
        },
      ),
      { numRuns: 50 },
    );
  });
});
