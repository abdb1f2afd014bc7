import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createWalletClient, defineChain, erc20Abi, http, keccak256, parseAbi, encodeAbiParameters, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { PrismaService } from '@mp/db';
import { RefundSweep } from '../src/refunds/refund-sweep';
import { balanceOf, mineBlock, payerAccount, signAuthorization, testChain, v2Body, v2Requirements, withAutomineOff } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { call } from '../../../test/support/http';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';
import { startWebhookReceiver, until, type WebhookReceiver } from '../../../test/support/webhook-receiver';

/**
 * EVM refunds on anvil with the real token: the merchant's refund wallet (REFUND_WALLET_KEYS) sends ERC-20 transfers
 * back to the payer, partial ones adding up to the capture and never beyond it, exactly once per idempotency key,
 * and exactly once across a lost RPC answer, a crash after the broadcast and a transaction whose nonce was taken.
 */
const { manifest, client } = testChain();
const usdc = manifest.tokens.usdc;
const token = usdc.address as Address;
const merchantAddress = manifest.accounts.merchant.address as Address;
const chain = defineChain({
  id: manifest.chainId,
  name: 'anvil',
  nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
  rpcUrls: { default: { http: [manifest.rpcUrl] } },
});
const deployer = createWalletClient({ account: privateKeyToAccount(manifest.accounts.deployer.privateKey as Hex), chain, transport: http(manifest.rpcUrl) });

/** A fresh refund wallet with gas and `tokens` of the test USDC. */
async function fundedWallet(tokens: bigint): Promise<{ key: Hex; address: Address }> {
  const key = generatePrivateKey();
  const { address } = privateKeyToAccount(key);
  await client.request({ method: 'anvil_setBalance' as never, params: [address, '0x8ac7230489e80000'] as never });
  await mint(address, tokens);
  return { key, address };
}

async function mint(to: Address, amount: bigint): Promise<void> {
  const hash = await deployer.writeContract({
    address: token,
    abi: parseAbi(['function mint(address to, uint256 amount)']),
    functionName: 'mint',
    args: [to, amount],
  });
  await client.waitForTransactionReceipt({ hash });
}

/** Sets an address's token balance directly in the token's storage (OpenZeppelin ERC20: `_balances` is slot 0). */
async function setTokenBalance(owner: Address, amount: bigint): Promise<void> {
  const slot = keccak256(encodeAbiParameters([{ type: 'address' }, { type: 'uint256' }], [owner, 0n]));
  await client.request({ method: 'anvil_setStorageAt' as never, params: [token, slot, `0x${amount.toString(16).padStart(64, '0')}`] as never });
}

/** Transfers of the token out of `from` on chain, since the start of the test run. */
async function transfersFrom(from: Address): Promise<{ to: Address; value: bigint; hash: Hex }[]> {
  const logs = await client.getLogs({
    address: token,
    event: erc20Abi.find((e) => e.type === 'event' && e.name === 'Transfer')!,
    args: { from },
    fromBlock: 0n,
  });
  return logs.map((l) => ({ to: l.args.to!, value: l.args.value!, hash: l.transactionHash! }));
}

interface Settled {
  paymentId: string;
  txHash: Hex;
  payer: Address;
}

/** A confirmed x402 payment of `value` by payer `payerIndex` to the test merchant, settled with the merchant's key. */
async function settle(f: RunningFacilitator, merchant: TestMerchant, payerIndex: number, value: bigint): Promise<Settled> {
  const body = v2Body(
    await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: merchantAddress, value }),
    v2Requirements(manifest, usdc, value),
  );
  const answer = await call(`${f.url}/settle`, { key: merchant.apiKey, body });
  expect(answer.body).toMatchObject({ success: true });
  const nonce = body.paymentPayload.payload.authorization.nonce.toLowerCase();
  const listed = await call(`${f.url}/payments?limit=100`, { key: merchant.apiKey });
  const payment = listed.body.data.find((p: { nonce: string }) => p.nonce === nonce);
  return { paymentId: payment.id, txHash: answer.body.transaction, payer: payerAccount(manifest, payerIndex).address };
}

