import { createWalletClient, decodeEventLog, http, parseSignature, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { eip3009Abi, eip3009Types } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { balanceOf, mineBlock, payerAccount, signAuthorization, testChain, v2Body, v2Requirements, withAutomineOff } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

describe('POST /settle', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 12_345n;
  let facilitator: RunningFacilitator;
  let db: PrismaService;

  beforeAll(async () => {
    facilitator = await startFacilitator({
      FACILITATOR_SIGNER_KEYS: `${manifest.accounts.facilitatorSigners[0].privateKey},${manifest.accounts.facilitatorSigners[1].privateKey}`,
    });
    db = facilitator.app.get(PrismaService);
  });
  afterAll(() => facilitator?.close());

  const settle = async (body: unknown) => {
    const response = await postJson(`${facilitator.url}/settle`, body);
    expect(response.status).toBe(200);
    return response.body;
  };
  const requirements = (token = usdc) => v2Requirements(manifest, token, amount);
  const paymentRow = (nonce: string) =>
    db.$queryRawUnsafe<{ state: string; tx_hash: string | null; amount: string }[]>(
      `SELECT state::text, tx_hash, amount::text FROM facilitator.payments WHERE authorization_nonce = $1`,
      nonce.toLowerCase(),
    );
  const eventTypes = async (nonce: string) =>
    (
      await db.$queryRawUnsafe<{ type: string }[]>(
        `SELECT e.type FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id WHERE p.authorization_nonce = $1 ORDER BY e.id`,
        nonce.toLowerCase(),
      )
    ).map((e) => e.type);

  it('transfers exactly the amount on chain and answers {success, transaction, network, payer}', async () => {
    const payer = payerAccount(manifest, 2);
    const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
    const [payerBefore, merchantBefore] = [await balanceOf(client, usdc, payer.address), await balanceOf(client, usdc, merchant)];

    const response = await settle(v2Body(payload, requirements()));

    expect(response).toEqual({ success: true, transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/), network: manifest.network, payer: payer.address });
    const receipt = await client.getTransactionReceipt({ hash: response.transaction });
    expect(receipt.status).toBe('success');
    const transfer = receipt.logs
      .map((log) => {
        try {
          return decodeEventLog({ abi: eip3009Abi, ...log });
        } catch {
          return undefined;
        }
      })
      .find((e) => e?.eventName === 'Transfer');
    expect(transfer?.args).toMatchObject({ from: payer.address, to: merchant, value: amount });
    expect(await balanceOf(client, usdc, payer.address)).toBe(payerBefore - amount);
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + amount);
    expect(await paymentRow(payload.authorization.nonce)).toEqual([{ state: 'confirmed', tx_hash: response.transaction, amount: amount.toString() }]);
    expect(await eventTypes(payload.authorization.nonce)).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
  });

  it('answers a replay with the original success and sends nothing', async () => {
    const payer = payerAccount(manifest, 3);
    const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
    const first = await settle(body);
    const balance = await balanceOf(client, usdc, payer.address);
    const replays = [await settle(body), await settle(body)];
    expect(replays).toEqual([first, first]);
    expect(await balanceOf(client, usdc, payer.address)).toBe(balance);
  });

  it('settles 60 concurrent copies of one payload exactly once, and every caller gets the same transaction', async () => {
    const payer = payerAccount(manifest, 4);
    const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
    const before = await balanceOf(client, usdc, payer.address);

    const responses = await Promise.all(Array.from({ length: 60 }, () => settle(body)));

    const distinct = [...new Set(responses.map((r) => JSON.stringify(r)))];
    expect(distinct, distinct.join('\n')).toHaveLength(1);
    expect(responses[0].success).toBe(true);
    expect(await balanceOf(client, usdc, payer.address)).toBe(before - amount);
    expect(await paymentRow(body.paymentPayload.payload.authorization.nonce)).toHaveLength(1);
  });

  it('settles 40 distinct payments at once without nonce collisions', async () => {
    const payer = payerAccount(manifest, 5);
    const before = await balanceOf(client, usdc, payer.address);
    const bodies = await Promise.all(
      Array.from({ length: 40 }, async () => v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements())),
    );

    const responses = await Promise.all(bodies.map(settle));

    expect(responses.filter((r) => r.success).length).toBe(40);
    expect(new Set(responses.map((r) => r.transaction)).size).toBe(40);
    expect(await balanceOf(client, usdc, payer.address)).toBe(before - 40n * amount);
  });

  it('spreads 64 concurrent settlements over 4 hot wallets with zero nonce errors', async () => {
    const four = await startFacilitator({
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners.map((s) => s.privateKey).join(','),
      QUEUE_PREFIX: 'mp:test-four-signers',
    });
    try {
      const bodies = await Promise.all(
        Array.from({ length: 64 }, async (_, i) =>
          v2Body(await signAuthorization(payerAccount(manifest, 5 + (i % 4)), usdc, manifest.chainId, { to: merchant, value: amount }), requirements()),
        ),
      );
      const responses = await Promise.all(bodies.map((body) => postJson(`${four.url}/settle`, body).then((r) => r.body)));
      expect(responses.filter((r) => !r.success)).toEqual([]);
      const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce.toLowerCase());
      const events = await db.$queryRawUnsafe<{ type: string; n: bigint }[]>(
        `SELECT e.type, count(*) AS n FROM facilitator.payment_events e JOIN facilitator.payments p ON p.id = e.payment_id
          WHERE p.authorization_nonce = ANY($1) GROUP BY e.type ORDER BY e.type`,
        nonces,
      );
      expect(events.map((e) => [e.type, Number(e.n)])).toEqual([
        ['payment.confirmed', 64],
        ['payment.submitted', 64],
        ['payment.verified', 64],
      ]);
      const signers = await db.$queryRawUnsafe<{ signer: string }[]>(
        `SELECT DISTINCT signer FROM facilitator.payments WHERE authorization_nonce = ANY($1)`,
        nonces,
      );
      expect(signers).toHaveLength(4);
    } finally {
      await four.close();
    }
  });

  it('a second facilitator replica settling the same payload at the same time still sends one transfer', async () => {
    const replica = await startFacilitator({ FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[2].privateKey });
    try {
      const payer = payerAccount(manifest, 6);
      const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
      const before = await balanceOf(client, usdc, payer.address);
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) => postJson(`${i % 2 ? replica.url : facilitator.url}/settle`, body).then((r) => r.body)),
      );
      const distinct = [...new Set(responses.map((r) => JSON.stringify(r)))];
      expect(distinct, distinct.join('\n')).toHaveLength(1);
      expect(responses[0].success).toBe(true);
      expect(await balanceOf(client, usdc, payer.address)).toBe(before - amount);
    } finally {
      await replica.close();
    }
  });

  it('two presentations of one authorization at once: one transfer, the other told it is taken, and no wallet nonce skipped', async () => {
    // Each is claimed by its signed transaction (LocalSettlement.claimAndSend): the loser signs with the one wallet's next
    // nonce, which must be the next transaction's, or that transaction would wait forever behind a gap.
    const single = await startFacilitator({ FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[3].privateKey, QUEUE_PREFIX: 'mp:test-one-signer' });
    try {
      const settleThere = async (body: unknown) => (await postJson(`${single.url}/settle`, body)).body;
      const payer = payerAccount(manifest, 7);
      const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
      const before = await balanceOf(client, usdc, payer.address);
      const responses = await Promise.all([
        settleThere(v2Body(payload, requirements())),
        settleThere(v2Body(payload, v2Requirements(manifest, usdc, amount, { maxTimeoutSeconds: 301 }))),
      ]);

      expect(responses.filter((r) => r.success)).toHaveLength(1);
      expect(responses.find((r) => !r.success)).toMatchObject({ errorReason: 'invalid_exact_evm_nonce_already_used' });
      expect(await balanceOf(client, usdc, payer.address)).toBe(before - amount);
      expect(await eventTypes(payload.authorization.nonce)).toEqual(['payment.verified', 'payment.submitted', 'payment.confirmed']);
      const next = await settleThere(v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements()));
      expect(next).toMatchObject({ success: true });
    } finally {
      await single.close();
    }
  });

  it('answers an invalid payment with success:false, the reason, an empty transaction and the network', async () => {
    const payer = payerAccount(manifest, 2);
    const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount + 1n });
    expect(await settle(v2Body(payload, requirements()))).toEqual({
      success: false,
      errorReason: 'invalid_exact_evm_payload_authorization_value_mismatch',
      errorMessage: expect.any(String),
      payer: payer.address,
      transaction: '',
      network: manifest.network,
    });
    expect(await paymentRow(payload.authorization.nonce)).toEqual([]);
  });

  it('answers invalid_exact_evm_transfer_event_mismatch when the receipt does not show the transfer', async () => {
    const token = manifest.tokens.misreportingUsdc;
    const payer = payerAccount(manifest, 2);
    const payload = await signAuthorization(payer, token, manifest.chainId, { to: merchant, value: amount });
    const response = await settle(v2Body(payload, requirements(token)));
    expect(response).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_transfer_event_mismatch', transaction: expect.stringMatching(/^0x/) });
    expect(await paymentRow(payload.authorization.nonce)).toEqual([{ state: 'failed', tx_hash: response.transaction, amount: amount.toString() }]);
  });

  it('answers settlement_pending with the hash when the receipt is late, and the outcome on the next settle', async () => {
    const slow = await startFacilitator({ SETTLE_BUDGET_MS: '300', FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[3].privateKey });
    try {
      await withAutomineOff(client, async () => {
        const payer = payerAccount(manifest, 7);
        const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
        const pending = (await postJson(`${slow.url}/settle`, body)).body;
        expect(pending).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
        expect(await paymentRow(body.paymentPayload.payload.authorization.nonce)).toEqual([
          { state: 'submitted', tx_hash: pending.transaction, amount: amount.toString() },
        ]);

        await mineBlock(client);
        const settled = (await postJson(`${slow.url}/settle`, body)).body;
        expect(settled).toEqual({ success: true, transaction: pending.transaction, network: manifest.network, payer: payer.address });
      });
    } finally {
      await slow.close();
    }
  });

  it('answers invalid_exact_evm_transaction_failed when the mined settlement reverted, and keeps the hash', async () => {
    const slow = await startFacilitator({ SETTLE_BUDGET_MS: '300', FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[3].privateKey });
    try {
      await withAutomineOff(client, async () => {
        const payer = payerAccount(manifest, 7);
        const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
        const pending = (await postJson(`${slow.url}/settle`, body)).body;
        expect(pending).toMatchObject({ errorReason: 'settlement_pending' });

        // The payer cancels the authorization with a higher tip, so the cancel is mined first and the settlement reverts.
        const nonce = body.paymentPayload.payload.authorization.nonce as Hex;
        const cancel = await payer.signTypedData({
          domain: { name: usdc.name, version: usdc.version, chainId: manifest.chainId, verifyingContract: usdc.address as Address },
          types: { CancelAuthorization: eip3009Types.CancelAuthorization },
          primaryType: 'CancelAuthorization',
          message: { authorizer: payer.address, nonce },
        });
        const { r, s, v } = parseSignature(cancel);
        const wallet = createWalletClient({ account: payer, chain: client.chain, transport: http(manifest.rpcUrl) });
        await wallet.writeContract({
          address: usdc.address as Address,
          abi: eip3009Abi,
          functionName: 'cancelAuthorization',
          args: [payer.address, nonce, Number(v), r, s],
          chain: null,
          gas: 200_000n,
          maxFeePerGas: 500_000_000_000n,
          maxPriorityFeePerGas: 100_000_000_000n,
        });
        await mineBlock(client);

        // Before failing it, the worker asks the chain whether another transaction of ours carried it: ask until it has.
        let settled = (await postJson(`${slow.url}/settle`, body)).body;
        for (let i = 0; i < 50 && settled.errorReason === 'settlement_pending'; i++) settled = (await postJson(`${slow.url}/settle`, body)).body;
        expect(settled).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_transaction_failed', transaction: pending.transaction });
        expect(settled.errorMessage).toMatch(/canceled/);
        expect((await client.getTransactionReceipt({ hash: pending.transaction })).status).toBe('reverted');
        expect(await paymentRow(nonce)).toEqual([{ state: 'failed', tx_hash: pending.transaction, amount: amount.toString() }]);
      });
    } finally {
      await slow.close();
    }
  });

  it('replaces a settlement stuck in the mempool with higher fees, and exactly one of the two is mined', async () => {
    const stuck = await startFacilitator({
      SETTLE_BUDGET_MS: '300',
      STUCK_TX_AFTER_MS: '200',
      QUEUE_PREFIX: 'mp:test-stuck',
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[3].privateKey,
    });
    try {
      await withAutomineOff(client, async () => {
        const payer = payerAccount(manifest, 9);
        const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
        const pending = (await postJson(`${stuck.url}/settle`, body)).body;
        expect(pending).toMatchObject({ errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x/) });

        const nonce = body.paymentPayload.payload.authorization.nonce.toLowerCase();
        const transactions = () =>
          db.$queryRawUnsafe<{ hash: string; nonce: number; fee: string }[]>(
            `SELECT t.hash, t.nonce, t.max_fee_per_gas::text AS fee FROM facilitator.payment_transactions t
               JOIN facilitator.payments p ON p.id = t.payment_id WHERE p.authorization_nonce = $1 ORDER BY t.created_at`,
            nonce,
          );
        for (let i = 0; i < 100 && (await transactions()).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
        const [original, replacement] = await transactions();
        expect(replacement.nonce).toBe(original.nonce);
        expect(BigInt(replacement.fee)).toBeGreaterThan((BigInt(original.fee) * 11n) / 10n);

        await mineBlock(client);
        let settled = (await postJson(`${stuck.url}/settle`, body)).body;
        for (let i = 0; i < 20 && !settled.success; i++) settled = (await postJson(`${stuck.url}/settle`, body)).body;
        expect(settled).toMatchObject({ success: true });
        // Only "no such receipt" means not mined: any other RPC error fails the test instead of passing for "not mined".
        const mined = await Promise.all(
          (await transactions()).map((t) =>
            client.getTransactionReceipt({ hash: t.hash as Hex }).then(
              () => t.hash,
              (error: Error) => {
                if (error.name === 'TransactionReceiptNotFoundError') return undefined;
                throw error;
              },
            ),
          ),
        );
        expect(mined.filter(Boolean)).toEqual([settled.transaction]);
      });
    } finally {
      await stuck.close();
    }
  });

  it("refuses a settlement whose gas would exceed the asset's cap, with a clear reason and nothing written", async () => {
    // 1% of the payment at 3,000 USDC per ETH: a cent cannot pay for its gas, a hundred dollars can.
    const capped = await startFacilitator({
      FACILITATOR_GAS_CAP_BPS: '100',
      FACILITATOR_NATIVE_PRICE: '3000000000',
      QUEUE_PREFIX: 'mp:test-gas-cap',
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[3].privateKey,
    });
    try {
      const payer = payerAccount(manifest, 9);
      const cent = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: 10_000n }), v2Requirements(manifest, usdc, 10_000n));
      const refused = (await postJson(`${capped.url}/settle`, cent)).body;
      expect(refused).toMatchObject({ success: false, errorReason: 'settlement_gas_exceeds_cap', transaction: '' });
      expect(refused.errorMessage).toMatch(/more than 1% of the payment/);
      expect(await paymentRow(cent.paymentPayload.payload.authorization.nonce)).toEqual([]);

      const hundred = v2Body(
        await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: 100_000_000n }),
        v2Requirements(manifest, usdc, 100_000_000n),
      );
      expect((await postJson(`${capped.url}/settle`, hundred)).body).toMatchObject({ success: true });
    } finally {
      await capped.close();
    }
  });

  it("recovers when something else used the signer's next nonce", async () => {
    const key = manifest.accounts.facilitatorSigners[3].privateKey as Hex;
    // Its own queue, so its own worker (holding the wallet whose nonce was taken) sends the settlement.
    const single = await startFacilitator({ FACILITATOR_SIGNER_KEYS: key, QUEUE_PREFIX: 'mp:test-nonce-recovery' });
    try {
      const payer = payerAccount(manifest, 8);
      const first = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
      expect((await postJson(`${single.url}/settle`, first)).body.success).toBe(true);

      const outsider = createWalletClient({ account: privateKeyToAccount(key), chain: client.chain, transport: http(manifest.rpcUrl) });
      await outsider.sendTransaction({ to: merchant, value: 1n, chain: null });

      const second = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
      const secondResult = (await postJson(`${single.url}/settle`, second)).body;
      expect(secondResult, JSON.stringify(secondResult)).toMatchObject({ success: true });
      expect(await eventTypes(second.paymentPayload.payload.authorization.nonce)).toEqual([
        'payment.verified',
        'payment.submitted',
        'payment.resend',
        'payment.submitted',
        'payment.confirmed',
      ]);
    } finally {
      await single.close();
    }
  });

  it('sends anew, without waiting STUCK_TX_AFTER_MS, a payment whose pending transaction lost its nonce to a mined one', async () => {
    // The node goes on showing the transaction as pending after its nonce was used: anvil did so under load (its pool
    // kept a transaction it never mined while the wallet's nonce moved on). anvil_setNonce makes that state at will.
    const signer = manifest.accounts.facilitatorSigners[3];
    const lost = await startFacilitator({
      SETTLE_BUDGET_MS: '300',
      STUCK_TX_AFTER_MS: '600000',
      QUEUE_PREFIX: 'mp:test-nonce-lost-in-mempool',
      FACILITATOR_SIGNER_KEYS: signer.privateKey,
    });
    let orphan: Hex | undefined;
    try {
      const payer = payerAccount(manifest, 7);
      const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements());
      const nonce = body.paymentPayload.payload.authorization.nonce;
      await withAutomineOff(client, async () => {
        const pending = (await postJson(`${lost.url}/settle`, body)).body;
        expect(pending).toMatchObject({ errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x/) });
        orphan = pending.transaction as Hex;
        const sent = await client.getTransaction({ hash: orphan });
        expect(sent.blockNumber).toBeNull();
        await client.request({ method: 'anvil_setNonce' as never, params: [signer.address, `0x${(sent.nonce + 1).toString(16)}`] as never });
        expect((await client.getTransaction({ hash: orphan })).blockNumber).toBeNull();

        // `confirm` finds the nonce spent and sends the payment again from the wallet's next nonce.
        const sentAgain = ['payment.verified', 'payment.submitted', 'payment.resend', 'payment.submitted'];
        for (let i = 0; i < 100 && (await eventTypes(nonce)).length < sentAgain.length; i++) await new Promise((r) => setTimeout(r, 100));
        expect(await eventTypes(nonce)).toEqual(sentAgain);
        await mineBlock(client);
      });
      let settled = (await postJson(`${lost.url}/settle`, body)).body;
      for (let i = 0; i < 20 && !settled.success; i++) settled = (await postJson(`${lost.url}/settle`, body)).body;
      expect(settled).toMatchObject({ success: true });
      expect(settled.transaction).not.toBe(orphan);
      expect(await paymentRow(nonce)).toEqual([{ state: 'confirmed', tx_hash: settled.transaction, amount: amount.toString() }]);
      expect((await eventTypes(nonce)).at(-1)).toBe('payment.confirmed');
    } finally {
      if (orphan) await client.request({ method: 'anvil_dropTransaction' as never, params: [orphan] as never });
      await lost.close();
    }
  });

  describe('payment-identifier extension', () => {
    const extension = (id: string) => ({ 'payment-identifier': { info: { required: false, id }, schema: {} } });

    it('returns the original outcome for the same id and payload, and 409 for the same id with another payload', async () => {
      const payer = payerAccount(manifest, 8);
      const id = `pay_${Date.now()}_abcdefghij`;
      const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements(), extension(id));
      const first = await settle(body);
      expect(first.success).toBe(true);
      expect(await settle(body)).toEqual(first);

      const other = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements(), extension(id));
      for (const path of ['settle', 'verify']) {
        const conflict = await postJson(`${facilitator.url}/${path}`, other);
        expect(conflict.status).toBe(409);
        expect(conflict.contentType).toContain('application/problem+json');
        expect(conflict.body).toMatchObject({ status: 409, code: 'payment_identifier_conflict', detail: expect.stringContaining(id) });
      }
      expect(await paymentRow(other.paymentPayload.payload.authorization.nonce)).toEqual([]);
    });

    it('rejects a malformed id with a 400 naming the field', async () => {
      const payer = payerAccount(manifest, 8);
      const body = v2Body(await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount }), requirements(), extension('short'));
      const response = await postJson(`${facilitator.url}/settle`, body);
      expect(response.status).toBe(400);
      expect(response.body.invalidParams[0].name).toBe('paymentPayload.extensions.payment-identifier.info.id');
    });
  });

  describe('x402 v1', () => {
    it('verifies and settles a v1 payload with a named network, answering with that name', async () => {
      const payer = payerAccount(manifest, 9);
      const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
      const body = {
        x402Version: 1,
        paymentPayload: { x402Version: 1, scheme: 'exact', network: 'anvil', payload },
        paymentRequirements: {
          scheme: 'exact',
          network: 'anvil',
          maxAmountRequired: amount.toString(),
          resource: 'http://merchant.test/v1',
          description: 'v1 resource',
          mimeType: 'application/json',
          payTo: merchant,
          maxTimeoutSeconds: 60,
          asset: usdc.address,
          extra: { name: usdc.name, version: usdc.version },
        },
      };
      expect((await postJson(`${facilitator.url}/verify`, body)).body).toEqual({ isValid: true, payer: payer.address });
      const settled = await settle(body);
      expect(settled).toEqual({ success: true, transaction: expect.stringMatching(/^0x/), network: 'anvil', payer: payer.address });
      expect((await client.getTransactionReceipt({ hash: settled.transaction as Hex })).status).toBe('success');
    });
  });
});
