import type { Address } from 'viem';
import { balanceOf, payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, proxiedNetworksFile, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';
import { NetworkRegistry } from '../src/networks/network-registry';

/**
 * A settlement's broadcast is eth_sendRawTransactionSync (EIP-7966) while the network mines at once: the node answers
 * with the receipt, and no receipt is read. A node without the method is asked once, then sent to the plain way; a
 * node that answers "in the mempool, no receipt yet" (code 4) has its transaction confirmed from the chain, and the
 * next broadcast is the plain send.
 */
describe('eth_sendRawTransactionSync', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 2_500n;
  let proxy: RpcProxy;
  let facilitator: RunningFacilitator | undefined;

  beforeAll(async () => {
    proxy = await startRpcProxy(manifest.rpcUrl);
  });
  afterEach(async () => {
    await facilitator?.close();
    facilitator = undefined;
    proxy.set({ refuse: undefined, receiptLagMs: 0 });
  });
  afterAll(() => proxy.close());

  async function boot(label: string): Promise<RunningFacilitator> {
    facilitator = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: proxiedNetworksFile(manifest, { rpcUrl: proxy.url, signerKeyEnv: 'SYNC_SEND_SIGNER', label }),
      SYNC_SEND_SIGNER: manifest.accounts.facilitatorSigners[1].privateKey,
      SETTLE_BUDGET_MS: '20000',
      RECOVERY_INTERVAL_MS: '500',
      QUEUE_PREFIX: `mp:test-sync-send-${label}`,
    });
    return facilitator;
  }

  const pace = (f: RunningFacilitator) => f.app.get(NetworkRegistry).all()[0]!.signers.pace;

  /** One /settle of a fresh authorization; its answer and what the proxy saw asked meanwhile. */
  async function settle(f: RunningFacilitator, payerIndex: number) {
    const before = { ...proxy.stats.methods };
    const payload = await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: merchant, value: amount });
    const answer = (await postJson(`${f.url}/settle`, v2Body(payload, v2Requirements(manifest, usdc, amount)))).body;
    const asked = (method: string) => (proxy.stats.methods[method] ?? 0) - (before[method] ?? 0);
    return { answer, asked };
  }

  async function expectMinedOnce(hash: `0x${string}`) {
    const receipt = await client.getTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
  }

  it('answers /settle from the receipt the broadcast returned, without reading one', async () => {
    const f = await boot('sync');
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const { answer, asked } = await settle(f, 1);
    expect(answer).toMatchObject({ success: true, network: manifest.network });
    await expectMinedOnce(answer.transaction);
    expect(asked('eth_sendRawTransactionSync')).toBe(1);
    expect(asked('eth_sendRawTransaction')).toBe(0);
    expect(asked('eth_getTransactionReceipt')).toBe(0);
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + amount);
    expect(pace(f)).toMatchObject({ syncSend: true, minesAtOnce: true });
  });

  it('on a node without the method: asked once, then the plain send, and every payment settles once', async () => {
    proxy.set({ refuse: 'eth_sendRawTransactionSync' });
    const f = await boot('refused');
    const refusedBefore = proxy.stats.refused;
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const first = await settle(f, 2);
    const second = await settle(f, 3);
    for (const { answer } of [first, second]) {
      expect(answer).toMatchObject({ success: true });
      await expectMinedOnce(answer.transaction);
    }
    expect(proxy.stats.refused).toBe(refusedBefore + 1);
    // (at least: the recovery sweep may broadcast again a transaction the chain does not show yet)
    expect(first.asked('eth_sendRawTransaction')).toBeGreaterThanOrEqual(1);
    expect(second.asked('eth_sendRawTransactionSync')).toBe(0);
    expect(second.asked('eth_sendRawTransaction')).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + 2n * amount);
    expect(pace(f).syncSend).toBe(false);
  });

  it('a node answering "no receipt yet" (code 4): confirmed from the chain, and the next broadcast is the plain send', async () => {
    proxy.set({ receiptLagMs: 400 });
    const f = await boot('lagging');
    const hiddenBefore = proxy.stats.receiptsHidden;
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const first = await settle(f, 4);
    expect(first.answer).toMatchObject({ success: true });
    await expectMinedOnce(first.answer.transaction);
    expect(first.asked('eth_sendRawTransactionSync')).toBe(1);
    expect(proxy.stats.receiptsHidden).toBeGreaterThan(hiddenBefore);
    // the receipt came from reads once the node showed it
    expect(first.asked('eth_getTransactionReceipt')).toBeGreaterThan(0);
    const second = await settle(f, 5);
    expect(second.answer).toMatchObject({ success: true });
    await expectMinedOnce(second.answer.transaction);
    expect(second.asked('eth_sendRawTransactionSync')).toBe(0);
    expect(second.asked('eth_sendRawTransaction')).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + 2n * amount);
  });
});