const refundBody = (payment: Pick<Settled, 'txHash'>, amount: bigint | string, extra: Record<string, unknown> = {}) => ({
  x402Version: 2,
  paymentReference: { network: manifest.network, txHash: payment.txHash },
  amount: String(amount),
  reason: 'service_not_delivered',
  idempotencyKey: randomUUID(),
  ...extra,
});

describe('EVM refunds from the merchant refund wallet', () => {
  let f: RunningFacilitator;
  let db: PrismaService;
  let a: TestMerchant;
  let b: TestMerchant;
  let walletA: { key: Hex; address: Address };
  let receiver: WebhookReceiver;
  const refundCount = () => db.refund.count();

  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    a = createMerchant('refunds A', receiver.url);
    receiver.verifyWith(a.webhookSecret);
    b = createMerchant('refunds B (no refund wallet)');
    walletA = await fundedWallet(1_000_000n);
    f = await startFacilitator({
      REFUND_WALLET_KEYS: JSON.stringify({ [a.merchantId]: walletA.key }),
      REFUND_WAIT_MS: '3000',
      SETTLE_BUDGET_MS: '2000',
      WEBHOOK_POLL_MS: '50',
    });
    db = f.app.get(PrismaService);
  });
  afterAll(async () => {
    await f?.close();
    receiver?.close();
  });

  it('partial refunds add up to the capture; one above what is left is denied, and so is one when nothing is left', async () => {
    const payment = await settle(f, a, 0, 10_000n);
    const payerBefore = await balanceOf(client, usdc, payment.payer);
    const walletBefore = await balanceOf(client, usdc, walletA.address);

    const first = await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 4_000n) });
    expect(first.status).toBe(200);
    expect(first.body).toMatchObject({ status: 'executed', amount: '4000', paymentId: payment.paymentId, rail: 'evm', refundTo: payment.payer });
    expect(first.body.denialReason).toBeUndefined();
    expect(first.body.refundTxHash).toMatch(/^0x[0-9a-f]{64}$/);

    const above = await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 6_001n) });
    expect(above.body).toMatchObject({ status: 'denied', amount: '6001', denialReason: 'amount_exceeds_settled' });
    expect(above.body.refundTxHash).toBeUndefined();

    const rest = await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 6_000n, { reason: 'overcharge', reasonDetail: 'billed twice' }) });
    expect(rest.body).toMatchObject({ status: 'executed', amount: '6000', reason: 'overcharge', reasonDetail: 'billed twice' });

    const more = await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 1n) });
    expect(more.body).toMatchObject({ status: 'denied', denialReason: 'already_refunded' });

    expect(await balanceOf(client, usdc, payment.payer)).toBe(payerBefore + 10_000n);
    expect(await balanceOf(client, usdc, walletA.address)).toBe(walletBefore - 10_000n);
    const receipt = await client.getTransactionReceipt({ hash: first.body.refundTxHash });
    expect(receipt.from.toLowerCase()).toBe(walletA.address.toLowerCase());

    const listed = await call(`${f.url}/payments/${payment.paymentId}/refunds`, { key: a.apiKey });
    expect(listed.body.data.map((r: { status: string; amount: string }) => `${r.status}:${r.amount}`)).toEqual([
      'executed:4000',
      'denied:6001',
      'executed:6000',
      'denied:1',
    ]);
    expect((await call(`${f.url}/refunds/${first.body.id}`, { key: a.apiKey })).body).toEqual(first.body);

    const events = await db.paymentEvent.findMany({ where: { paymentId: payment.paymentId, type: { startsWith: 'payment.refund' } }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.type)).toEqual(['payment.refund_pending', 'payment.refunded', 'payment.refund_pending', 'payment.refunded']);
    // the merchant hears of each refund's outcome by webhook, with the payment as it stands (still confirmed)
    const refunded = await until('both refund webhooks', () => {
      const found = receiver.received.map((w) => JSON.parse(w.body)).filter((w) => w.type === 'payment.refunded' && w.data.payment.id === payment.paymentId);
      return found.length === 2 ? found : undefined;
    });
    expect(refunded.map((w) => w.data.refund.refundId).sort()).toEqual([first.body.id, rest.body.id].sort());
    expect(refunded[0].data.payment.state).toBe('confirmed');
    expect(events[1].data).toEqual({
      refundId: first.body.id,
      amount: '4000',
      reason: 'service_not_delivered',
      idempotencyKey: first.body.idempotencyKey,
      refundTo: payment.payer.toLowerCase(),
      reference: first.body.refundTxHash,
    });
  });

  it('concurrent refunds of one payment under different keys never add up to more than it captured', async () => {
    const payment = await settle(f, a, 9, 5_000n);
    const payerBefore = await balanceOf(client, usdc, payment.payer);
    const answers = await Promise.all(Array.from({ length: 5 }, () => call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 2_000n) })));
    const statuses = answers.map((r) => r.body.status).sort();
    expect(statuses).toEqual(['denied', 'denied', 'denied', 'executed', 'executed']);
    expect(answers.filter((r) => r.body.status === 'denied').every((r) => r.body.denialReason === 'amount_exceeds_settled')).toBe(true);
    expect(await balanceOf(client, usdc, payment.payer)).toBe(payerBefore + 4_000n);
  });

  it('refunds to another address when refundTo names one', async () => {
    const payment = await settle(f, a, 1, 3_000n);
    const other = privateKeyToAccount(generatePrivateKey()).address;
    const answer = await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 3_000n, { refundTo: other }) });
    expect(answer.body).toMatchObject({ status: 'executed', refundTo: other });
    expect(await balanceOf(client, usdc, other)).toBe(3_000n);
  });

  it('the same idempotency key twice, even at once, is one transfer on chain with one answer; another request under it is a 409', async () => {
    const payment = await settle(f, a, 2, 5_000n);
    const body = refundBody(payment, 2_000n);
    const transfersBefore = (await transfersFrom(walletA.address)).length;
    const payerBefore = await balanceOf(client, usdc, payment.payer);
    const answers = await Promise.all([0, 1, 2].map(() => call(`${f.url}/refunds`, { key: a.apiKey, body })));
    const again = await call(`${f.url}/refunds`, { key: a.apiKey, body });
    for (const answer of [...answers, again]) {
      expect(answer.status).toBe(200);
      expect(answer.body.id).toBe(answers[0].body.id);
    }
    expect(again.body).toMatchObject({ status: 'executed', amount: '2000' });
    expect((await transfersFrom(walletA.address)).length).toBe(transfersBefore + 1);
    expect(await balanceOf(client, usdc, payment.payer)).toBe(payerBefore + 2_000n);

    const rows = await refundCount();
    const conflict = await call(`${f.url}/refunds`, { key: a.apiKey, body: { ...body, amount: '2001' } });
    expect(conflict.status).toBe(409);
    expect(conflict.body).toMatchObject({ code: 'refund_idempotency_conflict', refundId: answers[0].body.id });
    expect(await refundCount()).toBe(rows);
    expect((await transfersFrom(walletA.address)).length).toBe(transfersBefore + 1);
  });

  it('without a refund wallet the refund is denied and nothing moves', async () => {
    const payment = await settle(f, b, 3, 1_000n);
    const before = await balanceOf(client, usdc, payment.payer);
    const answer = await call(`${f.url}/refunds`, { key: b.apiKey, body: refundBody(payment, 1_000n) });
    expect(answer.body).toMatchObject({ status: 'denied', denialReason: 'refund_wallet_not_configured' });
    expect(await balanceOf(client, usdc, payment.payer)).toBe(before);
    expect(await db.paymentEvent.count({ where: { paymentId: payment.paymentId, type: { startsWith: 'payment.refund' } } })).toBe(0);
  });

  it("another merchant's payment is a 404, by hash and by id, and its refunds and a refund of it are not seen", async () => {
    const payment = await settle(f, a, 4, 1_000n);
    const rows = await refundCount();
    expect((await call(`${f.url}/refunds`, { key: b.apiKey, body: refundBody(payment, 1_000n) })).status).toBe(404);
    const byId = refundBody(payment, 1_000n, { paymentReference: { network: manifest.network, paymentId: payment.paymentId } });
    expect((await call(`${f.url}/refunds`, { key: b.apiKey, body: byId })).status).toBe(404);
    expect((await call(`${f.url}/payments/${payment.paymentId}/refunds`, { key: b.apiKey })).status).toBe(404);
    const own = await call(`${f.url}/refunds`, { key: a.apiKey, body: byId });
    expect(own.body).toMatchObject({ status: 'executed' });
    expect((await call(`${f.url}/refunds/${own.body.id}`, { key: b.apiKey })).status).toBe(404);
    expect(await refundCount()).toBe(rows + 1);
    expect((await call(`${f.url}/refunds`, { body: refundBody(payment, 1n) })).status).toBe(401);
  });

  it('a payment not yet confirmed is denied payment_not_settled', async () => {
    const payment = await withAutomineOff(client, async () => {
      const body = v2Body(
        await signAuthorization(payerAccount(manifest, 5), usdc, manifest.chainId, { to: merchantAddress, value: 1_500n }),
        v2Requirements(manifest, usdc, 1_500n),
      );
      const answer = await call(`${f.url}/settle`, { key: a.apiKey, body });
      expect(answer.body).toMatchObject({ success: false, errorReason: 'settlement_pending' });
      const refund = await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody({ txHash: answer.body.transaction }, 1_500n) });
      expect(refund.body).toMatchObject({ status: 'denied', denialReason: 'payment_not_settled' });
      return answer.body.transaction as Hex;
    });
    await mineBlock(client);
    await client.waitForTransactionReceipt({ hash: payment });
  });

  it('a refund transfer that reverts on chain fails with payment.refund_failed, and what it took is refundable again', async () => {
    const payment = await settle(f, a, 6, 2_000n);
    const walletBalance = await balanceOf(client, usdc, walletA.address);
    const pending = await withAutomineOff(client, async () => {
      const answer = await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 2_000n) });
      expect(answer.body).toMatchObject({ status: 'pending', amount: '2000' });
      // the wallet's tokens are gone by the time the transfer is mined
      await setTokenBalance(walletA.address, 0n);
      await mineBlock(client);
      return answer.body;
    });
    await f.app.get(RefundSweep).runOnce(0);
    const failed = await call(`${f.url}/refunds/${pending.id}`, { key: a.apiKey });
    expect(failed.body).toMatchObject({ status: 'failed', failureReason: 'transaction_reverted' });
    expect(failed.body.reference).toMatch(/^0x[0-9a-f]{64}$/);
    await setTokenBalance(walletA.address, walletBalance);
    const events = await db.paymentEvent.findMany({ where: { paymentId: payment.paymentId, type: { startsWith: 'payment.refund' } }, orderBy: { id: 'asc' } });
    expect(events.map((e) => e.type)).toEqual(['payment.refund_pending', 'payment.refund_failed']);
    expect(events[1].data).toMatchObject({ refundId: pending.id, failureReason: 'transaction_reverted', reference: failed.body.reference });
    // a failed refund does not count against the capture
    expect((await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 2_000n) })).body).toMatchObject({ status: 'executed' });
  });

  it('a refund wallet without the tokens is denied refund_wallet_underfunded', async () => {
    const payment = await settle(f, a, 7, 1_000n);
    const walletBalance = await balanceOf(client, usdc, walletA.address);
    await setTokenBalance(walletA.address, 999n);
    try {
      expect((await call(`${f.url}/refunds`, { key: a.apiKey, body: refundBody(payment, 1_000n) })).body).toMatchObject({
        status: 'denied',
        denialReason: 'refund_wallet_underfunded',
      });
    } finally {
      await setTokenBalance(walletA.address, walletBalance);
    }
  });

  it('bad input is a 400 naming the field, and writes nothing', async () => {
    const payment = await settle(f, a, 8, 1_000n);
    const rows = await refundCount();
    const events = await db.paymentEvent.count();
    const cases: [Record<string, unknown>, string][] = [
      [refundBody(payment, '0'), 'amount'],
      [refundBody(payment, '1.5'), 'amount'],
      [refundBody(payment, '-1'), 'amount'],
      [refundBody(payment, '1e3'), 'amount'],
      [{ ...refundBody(payment, 1n), amount: 100 }, 'amount'],
      [{ ...refundBody(payment, 1n), discount: true }, 'discount'],
      [refundBody(payment, 1n, { refundTo: '0x1234' }), 'refundTo'],
      [refundBody(payment, 1n, { refundTo: '0x8Ba1f109551bD432803012645Ac136ddd64DBA72' }), 'refundTo'],
      [refundBody(payment, 1n, { reason: 'because' }), 'reason'],
      [refundBody(payment, 1n, { x402Version: 1 }), 'x402Version'],
      [refundBody(payment, 1n, { idempotencyKey: '' }), 'idempotencyKey'],
      [refundBody(payment, 1n, { paymentReference: { network: manifest.network, txHash: '0x12' } }), 'paymentReference.txHash'],
      [refundBody(payment, 1n, { paymentReference: { network: manifest.network, txHash: payment.txHash, extra: 1 } }), 'paymentReference.extra'],
      [refundBody(payment, 1n, { paymentReference: { network: manifest.network } }), 'paymentReference'],
      [refundBody(payment, 1n, { paymentReference: 'x' }), 'paymentReference'],
      [{ x402Version: 2 }, 'amount'],
    ];
    for (const [body, field] of cases) {
      const answer = await call(`${f.url}/refunds`, { key: a.apiKey, body });
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.code).toBe('validation_failed');
      expect(
        answer.body.invalidParams.map((p: { name: string }) => p.name),
        JSON.stringify(answer.body),
      ).toContain(field);
    }
    expect((await call(`${f.url}/refunds/not-a-uuid`, { key: a.apiKey })).status).toBe(400);
    expect(await refundCount()).toBe(rows);
    expect(await db.paymentEvent.count()).toBe(events);
  });
});

