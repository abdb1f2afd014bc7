// batch-settlement transactions over an RPC that loses broadcast answers and lags on receipts: the node shows the
// recorded transaction's nonce as used while it still reports no receipt. A replacement signed then would revert (the
// deposit's authorization is used) or do nothing (the claim is applied, nothing is owed): it is not an outcome. Each
// operation keeps following its first transaction, whose receipt decides, and nothing is sent twice.
import { randomBytes } from 'node:crypto';
import { toClientEvmSigner } from '@x402/evm';
import { BatchSettlementEvmScheme as BatchClientScheme } from '@x402/evm/batch-settlement/client';
import { toHex, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { batchSettlementAbi } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { BATCH_SETTLEMENT_ADDRESS } from '@mp/x402';
import { balanceOf, testChain } from '../../../test/support/chain';
import { postJson, proxiedNetworksFile, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';

describe('batch-settlement transactions over an RPC that loses broadcast answers and lags on receipts', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const network = manifest.network as `${string}:${string}`;
  // a receiver of this file alone, so no other suite's settle sweeps its claims in
  const receiver = privateKeyToAccount(generatePrivateKey()).address;
  // wallets of this file alone (funded below), so no other suite's transactions move their nonces
  const [senderKey, authorizerKey] = [generatePrivateKey(), generatePrivateKey()];
  const [sender, authorizer] = [privateKeyToAccount(senderKey), privateKeyToAccount(authorizerKey)];
  const payer = privateKeyToAccount(manifest.accounts.payers[9].privateKey as Hex);
  const requirements = {
    scheme: 'batch-settlement',
    network,
    amount: '1000',
    asset: usdc.address,
    payTo: receiver,
    maxTimeoutSeconds: 120,
    extra: { receiverAuthorizer: authorizer.address, withdrawDelay: 900, name: usdc.name, version: usdc.version, minDeposit: '5000' },
  };
  let proxy: RpcProxy;
  let facilitator: RunningFacilitator;

  const settle = async (payload: unknown) =>
    (
      await postJson(`${facilitator.url}/settle`, {
        x402Version: 2,
        paymentPayload: { x402Version: 2, accepted: requirements, payload },
        paymentRequirements: requirements,
      })
    ).body as { success: boolean; errorReason?: string; transaction: Hex; amount?: string };

  const channel = async (channelId: Hex) =>
    client.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'channels', args: [channelId] });

  /** The operation that answered with `hash`: it must be the transaction on record, mined with success. */
  const recorded = async (hash: Hex) => {
    const db = facilitator.app.get(PrismaService);
    const rows = await db.batchSettlementOperation.findMany({ where: { txHash: hash } });
    expect(rows).toHaveLength(1);
    expect((await client.getTransactionReceipt({ hash })).status).toBe('success');
    return rows[0];
  };

  beforeAll(async () => {
    await client.request({ method: 'anvil_setBalance' as never, params: [sender.address, toHex(10n ** 20n)] as never });
    proxy = await startRpcProxy(manifest.rpcUrl);
    const file = proxiedNetworksFile(manifest, { rpcUrl: proxy.url, signerKeyEnv: 'BATCH_LOST_SIGNER', label: 'batch-lost' });
    facilitator = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: file,
      BATCH_LOST_SIGNER: manifest.accounts.facilitatorSigners[3].privateKey,
      BATCH_SETTLEMENT_SENDER_KEY: senderKey,
      BATCH_SETTLEMENT_AUTHORIZER_KEY: authorizerKey,
      BATCH_SETTLEMENT_WAIT_MS: '20000',
      RPC_TIMEOUT_MS: '300',
      FACILITATOR_ROLE: 'api',
      QUEUE_PREFIX: `${process.env.QUEUE_PREFIX ?? 'mp'}:test-batch-lost`,
    });
  });
  afterAll(async () => {
    await facilitator?.close();
    await proxy?.close();
  });

  it('deposits, claims and settles once each, answering with the transactions that did it', async () => {
    const nonceBefore = await client.getTransactionCount({ address: sender.address });
    const receiverBefore = await balanceOf(client, usdc, receiver);
    proxy.set({ loseSendAnswers: true, receiptLagMs: 300 });

    // the deposit: a replacement would revert (its authorization is used by the first transaction)
    const scheme = new BatchClientScheme(toClientEvmSigner(payer, client as never), { salt: toHex(randomBytes(32)) } as never);
    const deposit = (await scheme.createPaymentPayload(2, requirements as never)).payload as {
      channelConfig: Record<string, unknown>;
      voucher: { channelId: Hex; maxClaimableAmount: string; signature: string };
    };
    const deposited = await settle(deposit);
    expect(deposited, JSON.stringify(deposited)).toMatchObject({ success: true });
    expect((await recorded(deposited.transaction)).status).toBe('succeeded');
    const balance = (await channel(deposit.voucher.channelId))[0];
    expect(balance).toBeGreaterThanOrEqual(5000n);

    // the claim: a replacement would do nothing (the totals are recorded by the first transaction)
    const amount = BigInt(deposit.voucher.maxClaimableAmount);
    const claimed = await settle({
      type: 'claim',
      claims: [
        {
          voucher: { channel: deposit.channelConfig, maxClaimableAmount: deposit.voucher.maxClaimableAmount },
          signature: deposit.voucher.signature,
          totalClaimed: deposit.voucher.maxClaimableAmount,
        },
      ],
    });
    expect(claimed, JSON.stringify(claimed)).toMatchObject({ success: true });
    expect((await recorded(claimed.transaction)).status).toBe('succeeded');
    expect((await channel(deposit.voucher.channelId))[1]).toBe(amount);

    // the settle: a replacement would pay nothing (the first one paid): the answer and the books say what was paid
    const settled = await settle({ type: 'settle', receiver, token: usdc.address });
    expect(settled, JSON.stringify(settled)).toMatchObject({ success: true, amount: amount.toString() });
    expect((await recorded(settled.transaction)).status).toBe('succeeded');
    expect(await balanceOf(client, usdc, receiver)).toBe(receiverBefore + amount);
    const payments = await facilitator.app.get(PrismaService).payment.findMany({ where: { payTo: receiver.toLowerCase() } });
    expect(payments.map((p) => [p.txHash, p.amount.toString(), p.state])).toEqual([[settled.transaction, amount.toString(), 'confirmed']]);

    // the faults happened, and every operation is one transaction
    expect(proxy.stats.sendsLost).toBeGreaterThanOrEqual(3);
    expect(proxy.stats.receiptsHidden).toBeGreaterThanOrEqual(3);
    expect(await client.getTransactionCount({ address: sender.address })).toBe(nonceBefore + 3);
  });
});
