import type { Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { toClientEvmSigner } from '@x402/evm';
import { BatchSettlementEvmScheme as BatchClientScheme } from '@x402/evm/batch-settlement/client';
import { BatchSettlementEvmScheme as BatchServerScheme } from '@x402/evm/batch-settlement/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { toHex, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { batchSettlementAbi } from '@mp/chain';
import { BATCH_SETTLEMENT_ADDRESS, channelIdOf, decodeHeader } from '@mp/x402';
import { deriveAccounts } from '../../../scripts/lib/deploy.mjs';
import { balanceOf, testChain } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

/**
 * The official @x402/evm batch-settlement client and server (with @x402/express and @x402/fetch) against our
 * facilitator and our contracts at the canonical addresses: a deposit, vouchers, a corrective 402 after the client
 * lost its record, claim + settle through the server's channel manager, a cooperative refund, and /settle answered
 * once per request (a repeat gets the recorded answer, not a second transaction).
 */
describe('x402 batch-settlement end to end', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const network = manifest.network as `${string}:${string}`;
  const PRICE = '1000';
  // anvil funds 20 accounts; the manifest names 16: the next two are batch-settlement's own wallets here
  const [sender, authorizer] = deriveAccounts(18).slice(16);
  const payer = privateKeyToAccount(manifest.accounts.payers[7].privateKey as Hex);
  const receiver = manifest.accounts.merchant.address as Address;
  const salt = toHex(randomBytes(32));
  const requirements = {
    scheme: 'batch-settlement',
    network,
    amount: PRICE,
    asset: usdc.address,
    payTo: receiver,
    maxTimeoutSeconds: 120,
    extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: usdc.name, version: usdc.version },
  };
  const stranger = () => privateKeyToAccount(toHex(randomBytes(32))).address;
  let facilitator: RunningFacilitator;
  let server: Server;
  let url: string;
  let serverScheme: BatchServerScheme;
  let facilitatorClient: HTTPFacilitatorClient;

  const paying = (scheme: BatchClientScheme) =>
    new x402Client().register(network, scheme).setSpendControls({ allowedAssets: [{ network, asset: usdc.address, maxAmountPerPayment: '100000' }] });
  const payingClient = (channelSalt: Hex = salt) => {
    const scheme = new BatchClientScheme(toClientEvmSigner(payer, client as never), { salt: channelSalt } as never);
    return { scheme, fetch: wrapFetchWithPayment(fetch, paying(scheme)) };
  };
  const channel = async () => {
    const channelId = channelIdOf(
      { payer: payer.address, payerAuthorizer: payer.address, receiver, receiverAuthorizer: authorizer.address, token: usdc.address, withdrawDelay: 900, salt },
      manifest.chainId,
    );
    const [balance, totalClaimed] = await client.readContract({
      address: BATCH_SETTLEMENT_ADDRESS,
      abi: batchSettlementAbi,
      functionName: 'channels',
      args: [channelId],
    });
    return { channelId, balance, totalClaimed };
  };

  beforeAll(async () => {
    facilitator = await startFacilitator({ BATCH_SETTLEMENT_SENDER_KEY: sender.privateKey, BATCH_SETTLEMENT_AUTHORIZER_KEY: authorizer.privateKey });
    facilitatorClient = new HTTPFacilitatorClient({ url: facilitator.url });
    serverScheme = new BatchServerScheme(receiver, { withdrawDelay: 900 });
    const resourceServer = new x402ResourceServer(facilitatorClient).register(network, serverScheme);
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /metered': {
            accepts: {
              scheme: 'batch-settlement',
              network,
              payTo: receiver,
              price: { amount: PRICE, asset: usdc.address, extra: { name: usdc.name, version: usdc.version } },
              maxTimeoutSeconds: 120,
            },
            description: 'one metered call',
          },
        },
        resourceServer,
      ),
    );
    app.get('/metered', (_req, res) => {
      res.json({ ok: true });
    });
    server = await new Promise<Server>((resolve) => {
      const s = app.listen(0, '127.0.0.1', () => resolve(s));
    });
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}/metered`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server?.close(resolve));
    await facilitator?.close();
  });

  it('advertises batch-settlement with the receiverAuthorizer it holds', async () => {
    const supported = (await (await fetch(`${facilitator.url}/supported`)).json()) as { kinds: unknown[] };
    expect(supported.kinds).toContainEqual({ x402Version: 2, scheme: 'batch-settlement', network, extra: { receiverAuthorizer: authorizer.address } });
  });

  it('deposits once, pays later calls with vouchers, recovers from a corrective 402, claims, settles and refunds', async () => {
    const payerBefore = await balanceOf(client, usdc, payer.address);
    const receiverBefore = await balanceOf(client, usdc, receiver);
    const buyer = payingClient();

    // 1. the first call deposits (the server's minDeposit hint: 10 × the price), the next ones only sign vouchers
    const first = await buyer.fetch(url);
    expect(first.status).toBe(200);
    const firstSettlement = decodePaymentResponseHeader(first.headers.get('PAYMENT-RESPONSE')!);
    expect(firstSettlement.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    const deposited = await channel();
    expect(deposited.balance).toBeGreaterThanOrEqual(10_000n);
    expect(await balanceOf(client, usdc, payer.address)).toBe(payerBefore - deposited.balance);
    for (let i = 0; i < 3; i++) {
      const paid = await buyer.fetch(url);
      expect(paid.status).toBe(200);
      expect(decodePaymentResponseHeader(paid.headers.get('PAYMENT-RESPONSE')!).transaction).toBe('');
    }

    // 2. a client that lost its record starts from the chain (nothing claimed yet): the server answers a corrective
    // 402 carrying channelState + voucherState, the client adopts it and pays
    const corrective: unknown[] = [];
    const forgetful = new BatchClientScheme(toClientEvmSigner(payer, client as never), { salt } as never);
    const observed: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const required = response.headers.get('PAYMENT-REQUIRED');
      if (response.status === 402 && required) corrective.push((decodeHeader(required) as { accepts: { extra?: unknown }[] }).accepts[0].extra);
      return response;
    };
    const recovered = await wrapFetchWithPayment(observed, paying(forgetful))(url);
    expect(recovered.status).toBe(200);
    // the first 402 is the plain offer; the corrective one follows the rejected voucher
    expect(corrective.at(-1)).toMatchObject({
      channelState: { channelId: deposited.channelId, chargedCumulativeAmount: String(4n * BigInt(PRICE)) },
      voucherState: { signedMaxClaimable: String(4n * BigInt(PRICE)) },
    });

    // 3. the server's channel manager claims every voucher and settles to the receiver
    const manager = serverScheme.createChannelManager(facilitatorClient, network, usdc.address);
    await manager.claimAndSettle();
    const claimed = await channel();
    expect(claimed.totalClaimed).toBe(5n * BigInt(PRICE));
    expect(await balanceOf(client, usdc, receiver)).toBe(receiverBefore + 5n * BigInt(PRICE));

    // 4. a cooperative refund returns the unclaimed rest to the payer
    const refund = await forgetful.refund(url);
    expect(refund).toMatchObject({ success: true });
    const after = await channel();
    expect(after.balance).toBe(after.totalClaimed);
    expect(await balanceOf(client, usdc, payer.address)).toBe(payerBefore - 5n * BigInt(PRICE));
  });

  it('answers a repeated /settle with the recorded outcome, without a second transaction', async () => {
    const body = {
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: requirements, payload: { type: 'settle', receiver, token: usdc.address } },
      paymentRequirements: requirements,
    };
    // nothing owed after the test above: the protocol's own answer, no transaction
    const nothing = await postJson(`${facilitator.url}/settle`, body);
    expect(nothing.body).toMatchObject({ success: false, errorReason: 'invalid_batch_settlement_evm_nothing_to_settle', transaction: '' });

    const unknownType = await postJson(`${facilitator.url}/verify`, { ...body, paymentPayload: { ...body.paymentPayload, payload: { type: 'teleport' } } });
    expect(unknownType.status).toBe(200);
    expect(unknownType.body).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_payload_type' });
    const malformed = await postJson(`${facilitator.url}/verify`, {
      ...body,
      paymentPayload: { ...body.paymentPayload, payload: { type: 'voucher', voucher: {} } },
    });
    expect(malformed.status).toBe(400);

    // two identical deposits at once: one transaction, both answers name it
    const buyer = payingClient(toHex(randomBytes(32)));
    const payloadOf = async () => {
      const created = await buyer.scheme.createPaymentPayload(2, { ...requirements, extra: { ...requirements.extra, minDeposit: '5000' } } as never);
      return created.payload;
    };
    const payload = await payloadOf();
    const depositBody = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload }, paymentRequirements: requirements };
    const nonceBefore = await client.getTransactionCount({ address: sender.address });
    const [a, b] = await Promise.all([postJson(`${facilitator.url}/settle`, depositBody), postJson(`${facilitator.url}/settle`, depositBody)]);
    expect(a.body, JSON.stringify(a.body)).toMatchObject({ success: true });
    expect(b.body).toEqual(a.body);
    const again = await postJson(`${facilitator.url}/settle`, depositBody);
    expect(again.body).toEqual(a.body);
    expect(await client.getTransactionCount({ address: sender.address })).toBe(nonceBefore + 1);
  });

  it('answers settlement_pending while its transaction is unmined, and the same request later gets the outcome from the chain', async () => {
    const slow = await startFacilitator({
      BATCH_SETTLEMENT_SENDER_KEY: sender.privateKey,
      BATCH_SETTLEMENT_AUTHORIZER_KEY: authorizer.privateKey,
      BATCH_SETTLEMENT_WAIT_MS: '300',
    });
    const rpc = (method: string, params: unknown[] = []) => client.request({ method: method as never, params: params as never });
    try {
      // a fresh channel with a deposit whose voucher the receiver claims
      const buyer = payingClient(toHex(randomBytes(32)));
      const created = await buyer.scheme.createPaymentPayload(2, { ...requirements, extra: { ...requirements.extra, minDeposit: '5000' } } as never);
      const deposit = created.payload as { channelConfig: Record<string, unknown>; voucher: { maxClaimableAmount: string; signature: string } };
      const deposited = await postJson(`${facilitator.url}/settle`, {
        x402Version: 2,
        paymentPayload: { x402Version: 2, accepted: requirements, payload: deposit },
        paymentRequirements: requirements,
      });
      expect(deposited.body).toMatchObject({ success: true });
      const claim = {
        type: 'claim',
        claims: [
          {
            voucher: { channel: deposit.channelConfig, maxClaimableAmount: deposit.voucher.maxClaimableAmount },
            signature: deposit.voucher.signature,
            totalClaimed: deposit.voucher.maxClaimableAmount,
          },
        ],
      };
      const claimBody = { x402Version: 2, paymentPayload: { x402Version: 2, accepted: requirements, payload: claim }, paymentRequirements: requirements };
      const nonceBefore = await client.getTransactionCount({ address: sender.address });

      await rpc('evm_setAutomine', [false]);
      let pending: { body: { success: boolean; errorReason?: string; transaction: string } };
      try {
        pending = await postJson(`${slow.url}/settle`, claimBody);
        expect(pending.body).toMatchObject({ success: false, errorReason: 'settlement_pending' });
        expect(pending.body.transaction).toMatch(/^0x[0-9a-f]{64}$/);
        // asked again while still unmined: the same transaction, not a second one
        expect((await postJson(`${slow.url}/settle`, claimBody)).body).toMatchObject({
          errorReason: 'settlement_pending',
          transaction: pending.body.transaction,
        });
      } finally {
        await rpc('evm_setAutomine', [true]);
      }
      await rpc('evm_mine');
      const settled = await postJson(`${facilitator.url}/settle`, claimBody);
      expect(settled.body).toMatchObject({ success: true, transaction: pending.body.transaction });
      expect(await client.getTransactionCount({ address: sender.address })).toBe(nonceBefore + 1);
    } finally {
      await slow.close();
    }
  });

  it('refuses deposits and vouchers in the spec order, with its reason strings', async () => {
    const verify = async (payload: unknown, reqs: Record<string, unknown> = requirements) =>
      (await postJson(`${facilitator.url}/verify`, { x402Version: 2, paymentPayload: { x402Version: 2, accepted: reqs, payload }, paymentRequirements: reqs }))
        .body;
    const buyer = payingClient(toHex(randomBytes(32)));
    const withMin = (minDeposit: string) => ({ ...requirements, extra: { ...requirements.extra, minDeposit } });
    const deposit = (await buyer.scheme.createPaymentPayload(2, withMin('5000') as never)).payload as {
      type: string;
      channelConfig: Record<string, unknown>;
      voucher: { channelId: string; maxClaimableAmount: string; signature: string };
    };
    expect(await verify(deposit)).toMatchObject({
      isValid: true,
      extra: { channelId: deposit.voucher.channelId, balance: '0', totalClaimed: '0', refundNonce: '0' },
    });

    // a payer's deposit needs time (x402 wants maxTimeoutSeconds positive); the receiver's own operations carry 0
    expect(await verify(deposit, { ...withMin('5000'), maxTimeoutSeconds: 0 })).toMatchObject({
      isValid: false,
      invalidReason: 'invalid_payment_requirements',
    });
    const settleWithZero = { ...requirements, amount: '0', maxTimeoutSeconds: 0, extra: {} };
    const nothingOwed = await postJson(`${facilitator.url}/settle`, {
      x402Version: 2,
      paymentPayload: { x402Version: 2, accepted: settleWithZero, payload: { type: 'settle', receiver: stranger(), token: usdc.address } },
      paymentRequirements: settleWithZero,
    });
    expect(nothingOwed.body).toMatchObject({ errorReason: 'invalid_batch_settlement_evm_nothing_to_settle' });

    const other = manifest.accounts.payers[8].address;
    expect(await verify(deposit, { ...requirements, payTo: other })).toMatchObject({ invalidReason: 'invalid_batch_settlement_evm_receiver_mismatch' });
    expect(await verify(deposit, { ...requirements, extra: { ...requirements.extra, withdrawDelay: 901 } })).toMatchObject({
      invalidReason: 'invalid_batch_settlement_evm_withdraw_delay_mismatch',
    });
    expect(await verify({ ...deposit, channelConfig: { ...deposit.channelConfig, salt: toHex(randomBytes(32)) } })).toMatchObject({
      invalidReason: 'invalid_batch_settlement_evm_channel_id_mismatch',
    });
    const forged = await privateKeyToAccount(toHex(randomBytes(32))).signTypedData({
      domain: { name: 'x402 Batch Settlement', version: '1', chainId: manifest.chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS },
      types: {
        Voucher: [
          { name: 'channelId', type: 'bytes32' },
          { name: 'maxClaimableAmount', type: 'uint128' },
        ],
      },
      primaryType: 'Voucher',
      message: { channelId: deposit.voucher.channelId as Hex, maxClaimableAmount: BigInt(deposit.voucher.maxClaimableAmount) },
    });
    expect(await verify({ ...deposit, voucher: { ...deposit.voucher, signature: forged } })).toMatchObject({
      invalidReason: 'invalid_batch_settlement_evm_voucher_signature',
    });
    // a voucher for a channel nobody deposited into
    expect(await verify({ type: 'voucher', channelConfig: deposit.channelConfig, voucher: deposit.voucher })).toMatchObject({
      invalidReason: 'invalid_batch_settlement_evm_channel_not_found',
    });
    // more than the payer holds
    const huge = (await payingClient(toHex(randomBytes(32))).scheme.createPaymentPayload(2, withMin((10n ** 15n).toString()) as never)).payload;
    expect(await verify(huge)).toMatchObject({ isValid: false, invalidReason: 'invalid_batch_settlement_evm_insufficient_balance' });
  });
});
