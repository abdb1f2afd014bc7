// batch-settlement operations a /settle left pending and nobody asks about again: the finisher (a BullMQ job
// scheduler on the worker role) drives them to their outcome from the chain, with the transaction on record, once.
import { randomBytes } from 'node:crypto';
import { toClientEvmSigner } from '@x402/evm';
import { BatchSettlementEvmScheme as BatchClientScheme } from '@x402/evm/batch-settlement/client';
import { toHex, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { batchSettlementAbi } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { BATCH_SETTLEMENT_ADDRESS } from '@mp/x402';
import { mineBlock, testChain, withAutomineOff } from '../../../test/support/chain';
import { postJson, proxiedNetworksFile, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';

describe('the batch-settlement finisher', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const network = manifest.network as `${string}:${string}`;
  // claimed here and never settled: a receiver of this file alone, so no other suite's settle sweeps these claims in
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
    ).body as { success: boolean; errorReason?: string; transaction: Hex };

  /** A fresh channel with a deposit on chain, and the claim of its first voucher, as a resource server would send it. */
  const depositedClaim = async () => {
    const scheme = new BatchClientScheme(toClientEvmSigner(payer, client as never), { salt: toHex(randomBytes(32)) } as never);
    const deposit = (await scheme.createPaymentPayload(2, requirements as never)).payload as {
      channelConfig: Record<string, unknown>;
      voucher: { channelId: Hex; maxClaimableAmount: string; signature: string };
    };
    const deposited = await settle(deposit);
    expect(deposited, JSON.stringify(deposited)).toMatchObject({ success: true });
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
    return { claim, channelId: deposit.voucher.channelId, amount: BigInt(deposit.voucher.maxClaimableAmount) };
  };

  const totalClaimed = async (channelId: Hex) =>
    (await client.readContract({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'channels', args: [channelId] }))[1];

  /** The operation of `hash` once it is no longer pending (the finisher's doing: no request asks again). */
  const finishedOperation = async (hash: Hex) => {
    const db = facilitator.app.get(PrismaService);
    for (let i = 0; i < 600; i++) {
      const rows = await db.batchSettlementOperation.findMany({ where: { txHash: hash } });
      if (rows.length === 1 && rows[0].status !== 'pending') return rows[0];
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    throw new Error(`operation ${hash} still pending after 60 s`);
  };

  beforeAll(async () => {
    await client.request({ method: 'anvil_setBalance' as never, params: [sender.address, toHex(10n ** 20n)] as never });
    proxy = await startRpcProxy(manifest.rpcUrl);
    const file = proxiedNetworksFile(manifest, { rpcUrl: proxy.url, signerKeyEnv: 'BATCH_FINISHER_SIGNER', label: 'batch-finisher' });
    facilitator = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: file,
      BATCH_FINISHER_SIGNER: manifest.accounts.facilitatorSigners[3].privateKey,
      BATCH_SETTLEMENT_SENDER_KEY: senderKey,
      BATCH_SETTLEMENT_AUTHORIZER_KEY: authorizerKey,
      BATCH_SETTLEMENT_WAIT_MS: '300',
      RPC_TIMEOUT_MS: '300',
      RECOVERY_INTERVAL_MS: '500',
      QUEUE_PREFIX: `${process.env.QUEUE_PREFIX ?? 'mp'}:test-batch-finisher`,
    });
  });
  afterAll(async () => {
    await facilitator?.close();
    await proxy?.close();
  });

  it('confirms a claim whose broadcast answer was lost and which was mined after /settle answered settlement_pending', async () => {
    const { claim, channelId, amount } = await depositedClaim();
    const nonceBefore = await client.getTransactionCount({ address: sender.address });

    const pending = await withAutomineOff(client, async () => {
      proxy.set({ loseSendAnswers: true });
      try {
        return await settle(claim);
      } finally {
        proxy.set({ loseSendAnswers: false });
      }
    });
    expect(proxy.stats.sendsLost).toBeGreaterThan(0);
    expect(pending).toMatchObject({ success: false, errorReason: 'settlement_pending' });
    expect(pending.transaction).toMatch(/^0x[0-9a-f]{64}$/);
    await mineBlock(client);

    // nobody sends the claim again
    const operation = await finishedOperation(pending.transaction);
    expect(operation.status).toBe('succeeded');
    expect(operation.answer).toEqual({ success: true, transaction: pending.transaction, network });
    expect(await totalClaimed(channelId)).toBe(amount);
    expect(await client.getTransactionCount({ address: sender.address })).toBe(nonceBefore + 1);
    // the finisher's outcome wrote the claim's channel events with it, as /settle would have
    const events = await facilitator.app.get(PrismaService).channelEvent.findMany({ where: { channelId: channelId.toLowerCase() }, orderBy: { id: 'asc' } });
    expect(events.map((e) => [e.type, e.data])).toEqual([
      ['channel.opened', expect.objectContaining({ deposit: expect.any(String) })],
      ['channel.voucher_accepted', { delta: String(amount), acceptedCumulative: String(amount) }],
      ['channel.spent', { chargeId: `claim:${pending.transaction}`, amount: String(amount), spent: String(amount) }],
    ]);
    // a late repeat gets the recorded answer, no new transaction
    expect(await settle(claim)).toEqual({ success: true, transaction: pending.transaction, network });
    expect(await client.getTransactionCount({ address: sender.address })).toBe(nonceBefore + 1);
  });

  it('broadcasts the recorded transaction again when the node lost it, and confirms it, once', async () => {
    const { claim, channelId, amount } = await depositedClaim();
    const nonceBefore = await client.getTransactionCount({ address: sender.address });

    proxy.set({ dropSends: true });
    let pending: Awaited<ReturnType<typeof settle>>;
    try {
      pending = await settle(claim);
      expect(pending).toMatchObject({ success: false, errorReason: 'settlement_pending' });
      // the node never saw it
      await expect(client.getTransaction({ hash: pending.transaction })).rejects.toThrow();
    } finally {
      proxy.set({ dropSends: false });
    }
    expect(proxy.stats.sendsDropped).toBeGreaterThan(0);

    const operation = await finishedOperation(pending.transaction);
    expect(operation).toMatchObject({ status: 'succeeded', answer: { success: true, transaction: pending.transaction } });
    const receipt = await client.getTransactionReceipt({ hash: pending.transaction });
    expect(receipt.status).toBe('success');
    expect(await totalClaimed(channelId)).toBe(amount);
    expect(await client.getTransactionCount({ address: sender.address })).toBe(nonceBefore + 1);
  });
});
