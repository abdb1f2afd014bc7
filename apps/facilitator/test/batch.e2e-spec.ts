import pg from 'pg';
import { createWalletClient, decodeFunctionData, erc20Abi, http, parseEventLogs, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { eip3009Abi, MULTICALL3_ADDRESS, multicall3Abi } from '@mp/chain';
import { balanceOf, payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';

/** Batch settlement: several EIP-3009 authorizations in one Multicall3 transaction, each with its own exact outcome. */
describe('batch settlement', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 7_000n;
  let facilitator: RunningFacilitator;
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL });

  beforeAll(async () => {
    await db.connect();
    facilitator = await startFacilitator({
      SETTLE_BATCH_MAX: '10',
      // wide enough that the concurrent requests of one test share a batch on a loaded machine too
      SETTLE_BATCH_WINDOW_MS: '1000',
      RECOVERY_INTERVAL_MS: '200',
      QUEUE_PREFIX: 'mp:test-batch',
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[3].privateKey,
    });
  });
  afterAll(async () => {
    await facilitator?.close();
    await db.end();
  });

  const settle = (body: unknown) => postJson(`${facilitator.url}/settle`, body).then((r) => r.body);
  const requirements = () => v2Requirements(manifest, usdc, amount);

  it('settles 20 concurrent payments in a few shared transactions, each exactly once', async () => {
    const bodies = await Promise.all(
      Array.from({ length: 20 }, async (_, i) =>
        v2Body(await signAuthorization(payerAccount(manifest, i % 5), usdc, manifest.chainId, { to: merchant, value: amount }), requirements()),
      ),
    );
    const before = await balanceOf(client, usdc, merchant);
    const responses = await Promise.all(bodies.map(settle));

    expect(responses.filter((r) => !r.success)).toEqual([]);
    const hashes = [...new Set(responses.map((r) => r.transaction as Hex))];
    expect(hashes.length).toBeLessThanOrEqual(4);
    expect(await balanceOf(client, usdc, merchant)).toBe(before + 20n * amount);
    for (const hash of hashes) {
      const receipt = await client.getTransactionReceipt({ hash });
      const used = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationUsed', logs: receipt.logs }).map((l) => (l.args as { nonce: string }).nonce);
      const mine = bodies.filter((_, i) => responses[i].transaction === hash).map((b) => b.paymentPayload.payload.authorization.nonce);
      expect(used.sort()).toEqual(mine.sort());
      // Each payment confirmed once, and the shares of the fee its payments were charged add up to the fee.
      const confirmed = await db.query<{ nonce: string; fee: string }>(
        `SELECT p.authorization_nonce AS nonce, e.data->>'gasFee' AS fee FROM facilitator.payment_events e
           JOIN facilitator.payments p ON p.id = e.payment_id WHERE e.type = 'payment.confirmed' AND e.data->>'txHash' = $1`,
        [hash],
      );
      expect(confirmed.rows.map((r) => r.nonce).sort()).toEqual(mine.map((n) => n.toLowerCase()).sort());
      expect(confirmed.rows.reduce((sum, r) => sum + BigInt(r.fee), 0n)).toBe(receipt.gasUsed * receipt.effectiveGasPrice);
    }
    // Every payment's record: claimed with its batch's signed transaction, then confirmed by it, each step once and in order.
    const { rows } = await db.query<{ nonce: string; types: string[]; stored: string[] }>(
      `SELECT p.authorization_nonce AS nonce,
              (SELECT array_agg(e.type ORDER BY e.id) FROM facilitator.payment_events e WHERE e.payment_id = p.id) AS types,
              (SELECT array_agg(t.hash) FROM facilitator.payment_transactions t WHERE t.payment_id = p.id) AS stored
         FROM facilitator.payments p WHERE p.authorization_nonce = ANY($1)`,
      [bodies.map((b) => b.paymentPayload.payload.authorization.nonce.toLowerCase())],
    );
    expect(rows).toHaveLength(20);
    for (const row of rows) {
      const response = responses[bodies.findIndex((b) => b.paymentPayload.payload.authorization.nonce.toLowerCase() === row.nonce)];
      expect(row).toEqual({ nonce: row.nonce, types: ['payment.verified', 'payment.submitted', 'payment.confirmed'], stored: [response.transaction] });
    }

    // Gas per payment, batched and alone, is measured by `npm run bench -- --batch 10`, not asserted here.
  });

  it('two presentations of one authorization in one batch window: one transfer, the other told it is taken, the rest settled', async () => {
    // The window's payments are claimed together by the batch's record, all or none: the second presentation of an
    // authorization makes that record fail, and each payment is then claimed and sent alone.
    const payer = payerAccount(manifest, 3);
    const twice = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
    const others = await Promise.all(
      [4, 5, 6].map(async (i) =>
        v2Body(await signAuthorization(payerAccount(manifest, i), usdc, manifest.chainId, { to: merchant, value: amount }), requirements()),
      ),
    );
    const before = await balanceOf(client, usdc, merchant);
    const responses = await Promise.all(
      [v2Body(twice, requirements()), v2Body(twice, v2Requirements(manifest, usdc, amount, { maxTimeoutSeconds: 301 })), ...others].map(settle),
    );

    const [first, second, ...rest] = responses;
    expect([first, second].filter((r) => r.success)).toHaveLength(1);
    expect([first, second].find((r) => !r.success)).toMatchObject({ errorReason: 'invalid_exact_evm_nonce_already_used', transaction: '' });
    expect(rest.filter((r) => !r.success)).toEqual([]);
    expect(await balanceOf(client, usdc, merchant)).toBe(before + 4n * amount);
    // The window's record was refused as a whole, so each payment was claimed and sent in a transaction of its own.
    const settled = [first, second].filter((r) => r.success).concat(rest);
    expect(new Set(settled.map((r) => r.transaction)).size).toBe(4);
    const { rows } = await db.query<{ types: string[] }>(
      `SELECT array_agg(e.type ORDER BY e.id) AS types FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id
        WHERE p.authorization_nonce = $1`,
      [twice.authorization.nonce.toLowerCase()],
    );
    expect(rows[0].types).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
  });

  it('one authorization failing inside a batch neither fails nor doubles the others; it gets its own reason', async () => {
    // A payer that can afford one of its two payments: each simulates alone, only one can succeed on chain.
    const funder = payerAccount(manifest, 6);
    const broke = privateKeyToAccount(generatePrivateKey());
    const wallet = createWalletClient({ account: funder, chain: client.chain, transport: http(manifest.rpcUrl) });
    await client.waitForTransactionReceipt({
      hash: await wallet.writeContract({
        address: usdc.address as Address,
        abi: erc20Abi,
        functionName: 'transfer',
        args: [broke.address, (amount * 3n) / 2n],
        chain: null,
      }),
    });
    const bodies = [
      ...(await Promise.all(
        [0, 1].map(async () => v2Body(await signAuthorization(broke, usdc, manifest.chainId, { to: merchant, value: amount }), requirements())),
      )),
      ...(await Promise.all(
        [7, 8, 9].map(async (i) =>
          v2Body(await signAuthorization(payerAccount(manifest, i), usdc, manifest.chainId, { to: merchant, value: amount }), requirements()),
        ),
      )),
    ];
    const before = await balanceOf(client, usdc, merchant);
    const responses = await Promise.all(bodies.map(settle));

    const failed = responses.filter((r) => !r.success);
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ errorReason: 'invalid_exact_evm_insufficient_balance', transaction: '' });
    expect(responses.filter((r) => r.success)).toHaveLength(4);
    expect(await balanceOf(client, usdc, merchant)).toBe(before + 4n * amount);
    expect(await balanceOf(client, usdc, broke.address)).toBe(amount / 2n);

    // It really failed inside a batch: both of the broke payer's payments went out in one aggregate3 transaction,
    // which carried the one it could pay; the other was detached from it and sent alone.
    const brokePayments = bodies.slice(0, 2).map((b, i) => ({ nonce: b.paymentPayload.payload.authorization.nonce.toLowerCase(), response: responses[i] }));
    const paid = brokePayments.find((p) => p.response.success)!;
    const refused = brokePayments.find((p) => !p.response.success)!;
    const submittedIn = async (nonce: string) =>
      (
        await db.query(
          `SELECT e.data->>'txHash' AS hash FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE p.authorization_nonce = $1 AND e.type = 'payment.submitted' ORDER BY e.id`,
          [nonce],
        )
      ).rows.map((r) => r.hash);
    expect(await submittedIn(paid.nonce)).toEqual([paid.response.transaction]);
    expect((await submittedIn(refused.nonce))[0]).toBe(paid.response.transaction);
    const batch = await client.getTransaction({ hash: paid.response.transaction as Hex });
    expect(batch.to?.toLowerCase()).toBe(MULTICALL3_ADDRESS.toLowerCase());
    expect(decodeFunctionData({ abi: multicall3Abi, data: batch.input }).functionName).toBe('aggregate3');
  });
});
