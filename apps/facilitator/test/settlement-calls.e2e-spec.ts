import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address } from 'viem';
import type { HexString, TransferAuthorization } from '@mp/money';
import type { EvmTransferRail } from '../src/eip3009/evm-transfer.rail';
import { TRANSFER_AUTHORIZATION_RAIL } from '../src/eip3009/transfer-authorization.rail';
import { payerAccount, signAuthorization, testChain } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';

/**
 * Renewals due together are checked in one round trip (EvmTransferRail.settlementCalls): each transfer simulated as a
 * transaction of its own in one eth_simulateV1 block, which gives whether it passes and its gas. A node without that
 * method gets the older way, one aggregate3 eth_call and one estimate of the batch: the same transfers pass.
 */
describe('settlement calls for a batch of renewals', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  let proxy: RpcProxy;
  const running: RunningFacilitator[] = [];
  beforeAll(async () => {
    proxy = await startRpcProxy(manifest.rpcUrl);
  });
  afterAll(async () => {
    await Promise.all(running.map((f) => f.close()));
    await proxy.close();
  });

  /** A facilitator without workers whose node is the proxy; its rail remembers per process whether the node simulates. */
  async function railBehindProxy(name: string): Promise<EvmTransferRail> {
    const file = join(mkdtempSync(join(tmpdir(), 'settlement-calls-')), 'networks.json');
    writeFileSync(
      file,
      JSON.stringify({
        networks: [
          {
            network: manifest.network,
            displayName: `anvil (${name})`,
            rpcUrls: [proxy.url],
            pollingIntervalMs: 50,
            signerKeyEnv: ['SETTLEMENT_CALLS_SIGNER'],
            assets: [{ address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } }],
          },
        ],
      }),
    );
    const facilitator = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: file,
      FACILITATOR_ROLE: 'api',
      SETTLEMENT_CALLS_SIGNER: manifest.accounts.facilitatorSigners[0].privateKey,
      QUEUE_PREFIX: `mp:test-settlement-calls-${name}`,
    });
    running.push(facilitator);
    return facilitator.app.get<EvmTransferRail>(TRANSFER_AUTHORIZATION_RAIL, { strict: false });
  }

  /** Three good authorizations and, second, one signed by another key than its `from`: the token refuses it. */
  async function batch(): Promise<TransferAuthorization[]> {
    const signed = await Promise.all(
      [2, 3, 4, 5].map((index) => signAuthorization(payerAccount(manifest, index), usdc, manifest.chainId, { to: merchant, value: 1_234n })),
    );
    const forged = { ...signed[1]!, authorization: { ...signed[1]!.authorization, from: payerAccount(manifest, 6).address } };
    return [signed[0]!, forged, signed[2]!, signed[3]!].map(({ signature, authorization: a }) => ({
      network: manifest.network,
      asset: usdc.address as HexString,
      from: a.from as HexString,
      to: a.to as HexString,
      value: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      nonce: a.nonce as HexString,
      signature: signature as HexString,
      domain: { name: usdc.name, version: usdc.version },
      requirement: { payTo: merchant, amount: 1_234n },
    }));
  }

  it('simulates each transfer in one eth_simulateV1 call, without estimating gas', async () => {
    const rail = await railBehindProxy('simulate');
    const before = { ...proxy.stats.methods };
    const calls = await rail.settlementCalls(await batch());
    expect(calls.map((c) => c !== undefined)).toEqual([true, false, true, true]);
    for (const call of calls.filter((c) => c !== undefined)) {
      expect(call.to.toLowerCase()).toBe(usdc.address.toLowerCase());
      // a transfer of its own: the intrinsic 21,000 and the token's work
      expect(call.gas).toBeGreaterThan(40_000n);
      expect(call.gas).toBeLessThan(200_000n);
    }
    const asked = (method: string) => (proxy.stats.methods[method] ?? 0) - (before[method] ?? 0);
    expect(asked('eth_simulateV1')).toBe(1);
    expect(asked('eth_estimateGas')).toBe(0);
  });

  it('on a node without eth_simulateV1: one aggregate3 eth_call and one estimate, and the same transfers pass', async () => {
    proxy.set({ refuse: 'eth_simulateV1' });
    try {
      const rail = await railBehindProxy('estimate');
      const refusedBefore = proxy.stats.refused;
      const first = await rail.settlementCalls(await batch());
      expect(first.map((c) => c !== undefined)).toEqual([true, false, true, true]);
      expect(proxy.stats.refused).toBe(refusedBefore + 1);
      // asked once: the rail remembers that this node has no such method
      await rail.settlementCalls(await batch());
      expect(proxy.stats.refused).toBe(refusedBefore + 1);
      for (const call of first.filter((c) => c !== undefined)) expect(call.gas).toBeGreaterThan(21_000n);
    } finally {
      proxy.set({ refuse: undefined });
    }
  });
});
