import type { Address } from 'viem';
import { balanceOf, mineBlock, payerAccount, signAuthorization, testChain, v2Body, v2Requirements, withAutomineOff } from '../../../test/support/chain';
import { postJson, proxiedNetworksFile, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';
import { NetworkRegistry } from '../src/networks/network-registry';

/**
 * Once a plain send's receipt came at once (the network mines at once), a settlement's broadcast is
 * eth_sendRawTransactionSync (EIP-7966): the node answers with the receipt, and no receipt is read. A node without the
 * method is asked once, then sent to the plain way; a node that answers "in the mempool, no receipt yet" (code 4), or
 * not within a second, has its transaction confirmed from the chain, and the next broadcast is the plain send.
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

  async function boot(label: string, env: Record<string, string> = {}): Promise<RunningFacilitator> {
    facilitator = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: proxiedNetworksFile(manifest, { rpcUrl: proxy.url, signerKeyEnv: 'SYNC_SEND_SIGNER', label }),
      SYNC_SEND_SIGNER: manifest.accounts.facilitatorSigners[1].privateKey,
      SETTLE_BUDGET_MS: '20000',
      RECOVERY_INTERVAL_MS: '500',
      QUEUE_PREFIX: `mp:test-sync-send-${label}`,
      ...env,
    });
    return facilitator;
  }

  const pace = (f: RunningFacilitator) => f.app.get(NetworkRegistry).all()[0]!.signers.pace;

  /** One /settle of a fresh authorization; its answer and what the proxy saw asked meanwhile. */
  async function settle(f: RunningFacilitator, payerIndex: number) {
    const before = { ...proxy.stats.methods };
    const payload = await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: merchant, value: amount });
    const body = v2Body(payload, v2Requirements(manifest, usdc, amount));
    const answer = (await postJson(`${f.url}/settle`, body)).body;
    const asked = (method: string) => (proxy.stats.methods[method] ?? 0) - (before[method] ?? 0);
    return { body, answer, asked };
  }

  async function expectMinedOnce(hash: `0x${string}`) {
    const receipt = await client.getTransactionReceipt({ hash });
    expect(receipt.status).toBe('success');
  }

  /** A first settlement (a plain send, whose receipt comes at once on anvil) teaches the process that it may send synchronously. */
  async function learnPace(f: RunningFacilitator, payerIndex: number) {
    expect(pace(f).minesAtOnce).toBeUndefined();
    const { answer, asked } = await settle(f, payerIndex);
    expect(answer).toMatchObject({ success: true });
    expect(asked('eth_sendRawTransactionSync')).toBe(0);
    expect(pace(f).minesAtOnce).toBe(true);
  }

  it('answers /settle from the receipt the broadcast returned, without reading one', async () => {
    const f = await boot('sync');
    await learnPace(f, 1);
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const { answer, asked } = await settle(f, 2);
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
    await learnPace(f, 3);
    const refusedBefore = proxy.stats.refused;
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const first = await settle(f, 4);
    const second = await settle(f, 5);
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
    const f = await boot('lagging');
    await learnPace(f, 6);
    proxy.set({ receiptLagMs: 400 });
    const hiddenBefore = proxy.stats.receiptsHidden;
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const first = await settle(f, 7);
    expect(first.answer).toMatchObject({ success: true });
    await expectMinedOnce(first.answer.transaction);
    expect(first.asked('eth_sendRawTransactionSync')).toBe(1);
    expect(proxy.stats.receiptsHidden).toBeGreaterThan(hiddenBefore);
    // the receipt came from reads once the node showed it
    expect(first.asked('eth_getTransactionReceipt')).toBeGreaterThan(0);
    const second = await settle(f, 8);
    expect(second.answer).toMatchObject({ success: true });
    await expectMinedOnce(second.answer.transaction);
    expect(second.asked('eth_sendRawTransactionSync')).toBe(0);
    expect(second.asked('eth_sendRawTransaction')).toBeGreaterThanOrEqual(1);
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + 2n * amount);
  });

  it('a chain that stops mining at once: the wallet waits a second at most, and the payment settles once when mined', async () => {
    const f = await boot('stalled', { SETTLE_BUDGET_MS: '1500' });
    await learnPace(f, 9);
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const settled = await withAutomineOff(client, async () => {
      const started = Date.now();
      const first = await settle(f, 0);
      expect(first.answer).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x/) });
      expect(first.asked('eth_sendRawTransactionSync')).toBe(1);
      expect(pace(f).minesAtOnce).toBe(false);
      expect(Date.now() - started).toBeLessThan(5_000); // the settle budget ended the wait, not the node
      // the wallet is free again: the next payment is broadcast, the plain way, while the first waits for a block
      const second = await settle(f, 1);
      expect(second.answer).toMatchObject({ errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x/) });
      expect(second.asked('eth_sendRawTransactionSync')).toBe(0);
      expect(second.asked('eth_sendRawTransaction')).toBeGreaterThanOrEqual(1);
      await mineBlock(client);
      return [first, second];
    });
    for (const { body, answer: pending } of settled) {
      let answer = pending;
      for (let i = 0; i < 40 && !answer.success; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        answer = (await postJson(`${f.url}/settle`, body)).body;
      }
      expect(answer).toMatchObject({ success: true, transaction: pending.transaction });
      await expectMinedOnce(answer.transaction);
    }
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + 2n * amount);
  });
});
