import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { encodeFunctionData, parseSignature, type Address, type Hex } from 'viem';
import { eip3009Abi, TransactionSigner } from '@mp/chain';
import { ChainPayments } from '../src/settlement/chain-payments.repository';
import { balanceOf, payerAccount, signAuthorization, testChain, type ExactPayload } from '../../../test/support/chain';
import { startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';

/**
 * "authorization is used or canceled" under load: a worker that read a payment as verified, never sent, is slow to
 * simulate it (a redelivered job, a replica's take-over); meanwhile another worker signs, records and broadcasts the
 * payment's transaction, which is mined. The slow simulation then reverts because OUR transaction used the
 * authorization. That refusal was decided on a stale record: the payment must end confirmed, never failed unsent.
 * The slow request is made deterministic by an RPC proxy that holds the simulation until the other worker is done.
 */
describe('a refusal decided on a stale record', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 1_000n;
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL });

  let proxy: RpcProxy;
  const running: RunningFacilitator[] = [];
  beforeAll(async () => {
    await db.connect();
    proxy = await startRpcProxy(manifest.rpcUrl);
  });
  afterEach(async () => {
    proxy.release();
    await Promise.all(running.splice(0).map((f) => f.close()));
  });
  afterAll(async () => {
    await proxy.close();
    await db.end();
  });

  /** A facilitator whose one hot wallet is facilitatorSigners[signerIndex]; role api: without workers, to set records up. */
  const boot = (name: string, rpcUrl: string, confirmations: number, signerIndex: number, role: 'all' | 'api' = 'all') => {
    const file = join(mkdtempSync(join(tmpdir(), 'stale-refusal-')), 'networks.json');
    writeFileSync(
      file,
      JSON.stringify({
        networks: [
          {
            network: manifest.network,
            displayName: `anvil (${name})`,
            rpcUrls: [rpcUrl],
            pollingIntervalMs: 50,
            confirmations,
            signerKeyEnv: ['STALE_REFUSAL_SIGNER'],
            assets: [{ address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } }],
          },
        ],
      }),
    );
    return startFacilitator({
      FACILITATOR_NETWORKS_FILE: file,
      FACILITATOR_ROLE: role,
      STALE_REFUSAL_SIGNER: manifest.accounts.facilitatorSigners[signerIndex].privateKey,
      RPC_TIMEOUT_MS: '60000',
      // the recovery sweep runs once, after a worker's take-over at boot, and not again during the test
      RECOVERY_INTERVAL_MS: '600000',
      QUEUE_PREFIX: `mp:test-stale-refusal-${name}`,
    }).then((f) => (running.push(f), f));
  };

  /**
   * The verified payment as /settle claims it, its claim old enough that a send simulates it again. Claimed by an api
   * process: the workers booted next find it in their take-over, and nothing else sends it.
   */
  async function claim(payload: ExactPayload): Promise<{ id: string; payments: ChainPayments }> {
    const payments = (await boot('api', manifest.rpcUrl, 1, 1, 'api')).app.get(ChainPayments);
    const a = payload.authorization;
    const { r, s, v } = parseSignature(payload.signature);
    const id = await payments.claim({
      network: manifest.network,
      asset: usdc.address.toLowerCase(),
      payer: a.from.toLowerCase(),
      nonce: a.nonce.toLowerCase(),
      payTo: a.to.toLowerCase(),
      amount: BigInt(a.value),
      validAfter: BigInt(a.validAfter),
      validBefore: BigInt(a.validBefore),
      scheme: 'exact',
      origin: { protocol: 'x402', x402Version: 2 },
      payloadHash: `stale-refusal-${a.nonce}`,
      settleTo: usdc.address,
      settleData: encodeFunctionData({
        abi: eip3009Abi,
        functionName: 'transferWithAuthorization',
        args: [a.from, a.to, BigInt(a.value), BigInt(a.validAfter), BigInt(a.validBefore), a.nonce, Number(v), r, s],
      }),
      settleGas: 100_000n,
    });
    if (!id) throw new Error('the payment was not claimed');
    await db.query(`UPDATE facilitator.payments SET updated_at = now() - interval '1 minute' WHERE id = $1`, [id]);
    return { id, payments };
  }

  const payment = async (id: string) =>
    (await db.query<{ state: string; txHash: string | null }>(`SELECT state::text AS state, tx_hash AS "txHash" FROM facilitator.payments WHERE id = $1`, [id]))
      .rows[0];
  const events = async (id: string) =>
    (await db.query<{ type: string }>(`SELECT type FROM facilitator.payment_events WHERE payment_id = $1 ORDER BY id`, [id])).rows.map((e) => e.type);
  async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
    for (let i = 0; i < 600; i++) {
      const value = await read();
      if (done(value)) return value;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  it('ends confirmed by the transaction another worker sent meanwhile, never failed as nonce used', async () => {
    const payer = payerAccount(manifest, 7);
    const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
    const before = await balanceOf(client, usdc, payer.address);
    const { id } = await claim(payload);

    // The slow worker's take-over reads the payment (verified, never sent) and simulates it through the proxy, which
    // holds the simulation. Nothing else of that worker touches the payment until it decides: its sweep comes after.
    proxy.set({ hold: 'eth_estimateGas' });
    await boot('slow', proxy.url, 1, 1);
    await until(
      'the slow worker to simulate',
      async () => proxy.stats.held,
      (held) => held === 1,
    );

    // The other worker sends straight to the node and waits for 2 confirmations: its payment stays submitted (mined,
    // not confirmed) while the slow one decides.
    await boot('other', manifest.rpcUrl, 2, 3);
    const submitted = await until(
      'the other worker to send',
      () => payment(id),
      (p) => p.state === 'submitted',
    );
    await until('its transaction to be mined', () => client.getTransactionReceipt({ hash: submitted.txHash as Hex }).catch(() => undefined), Boolean);
    expect(await balanceOf(client, usdc, payer.address)).toBe(before - amount);

    // The simulation reaches the node now, and reverts: the authorization is used, by our own transaction.
    proxy.release();
    expect(
      await until(
        'an outcome',
        () => payment(id),
        (p) => p.state !== 'submitted',
      ),
    ).toEqual({ state: 'confirmed', txHash: submitted.txHash });
    expect(await events(id)).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
  });

  it('confirms a payment whose authorization a transaction from our wallet used, though that transaction is not on its record', async () => {
    // The record holds a transaction that never left (its worker died before the broadcast); the same wallet's
    // transaction with that nonce, whose record was lost, carried the transfer.
    const payer = payerAccount(manifest, 8);
    const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
    const { id, payments } = await claim(payload);
    const call = (await payments.findForSettlement(id))!;
    const wallet = new TransactionSigner(manifest.accounts.facilitatorSigners[2].privateKey as Hex, client, manifest.chainId);
    const dead = new Error('died before the broadcast');
    await expect(
      wallet.send({ to: call.settleTo, data: call.settleData, gas: 200_000n }, async (tx) => {
        expect(await payments.recordSubmitted(id, tx, manifest.network)).toBe(true);
        throw dead;
      }),
    ).rejects.toBe(dead);
    const unrecorded = await wallet.send({ to: call.settleTo, data: call.settleData, gas: 200_001n }, async () => undefined);
    expect((await client.waitForTransactionReceipt({ hash: unrecorded.hash })).status).toBe('success');

    // A worker's take-over follows the submitted payment: the node does not know the recorded transaction, and its
    // rebroadcast is refused, its nonce taken.
    await boot('wallet', manifest.rpcUrl, 1, 2);
    expect(
      await until(
        'an outcome',
        () => payment(id),
        (p) => p.state !== 'submitted',
      ),
    ).toEqual({ state: 'confirmed', txHash: unrecorded.hash });
    expect(await events(id)).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
  });
});
