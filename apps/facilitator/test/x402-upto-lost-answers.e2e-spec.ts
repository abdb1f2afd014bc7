// upto charges whose broadcast answers are lost and whose receipts lag: the outcome comes from the chain (the receipt
// of a transaction we recorded, Permit2's nonce bitmap), each permit is charged once, and every answer says so.
import { toClientEvmSigner } from '@x402/evm';
import { UptoEvmScheme as UptoClientScheme } from '@x402/evm/upto/client';
import { parseEventLogs, type Address, type Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { eip3009Abi, PERMIT2_ADDRESS, permit2Abi } from '@mp/chain';
import { PrismaService } from '@mp/db';
import { permitNonceKey } from '@mp/x402';
import { balanceOf, testChain } from '../../../test/support/chain';
import { postJson, proxiedNetworksFile, startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';

describe('upto settlements over an RPC that loses broadcast answers and lags on receipts', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const signer = manifest.accounts.facilitatorSigners[2];
  let proxy: RpcProxy;
  let facilitator: RunningFacilitator;

  beforeAll(async () => {
    proxy = await startRpcProxy(manifest.rpcUrl);
    const file = proxiedNetworksFile(manifest, { rpcUrl: proxy.url, signerKeyEnv: 'UPTO_LOST_SIGNER', label: 'upto-lost' });
    facilitator = await startFacilitator({
      FACILITATOR_NETWORKS_FILE: file,
      UPTO_LOST_SIGNER: signer.privateKey,
      RPC_TIMEOUT_MS: '300',
      SETTLE_BUDGET_MS: '30000',
      RECOVERY_INTERVAL_MS: '500',
      QUEUE_PREFIX: 'mp:test-upto-lost',
    });
  });
  afterAll(async () => {
    await facilitator?.close();
    await proxy?.close();
  });

  it('answers every charge with the transaction that carried it, once', async () => {
    proxy.set({ loseSendAnswers: true, receiptLagMs: 300 });
    const payers = [-4, -5, -6].map((i) => privateKeyToAccount(manifest.accounts.payers.at(i)!.privateKey as Hex));
    const accepted = {
      scheme: 'upto',
      network: manifest.network,
      amount: '90000',
      asset: usdc.address,
      payTo: merchant,
      maxTimeoutSeconds: 300,
      extra: { name: usdc.name, version: usdc.version, assetTransferMethod: 'permit2', facilitatorAddress: signer.address },
    };
    const bodies = await Promise.all(
      Array.from({ length: 6 }, async (_, i) => {
        const { payload } = await new UptoClientScheme(toClientEvmSigner(payers[i % payers.length])).createPaymentPayload(2, accepted as never);
        return { x402Version: 2, paymentPayload: { x402Version: 2, accepted, payload }, paymentRequirements: { ...accepted, amount: String(1_000 + i) } };
      }),
    );
    const before = await balanceOf(client, usdc, merchant);

    const answers = await Promise.all(
      bodies.map(async (body) => {
        let answer = (await postJson(`${facilitator.url}/settle`, body)).body;
        const retryable = (a: typeof answer) => a.errorReason === 'settlement_pending' || (a.errorReason === 'unexpected_settle_error' && a.transaction === '');
        for (let retry = 0; retry < 20 && retryable(answer); retry++) answer = (await postJson(`${facilitator.url}/settle`, body)).body;
        return answer as { success: boolean; transaction: Hex; amount: string };
      }),
    );

    expect(proxy.stats.sendsLost).toBeGreaterThan(0);
    expect(answers.filter((a) => !a.success)).toEqual([]);
    const db = facilitator.app.get(PrismaService);
    for (const [i, answer] of answers.entries()) {
      expect(answer.amount).toBe(String(1_000 + i));
      const receipt = await client.getTransactionReceipt({ hash: answer.transaction });
      const transfers = parseEventLogs({ abi: eip3009Abi, eventName: 'Transfer', logs: receipt.logs });
      expect(transfers.map((t) => t.args)).toEqual([{ from: payers[i % payers.length].address, to: merchant, value: BigInt(1_000 + i) }]);
      const { nonce } = (bodies[i].paymentPayload.payload as { permit2Authorization: { nonce: string } }).permit2Authorization;
      const word = await client.readContract({
        address: PERMIT2_ADDRESS,
        abi: permit2Abi,
        functionName: 'nonceBitmap',
        args: [payers[i % payers.length].address, BigInt(nonce) >> 8n],
      });
      expect(word & (1n << (BigInt(nonce) & 0xffn))).not.toBe(0n);
      const rows = await db.$queryRawUnsafe<{ state: string; tx_hash: string }[]>(
        `SELECT state::text, tx_hash FROM facilitator.payments WHERE authorization_nonce = $1`,
        permitNonceKey(BigInt(nonce)),
      );
      expect(rows).toEqual([{ state: 'confirmed', tx_hash: answer.transaction }]);
    }
    // Each permit charged exactly once: the merchant got the sum of the charges, no more.
    expect(await balanceOf(client, usdc, merchant)).toBe(before + bodies.reduce((sum, _, i) => sum + BigInt(1_000 + i), 0n));
  }, 120_000);
});
