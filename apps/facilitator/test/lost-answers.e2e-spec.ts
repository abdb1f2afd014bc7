import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { parseEventLogs, type Address, type Hex } from 'viem';
import { eip3009Abi } from '@mp/chain';
import { balanceOf, payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { postJson, startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';
import { startRpcProxy, type RpcProxy } from '../../../test/support/rpc-proxy';

/**
 * The chain is the truth, whatever the RPC says: a broadcast whose answer is lost (one RPC, or the first of two behind
 * viem's fallback, whose second then hears "already known" / "nonce too low"), and a lagging node that shows no
 * receipt for a mined transaction. Every payment must be answered success with the hash that carried its transfer.
 */
describe('lost RPC answers and lagging nodes', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 1_000n;
  const payments = 100;
  const concurrency = 8;

  let proxy: RpcProxy;
  let facilitator: RunningFacilitator | undefined;
  beforeAll(async () => {
    proxy = await startRpcProxy(manifest.rpcUrl);
  });
  afterEach(async () => {
    await facilitator?.close();
    facilitator = undefined;
    proxy.set({ loseSendAnswers: false, receiptLagMs: 0 });
  });
  afterAll(() => proxy.close());

  async function boot(rpcUrls: string[], prefix: string): Promise<RunningFacilitator> {
    const file = join(mkdtempSync(join(tmpdir(), 'lost-answers-')), 'networks.json');
    writeFileSync(
      file,
      JSON.stringify({
        networks: [
          {
            network: manifest.network,
            displayName: 'anvil behind a misbehaving RPC',
            rpcUrls,
            pollingIntervalMs: 50,
            signerKeyEnv: ['LOST_SIGNER_A', 'LOST_SIGNER_B', 'LOST_SIGNER_C'],
            assets: [{ address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } }],
          },
        ],
      }),
    );
    const [a, b, c] = [1, 2, 3].map((i) => manifest.accounts.facilitatorSigners[i].privateKey);
    return startFacilitator({
      FACILITATOR_NETWORKS_FILE: file,
      LOST_SIGNER_A: a,
      LOST_SIGNER_B: b,
      LOST_SIGNER_C: c,
      RPC_TIMEOUT_MS: '300',
      SETTLE_BUDGET_MS: '30000',
      RECOVERY_INTERVAL_MS: '500',
      QUEUE_PREFIX: `mp:test-lost-${prefix}`,
    });
  }

  /**
   * Settles `payments` distinct payments, `concurrency` at a time, asking again as a client does while the answer is
   * settlement_pending, or unexpected_settle_error with nothing sent (the facilitator says settling again is safe: a
   * read batched with a lost broadcast loses its answer too).
   */
  async function settleAll(url: string) {
    const bodies = await Promise.all(
      Array.from({ length: payments }, async (_, i) =>
        v2Body(
          await signAuthorization(payerAccount(manifest, i % 10), usdc, manifest.chainId, { to: merchant, value: amount }),
          v2Requirements(manifest, usdc, amount),
        ),
      ),
    );
    const answers: { success: boolean; transaction: string; errorReason?: string }[] = new Array(payments);
    let next = 0;
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let i = next++; i < payments; i = next++) {
          let answer = (await postJson(`${url}/settle`, bodies[i])).body;
          const retryable = (a: typeof answer) =>
            a.errorReason === 'settlement_pending' || (a.errorReason === 'unexpected_settle_error' && a.transaction === '');
          for (let retry = 0; retry < 20 && retryable(answer); retry++) answer = (await postJson(`${url}/settle`, bodies[i])).body;
          answers[i] = answer;
        }
      }),
    );
    return { bodies, answers };
  }

  /** Every answer is success with the transaction that used its authorization; the database says the same. */
  async function expectAllCarried(
    bodies: Awaited<ReturnType<typeof settleAll>>['bodies'],
    answers: Awaited<ReturnType<typeof settleAll>>['answers'],
    before: bigint,
  ) {
    const contradicting = answers.filter((a) => !a.success);
    expect(contradicting, `answers that contradict the chain: ${JSON.stringify(contradicting.slice(0, 3))}`).toEqual([]);
    for (const [i, answer] of answers.entries()) {
      const receipt = await client.getTransactionReceipt({ hash: answer.transaction as Hex });
      const used = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationUsed', logs: receipt.logs }).map((l) =>
        (l.args as { nonce: Hex }).nonce.toLowerCase(),
      );
      expect(used).toContain(bodies[i].paymentPayload.payload.authorization.nonce.toLowerCase());
    }
    expect(await balanceOf(client, usdc, merchant)).toBe(before + BigInt(payments) * amount);
    const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await db.connect();
    try {
      const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce.toLowerCase());
      const { rows } = await db.query(
        `SELECT authorization_nonce AS nonce, state::text AS state, tx_hash AS hash FROM facilitator.payments WHERE authorization_nonce = ANY($1)`,
        [nonces],
      );
      const byNonce = new Map(rows.map((r) => [r.nonce, r]));
      for (const [i, answer] of answers.entries()) expect(byNonce.get(nonces[i])).toEqual({ nonce: nonces[i], state: 'confirmed', hash: answer.transaction });
    } finally {
      await db.end();
    }
  }

  it('one RPC that loses every broadcast answer', async () => {
    proxy.set({ loseSendAnswers: true });
    facilitator = await boot([proxy.url], 'one');
    const before = await balanceOf(client, usdc, merchant);
    const { bodies, answers } = await settleAll(facilitator.url);
    expect(proxy.stats.sendsLost).toBeGreaterThan(0);
    await expectAllCarried(bodies, answers, before);
  }, 180_000);

  it('two RPCs behind a fallback, the first losing every broadcast answer', async () => {
    proxy.set({ loseSendAnswers: true });
    const lostBefore = proxy.stats.sendsLost;
    facilitator = await boot([proxy.url, manifest.rpcUrl], 'two');
    const before = await balanceOf(client, usdc, merchant);
    const { bodies, answers } = await settleAll(facilitator.url);
    expect(proxy.stats.sendsLost).toBeGreaterThan(lostBefore);
    await expectAllCarried(bodies, answers, before);
  }, 180_000);

  it('a lagging node that shows no receipt (nor the transaction) for a while after it is mined', async () => {
    proxy.set({ receiptLagMs: 1_500 });
    facilitator = await boot([proxy.url], 'lag');
    const before = await balanceOf(client, usdc, merchant);
    const { bodies, answers } = await settleAll(facilitator.url);
    expect(proxy.stats.receiptsHidden).toBeGreaterThan(0);
    await expectAllCarried(bodies, answers, before);
  }, 180_000);
});
