import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { Address, Hex } from 'viem';
import { balanceOf, payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';
import { createMerchant } from '../../../test/support/merchants';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../../test/support/webhook-receiver';

/**
 * The chain decides, also after the fact: an outcome waits for the network's confirmations, and a payment whose
 * confirming block a reorg takes back goes back to submitted, is confirmed again by its transaction mined anew, and
 * the merchant hears of both.
 */
describe('confirmations and reorgs', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = manifest.accounts.merchant.address as Address;
  const amount = 2_500n;
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  let facilitator: RunningFacilitator | undefined;
  let receiver: WebhookReceiver | undefined;

  const body = async () =>
    v2Body(
      await signAuthorization(payerAccount(manifest, 4), usdc, manifest.chainId, { to: merchantAddress, value: amount }),
      v2Requirements(manifest, usdc, amount),
    );
  const row = async (nonce: string) =>
    (
      await db.query(
        `SELECT state::text AS state, tx_hash AS "txHash", block_number::text AS "blockNumber", block_hash AS "blockHash" FROM facilitator.payments WHERE authorization_nonce = $1`,
        [nonce.toLowerCase()],
      )
    ).rows[0];
  const networksFile = (confirmations: number) => {
    const file = join(mkdtempSync(join(tmpdir(), 'reorg-')), 'networks.json');
    writeFileSync(
      file,
      JSON.stringify({
        networks: [
          {
            network: manifest.network,
            displayName: 'anvil',
            rpcUrls: [manifest.rpcUrl],
            pollingIntervalMs: 50,
            confirmations,
            signerKeyEnv: ['REORG_SIGNER'],
            assets: [{ address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } }],
          },
        ],
      }),
    );
    return file;
  };

  beforeAll(() => db.connect());
  afterEach(async () => {
    await facilitator?.close();
    receiver?.close();
    facilitator = undefined;
  });
  afterAll(() => db.end());

  it("records an outcome only once its block has the network's confirmations", async () => {
    facilitator = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: networksFile(3),
      REORG_SIGNER: manifest.accounts.facilitatorSigners[2].privateKey,
      SETTLE_BUDGET_MS: '1000',
      QUEUE_PREFIX: 'mp:test-confirmations',
    });
    const payment = await body();
    const nonce = payment.paymentPayload.payload.authorization.nonce;
    let first = (await postJson(`${facilitator.url}/settle`, payment)).body;
    // A busy machine may not have sent it within the 1 s budget: ask again until the answer holds its transaction.
    for (let i = 0; i < 20 && first.errorReason === 'settlement_pending' && !first.transaction; i++)
      first = (await postJson(`${facilitator.url}/settle`, payment)).body;
    // Mined at once (automine), but one block is not three: the answer waits.
    expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
    const receipt = await client.getTransactionReceipt({ hash: first.transaction as Hex });
    expect(receipt.status).toBe('success');
    expect(await row(nonce)).toMatchObject({ state: 'submitted', txHash: first.transaction });

    await client.request({ method: 'anvil_mine' as never, params: ['0x2'] as never });
    let final = first;
    for (let i = 0; i < 20 && final.errorReason === 'settlement_pending'; i++) final = (await postJson(`${facilitator.url}/settle`, payment)).body;
    expect(final).toMatchObject({ success: true, transaction: first.transaction });
    expect(await row(nonce)).toEqual({
      state: 'confirmed',
      txHash: first.transaction,
      blockNumber: receipt.blockNumber.toString(),
      blockHash: receipt.blockHash,
    });
  });

  it('takes back a confirmation whose block a reorg dropped, confirms the payment again by its transaction mined anew, and tells the merchant', async () => {
    receiver = await startWebhookReceiver();
    const merchant = createMerchant('Reorg merchant', receiver.url);
    receiver.verifyWith(merchant.webhookSecret);
    facilitator = await startFacilitator({
      FACILITATOR_OPEN_MODE: 'false',
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[2].privateKey,
      RECOVERY_INTERVAL_MS: '200',
      WEBHOOK_POLL_MS: '50',
      QUEUE_PREFIX: 'mp:test-reorg',
    });
    const payment = await body();
    const nonce = payment.paymentPayload.payload.authorization.nonce;
    const merchantBefore = await balanceOf(client, usdc, merchantAddress);
    const settled = (await (
      await fetch(`${facilitator.url}/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${merchant.apiKey}` },
        body: JSON.stringify(payment),
      })
    ).json()) as { success: boolean; transaction: Hex };
    expect(settled).toMatchObject({ success: true });
    const before = await row(nonce);
    expect(before).toMatchObject({ state: 'confirmed', txHash: settled.transaction });

    // Replace the block that mined it (and anything after it) with an empty one: the transaction leaves the chain.
    const head = await client.getBlockNumber({ cacheTime: 0 });
    const depth = Number(head - BigInt(before.blockNumber) + 1n);
    await client.request({ method: 'anvil_reorg' as never, params: [depth, []] as never });
    const reorgedBlock = await client.getBlock({ blockNumber: BigInt(before.blockNumber) });
    expect(reorgedBlock.hash).not.toBe(before.blockHash);
    expect(reorgedBlock.transactions).not.toContain(settled.transaction);

    // The watcher notices, the payment is judged again, and its very transaction (rebroadcast) confirms it anew.
    const after = await until('the payment to be confirmed in a new block', async () => {
      const current = await row(nonce);
      return current.state === 'confirmed' && current.blockHash !== before.blockHash ? current : undefined;
    });
    expect(after.txHash).toBe(settled.transaction);
    const receipt = await client.getTransactionReceipt({ hash: settled.transaction });
    expect(receipt.blockHash).toBe(after.blockHash);
    expect(await balanceOf(client, usdc, merchantAddress)).toBe(merchantBefore + amount);
    const events = (
      await db.query(
        `SELECT e.type FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE p.authorization_nonce = $1 ORDER BY e.id`,
        [nonce.toLowerCase()],
      )
    ).rows.map((r) => r.type);
    expect(events.filter((t) => t === 'payment.confirmed' || t === 'payment.reorged')).toEqual(['payment.confirmed', 'payment.reorged', 'payment.confirmed']);

    // The merchant hears the confirmation, its correction, and the new confirmation.
    const types = await until('three webhooks', () => {
      const seen = receiver!.received.map((w) => JSON.parse(w.body) as { type: string; data: { payment: { state: string; txHash: string } } });
      return seen.length >= 3 ? seen : undefined;
    });
    expect(types.map((w) => w.type).sort()).toEqual(['payment.confirmed', 'payment.confirmed', 'payment.reorged']);
    expect(types.find((w) => w.type === 'payment.reorged')!.data.payment).toMatchObject({ state: 'submitted', txHash: settled.transaction });
  });
});