describe('EVM refunds when answers are lost or the process dies', () => {
  let proxy: RpcProxy;
  let m: TestMerchant;
  let wallet: { key: Hex; address: Address };
  const running: RunningFacilitator[] = [];

  beforeAll(async () => {
    proxy = await startRpcProxy(manifest.rpcUrl);
    m = createMerchant('refunds lost answers');
    wallet = await fundedWallet(1_000_000n);
  });
  afterAll(async () => {
    for (const f of running) await f.close().catch(() => undefined);
    await proxy.close();
  });

  const boot = async (env: Record<string, string> = {}) => {
    const f = await startFacilitator({ REFUND_WALLET_KEYS: JSON.stringify({ [m.merchantId]: wallet.key }), REFUND_WAIT_MS: '3000', ...env });
    running.push(f);
    return f;
  };

  it('a broadcast whose answer is lost is judged by its receipt: executed, one transfer', async () => {
    const plain = await boot();
    const payment = await settle(plain, m, 9, 2_500n);
    await plain.close();
    const proxied = await boot({ RPC_TIMEOUT_MS: '300', ...proxyNetwork(proxy.url) });
    const before = (await transfersFrom(wallet.address)).length;
    proxy.set({ loseSendAnswers: true });
    const lost = proxy.stats.sendsLost;
    const answer = await call(`${proxied.url}/refunds`, { key: m.apiKey, body: refundBody(payment, 2_500n) });
    proxy.set({ loseSendAnswers: false });
    expect(proxy.stats.sendsLost).toBeGreaterThan(lost);
    expect(answer.body).toMatchObject({ status: 'executed', amount: '2500' });
    expect((await transfersFrom(wallet.address)).length).toBe(before + 1);
    await proxied.close();
  });

  it('a process that dies after the broadcast leaves a pending refund; the next one finishes it from the stored bytes, once', async () => {
    const first = await boot({ REFUND_WAIT_MS: '200' });
    const payment = await settle(first, m, 0, 3_000n);
    const before = (await transfersFrom(wallet.address)).length;
    const db = first.app.get(PrismaService);
    const pending = await withAutomineOff(client, async () => {
      const answer = await call(`${first.url}/refunds`, { key: m.apiKey, body: refundBody(payment, 3_000n) });
      expect(answer.body).toMatchObject({ status: 'pending' });
      const recorded = await db.refund.findUniqueOrThrow({ where: { id: answer.body.id } });
      expect(recorded.rawTx).toMatch(/^0x/);
      await first.close();
      // the node forgets it too (a restart, a dropped mempool): only our stored bytes can bring it back
      await client.request({ method: 'anvil_dropTransaction' as never, params: [recorded.txHash] as never });
      return recorded;
    });
    expect(await client.getTransactionReceipt({ hash: pending.txHash as Hex }).catch(() => undefined)).toBeUndefined();
    const second = await boot();
    await second.app.get(RefundSweep).runOnce(0);
    const done = await until('the refund is executed', async () => {
      const answer = await call(`${second.url}/refunds/${pending.id}`, { key: m.apiKey });
      if (answer.body.status !== 'executed') {
        await second.app.get(RefundSweep).runOnce(0);
        return undefined;
      }
      return answer.body;
    });
    expect(done.refundTxHash).toBe(pending.txHash);
    expect((await transfersFrom(wallet.address)).length).toBe(before + 1);
  });

  it('a recorded transaction whose nonce another transaction took is signed again, and the refund still happens once', async () => {
    const f = await boot({ REFUND_WAIT_MS: '200' });
    const payment = await settle(f, m, 1, 1_200n);
    const db = f.app.get(PrismaService);
    const before = (await transfersFrom(wallet.address)).length;
    const pending = await withAutomineOff(client, async () => {
      const answer = await call(`${f.url}/refunds`, { key: m.apiKey, body: refundBody(payment, 1_200n) });
      expect(answer.body).toMatchObject({ status: 'pending' });
      const row = await db.refund.findUniqueOrThrow({ where: { id: answer.body.id } });
      // the wallet's owner spends the same nonce on something else, and that is what gets mined
      await client.request({ method: 'anvil_dropTransaction' as never, params: [row.txHash] as never });
      const owner = createWalletClient({ account: privateKeyToAccount(wallet.key), chain, transport: http(manifest.rpcUrl) });
      await owner.sendTransaction({ to: wallet.address, value: 0n, nonce: row.txNonce! });
      await mineBlock(client);
      return row;
    });
    await until('the refund is executed', async () => {
      await f.app.get(RefundSweep).runOnce(0);
      const row = await db.refund.findUniqueOrThrow({ where: { id: pending.id } });
      return row.status === 'executed' ? row : undefined;
    });
    const row = await db.refund.findUniqueOrThrow({ where: { id: pending.id } });
    expect(row.txHash).not.toBe(pending.txHash);
    expect(row.txNonce).toBe(pending.txNonce! + 1);
    expect((await transfersFrom(wallet.address)).length).toBe(before + 1);
  });
});

/** Env for a facilitator whose only RPC is `url` (the test chain behind the proxy), through a networks file. */
function proxyNetwork(url: string): Record<string, string> {
  const file = join(mkdtempSync(join(tmpdir(), 'refunds-')), 'networks.json');
  writeFileSync(
    file,
    JSON.stringify({
      networks: [
        {
          network: manifest.network,
          displayName: 'anvil behind a misbehaving RPC',
          rpcUrls: [url],
          pollingIntervalMs: 50,
          signerKeyEnv: ['REFUND_TEST_SIGNER'],
          assets: [{ address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } }],
        },
      ],
    }),
  );
  return { FACILITATOR_NETWORKS_FILE: file, REFUND_TEST_SIGNER: manifest.accounts.facilitatorSigners[3].privateKey };
}
