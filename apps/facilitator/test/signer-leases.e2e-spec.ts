import type { Hex } from 'viem';
import { FeeCapError, TransactionSigner } from '@mp/chain';
import { testChain } from '../../../test/support/chain';
import { startFacilitator } from '../../../test/support/facilitator';
import { NetworkRegistry } from '../src/networks/network-registry';

describe('hot wallets', () => {
  const { manifest, client } = testChain();
  const keys = manifest.accounts.facilitatorSigners.map((s) => s.privateKey).join(',');

  it('SIGNER_LEASES_PER_WORKER spreads the wallets over workers, and no wallet is held twice', async () => {
    const env = { FACILITATOR_SIGNER_KEYS: keys, SIGNER_LEASES_PER_WORKER: '2', QUEUE_PREFIX: 'mp:test-leases' };
    const a = await startFacilitator(env);
    const b = await startFacilitator(env);
    try {
      const held = (app: typeof a) =>
        app.app
          .get(NetworkRegistry)
          .all()[0]
          .signers.signers.filter((s) => s.enabled)
          .map((s) => s.address);
      expect(held(a)).toHaveLength(2);
      expect(held(b)).toHaveLength(2);
      expect(held(a).filter((address) => held(b).includes(address))).toEqual([]);
    } finally {
      await a.close();
      await b.close();
    }
  });

  it('MAX_FEE_PER_GAS_WEI caps bids: fees are clamped, and a replacement above the cap is refused before anything is sent', async () => {
    const cap = 3_000_000_000n;
    const signer = new TransactionSigner(manifest.accounts.facilitatorSigners[3].privateKey as Hex, client, manifest.chainId, cap);
    const fees = await signer.currentFees(true);
    expect(fees.maxFeePerGas).toBeLessThanOrEqual(cap);
    const stuck = {
      hash: '0x01' as Hex,
      nonce: 0,
      signer: signer.address,
      raw: '0x' as Hex,
      to: signer.address,
      data: '0x' as Hex,
      gas: 21_000n,
      maxFeePerGas: cap,
      maxPriorityFeePerGas: cap / 2n,
    };
    let broadcast = false;
    await expect(signer.replace(stuck, async () => void (broadcast = true))).rejects.toBeInstanceOf(FeeCapError);
    expect(broadcast).toBe(false);
  });
});
