// x402 `upto` on EVM end to end: the official @x402/evm upto client (buyer) and server scheme behind the official
// @x402/express middleware (merchant, charging for what a request used), settling through our facilitator on anvil,
// against our Permit2 and upto proxy at their canonical addresses.
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { x402Client } from '@x402/core/client';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { toClientEvmSigner } from '@x402/evm';
import { UptoEvmScheme as UptoClientScheme } from '@x402/evm/upto/client';
import { UptoEvmScheme as UptoServerScheme } from '@x402/evm/upto/server';
import { paymentMiddleware, setSettlementOverrides, x402ResourceServer } from '@x402/express';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import express from 'express';
import { createWalletClient, decodeEventLog, http, parseAbi, type Address, type Hex } from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { eip3009Abi } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { permitNonceKey, X402Header, type PaymentRequirementsV2 } from '@mp/x402';
import { deriveAccounts } from '../../../scripts/lib/deploy.mjs';
import { balanceOf, testChain } from '../../../test/support/chain';
import { postJson, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

describe('x402 upto on EVM, with the official @x402/evm upto client and server', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const [signerA, signerB] = manifest.accounts.facilitatorSigners;
  const MAX = 50_000n;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let shop: Server;
  let shopUrl: string;

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_SIGNER_KEYS: `${signerA.privateKey},${signerB.privateKey}` });
    db = facilitator.app.get(PrismaService);

    // The merchant: one route priced up to MAX, charging what the request says it used (?used=N atomic units).
    const resourceServer = new x402ResourceServer(new HTTPFacilitatorClient({ url: facilitator.url })).register(
      manifest.network as `${string}:${string}`,
      new UptoServerScheme(),
    );
    const app = express();
    app.use(
      paymentMiddleware(
        {
          'GET /metered': {
            accepts: {
              scheme: 'upto',
              network: manifest.network as `${string}:${string}`,
              payTo: merchant,
              price: { amount: MAX.toString(), asset: usdc.address, extra: { name: usdc.name, version: usdc.version } },
              maxTimeoutSeconds: 300,
            },
            description: 'metered work, charged by use',
          },
        },
        resourceServer,
      ),
    );
    app.get('/metered', (req, res) => {
      setSettlementOverrides(res, { amount: String(req.query.used) });
      res.json({ used: req.query.used });
    });
    shop = await new Promise<Server>((resolve) => {
      const server = app.listen(0, '127.0.0.1', () => resolve(server));
    });
    shopUrl = `http://127.0.0.1:${(shop.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => shop?.close(resolve));
    await facilitator?.close();
  });

  /** The official client, allowed to sign for up to MAX of the test USDC (not one of its default assets). */
  const upToMax = (account: PrivateKeyAccount) =>
    new x402Client()
      .register(manifest.network as `${string}:${string}`, new UptoClientScheme(toClientEvmSigner(account)))
      .setSpendControls({ allowedAssets: [{ network: manifest.network as `${string}:${string}`, asset: usdc.address, maxAmountPerPayment: MAX.toString() }] });
  const buyer = (account: PrivateKeyAccount) => wrapFetchWithPayment(fetch, upToMax(account));

  /** The requirements the server advertises (facilitatorAddress from our /supported), as a client would see them. */
  const requirements = (overrides: Partial<PaymentRequirementsV2> = {}, extra: Record<string, unknown> = {}) => ({
    scheme: 'upto',
    network: manifest.network,
    amount: MAX.toString(),
    asset: usdc.address,
    payTo: merchant,
    maxTimeoutSeconds: 300,
    extra: { name: usdc.name, version: usdc.version, assetTransferMethod: 'permit2', facilitatorAddress: signerA.address, ...extra },
    ...overrides,
  });
  /** A payload signed by the official upto client, as the facilitator's /verify and /settle receive it. */
  const signed = async (account: PrivateKeyAccount, accepted = requirements()) => {
    const { payload } = await new UptoClientScheme(toClientEvmSigner(account)).createPaymentPayload(2, accepted as never);
    return { x402Version: 2, paymentPayload: { x402Version: 2, accepted, payload }, paymentRequirements: accepted };
  };
  const charging = (body: Awaited<ReturnType<typeof signed>>, amount: bigint) => ({
    ...body,
    paymentRequirements: { ...body.paymentRequirements, amount: amount.toString() },
  });
  const post = async (path: string, body: unknown) => {
    const response = await postJson(`${facilitator.url}${path}`, body);
    expect(response.status).toBe(200);
    return response.body;
  };
  const nonceOf = (body: Awaited<ReturnType<typeof signed>>) =>
    permitNonceKey(BigInt((body.paymentPayload.payload as { permit2Authorization: { nonce: string } }).permit2Authorization.nonce));
  const paymentRows = (nonce: Hex) =>
    db.$queryRawUnsafe<{ id: string; state: string; scheme: string; amount: string; tx_hash: string | null }[]>(
      `SELECT id::text, state::text, scheme, amount::text, tx_hash FROM facilitator.payments WHERE authorization_nonce = $1`,
      nonce,
    );
  const events = (paymentId: string) =>
    db.$queryRawUnsafe<{ type: string; amount: string }[]>(
      `SELECT type, data->>'amount' AS amount FROM facilitator.payment_events WHERE payment_id = $1::uuid ORDER BY id`,
      paymentId,
    );
  const payer = privateKeyToAccount(manifest.accounts.payers.at(-4)!.privateKey as Hex);

  it('lists upto on /supported with one facilitator address, the same on every call', async () => {
    const first = (await (await fetch(`${facilitator.url}/supported`)).json()) as { kinds: { scheme: string }[] };
    const second = (await (await fetch(`${facilitator.url}/supported`)).json()) as { kinds: { scheme: string }[] };
    const upto = first.kinds.filter((k) => k.scheme === 'upto');
    expect(upto).toEqual([{ x402Version: 2, scheme: 'upto', network: manifest.network, extra: { facilitatorAddress: signerA.address } }]);
    expect(second.kinds).toEqual(first.kinds);
  });

  it('holds the maximum and charges what was used: one transfer of the actual amount, its events in the outbox', async () => {
    const [payerBefore, merchantBefore] = [await balanceOf(client, usdc, payer.address), await balanceOf(client, usdc, merchant)];
    let presented: string | undefined;
    const observed: typeof fetch = (input, init) => {
      presented ??= (input instanceof Request ? input.headers : new Headers(init?.headers)).get(X402Header.paymentSignature) ?? undefined;
      return fetch(input, init);
    };
    const response = await wrapFetchWithPayment(observed, upToMax(payer))(`${shopUrl}/metered?used=12345`);
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({ used: '12345' });
    const settlement = decodePaymentResponseHeader(response.headers.get(X402Header.paymentResponse)!);
    expect(settlement).toMatchObject({
      success: true,
      network: manifest.network,
      payer: payer.address,
      amount: '12345',
      transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/),
    });

    // On chain: exactly the charge moved, from the facilitator the witness names, through the proxy.
    const receipt = await client.getTransactionReceipt({ hash: settlement.transaction as Hex });
    expect(receipt.from.toLowerCase()).toBe(signerA.address.toLowerCase());
    expect(receipt.to?.toLowerCase()).toBe(manifest.contracts.x402UptoPermit2Proxy.toLowerCase());
    const transfers = receipt.logs.flatMap((log) => {
      try {
        const event = decodeEventLog({ abi: eip3009Abi, ...log });
        return event.eventName === 'Transfer' ? [event.args] : [];
      } catch {
        return [];
      }
    });
    expect(transfers).toEqual([{ from: payer.address, to: merchant, value: 12_345n }]);
    expect(await balanceOf(client, usdc, payer.address)).toBe(payerBefore - 12_345n);
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + 12_345n);

    // The durable record and its outbox events carry the charge, not the maximum.
    const payment = JSON.parse(Buffer.from(presented!, 'base64').toString()) as { payload: { permit2Authorization: { nonce: string } } };
    const [row] = await paymentRows(permitNonceKey(BigInt(payment.payload.permit2Authorization.nonce)));
    expect(row).toMatchObject({ state: 'confirmed', scheme: 'upto', amount: '12345', tx_hash: settlement.transaction });
    expect(await events(row.id)).toEqual([
      { type: 'payment.verified', amount: '12345' },
      { type: 'payment.submitted', amount: null },
      { type: 'payment.confirmed', amount: null },
    ]);

    // The same PAYMENT-SIGNATURE again: the permit is spent, so the merchant's /verify refuses it and nothing moves.
    const replay = await fetch(`${shopUrl}/metered?used=1`, { headers: { [X402Header.paymentSignature]: presented! } });
    expect(replay.status).toBe(402);
    expect(await balanceOf(client, usdc, payer.address)).toBe(payerBefore - 12_345n);
  });

  it('charges nothing for nothing used: success, no transaction, no record', async () => {
    const before = await balanceOf(client, usdc, payer.address);
    const response = await buyer(payer)(`${shopUrl}/metered?used=0`);
    expect(response.status).toBe(200);
    const settlement = decodePaymentResponseHeader(response.headers.get(X402Header.paymentResponse)!);
    expect(settlement).toMatchObject({ success: true, transaction: '', amount: '0' });
    expect(await balanceOf(client, usdc, payer.address)).toBe(before);

    const body = await signed(payer);
    expect(await post('/settle', charging(body, 0n))).toEqual({ success: true, transaction: '', network: manifest.network, payer: payer.address, amount: '0' });
    expect(await paymentRows(nonceOf(body))).toEqual([]);
  });

  it('settles a permit once: replays, concurrent or later, get the original outcome and send nothing again', async () => {
    const body = charging(await signed(payer), 777n);
    const before = await balanceOf(client, usdc, payer.address);
    const answers = await Promise.all(Array.from({ length: 8 }, () => post('/settle', body)));
    expect(new Set(answers.map((a) => JSON.stringify(a))).size).toBe(1);
    expect(answers[0]).toMatchObject({ success: true, amount: '777' });
    expect(await post('/settle', body)).toEqual(answers[0]);
    expect(await balanceOf(client, usdc, payer.address)).toBe(before - 777n);
    expect(await paymentRows(nonceOf(body))).toHaveLength(1);

    // The same permit for another amount (or zero) is another payload: refused as a spent permit, nothing sent.
    for (const other of [778n, 0n]) {
      expect(await post('/settle', { ...body, paymentRequirements: { ...body.paymentRequirements, amount: other.toString() } })).toMatchObject({
        success: false,
        errorReason: 'permit2_invalid_nonce',
        transaction: '',
      });
    }
    expect(await balanceOf(client, usdc, payer.address)).toBe(before - 777n);
    // And /verify sees it spent on chain.
    expect(await post('/verify', { ...body, paymentRequirements: body.paymentPayload.accepted })).toMatchObject({
      isValid: false,
      invalidReason: 'permit2_invalid_nonce',
    });
  });

  it('refuses a charge above the maximum, writing nothing', async () => {
    const body = await signed(payer);
    expect(await post('/settle', charging(body, MAX + 1n))).toMatchObject({
      success: false,
      errorReason: 'invalid_upto_evm_payload_settlement_exceeds_amount',
      transaction: '',
    });
    expect(await paymentRows(nonceOf(body))).toEqual([]);
    expect(await post('/verify', body)).toEqual({ isValid: true, payer: payer.address });
  });

  it('verifies against the maximum: balance and Permit2 allowance must cover all of it', async () => {
    // Anvil's accounts #18 and #19 are not in the manifest: no tokens, no Permit2 approval.
    const [poor, unapproved] = deriveAccounts(20)
      .slice(18)
      .map((k) => privateKeyToAccount(k.privateKey));
    expect(await post('/verify', await signed(poor))).toMatchObject({ isValid: false, invalidReason: 'permit2_insufficient_balance', payer: poor.address });

    const funder = createWalletClient({ account: payer, chain: client.chain!, transport: http(manifest.rpcUrl) });
    const erc20 = parseAbi([
      'function transfer(address to, uint256 amount) returns (bool)',
      'function approve(address spender, uint256 amount) returns (bool)',
    ]);
    const hash = await funder.writeContract({ address: usdc.address as Address, abi: erc20, functionName: 'transfer', args: [unapproved.address, MAX] });
    await client.waitForTransactionReceipt({ hash });
    expect(await post('/verify', await signed(unapproved))).toMatchObject({ isValid: false, invalidReason: 'permit2_allowance_required' });

    // Holding the maximum only: one unit less in the balance is enough to refuse.
    const approver = createWalletClient({ account: unapproved, chain: client.chain!, transport: http(manifest.rpcUrl) });
    await client.waitForTransactionReceipt({
      hash: await approver.writeContract({
        address: usdc.address as Address,
        abi: erc20,
        functionName: 'approve',
        args: [manifest.contracts.permit2 as Address, MAX],
      }),
    });
    expect(await post('/verify', await signed(unapproved))).toEqual({ isValid: true, payer: unapproved.address });
    expect(await post('/verify', await signed(unapproved, requirements({ amount: (MAX + 1n).toString() })))).toMatchObject({
      isValid: false,
      invalidReason: 'permit2_insufficient_balance',
    });
  });

  it('refuses a permit naming a facilitator that is not ours, and a signature by someone else', async () => {
    const stranger = privateKeyToAccount(manifest.accounts.payers.at(-5)!.privateKey as Hex);
    expect(await post('/verify', await signed(payer, requirements({}, { facilitatorAddress: stranger.address })))).toMatchObject({
      isValid: false,
      invalidReason: 'upto_facilitator_mismatch',
    });
    const body = await signed(payer);
    const forged = await signed(stranger);
    const permit = (b: typeof body) => b.paymentPayload.payload as { signature: string };
    permit(body).signature = permit(forged).signature;
    expect(await post('/verify', body)).toMatchObject({ isValid: false, invalidReason: 'invalid_permit2_signature' });
    expect(await post('/settle', charging(body, 1n))).toMatchObject({ success: false, errorReason: 'invalid_permit2_signature' });
    expect(await paymentRows(nonceOf(body))).toEqual([]);
  });

  it('settles from the signer the permit names, when it is not the one /supported lists', async () => {
    const body = charging(await signed(payer, requirements({}, { facilitatorAddress: signerB.address })), 5n);
    const answer = await post('/settle', body);
    expect(answer).toMatchObject({ success: true, amount: '5' });
    expect((await client.getTransactionReceipt({ hash: answer.transaction })).from.toLowerCase()).toBe(signerB.address.toLowerCase());
  });
});
