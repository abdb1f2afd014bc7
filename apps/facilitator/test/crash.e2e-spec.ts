import { spawn, type ChildProcess } from 'node:child_process';
import { parseEventLogs, type Address, type Hex } from 'viem';
import { eip3009Abi } from '@mp/chain';
import { appEntry, buildIfStale } from '../../../scripts/lib/build.mjs';
import { balanceOf, payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { TEST_DATABASE_URL } from '../../../test/support/facilitator';
import pg from 'pg';
import { freePort } from '../../../test/support/net';

/**
 * Kill the facilitator (SIGKILL) twice in the middle of 220 settlements and start it again: afterwards every
 * payment is confirmed, once, by the transaction the database names, and the chain and the database agree.
 */
describe('crash safety', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 1_000n;
  const total = 220;
  let child: ChildProcess | undefined;
  let url = '';

  async function start(port: number): Promise<void> {
    url = `http://127.0.0.1:${port}`;
    child = spawn(process.execPath, [appEntry('facilitator')], {
      env: {
        ...process.env,
        DATABASE_URL: TEST_DATABASE_URL,
        FACILITATOR_PORT: String(port),
        FACILITATOR_SIGNER_KEYS: [0, 1].map((i) => manifest.accounts.facilitatorSigners[i].privateKey).join(','),
        FACILITATOR_INSTANCE_ID: 'crash-test',
        FACILITATOR_OPEN_MODE: 'true',
        QUEUE_PREFIX: 'mp:crash-test',
        SETTLE_BUDGET_MS: '3000',
        RECOVERY_INTERVAL_MS: '300',
        LOG_LEVEL: 'warn',
      },
      stdio: 'ignore',
    });
    for (let i = 0; i < 200; i++) {
      if (await fetch(`${url}/health`).then((r) => r.ok, () => false)) return;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the facilitator did not start');
  }

  function kill(): Promise<void> {
    return new Promise((resolve) => {
      child!.once('exit', () => resolve());
      child!.kill('SIGKILL');
    });
  }

  const settle = (body: unknown) =>
    fetch(`${url}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
      .then((r) => r.json() as Promise<{ success: boolean; transaction: string; errorReason?: string }>)
      .catch(() => undefined);

  beforeAll(() => {
    buildIfStale();
  }, 180_000);
  afterAll(() => child?.kill('SIGKILL'));

  it('loses nothing and settles nothing twice across SIGKILLs', async () => {
    const port = await freePort();
    const bodies = await Promise.all(
      Array.from({ length: total }, async (_, i) =>
        v2Body(await signAuthorization(payerAccount(manifest, i % 3), usdc, manifest.chainId, { to: merchant, value: amount }), v2Requirements(manifest, usdc, amount)),
      ),
    );
    const merchantBefore = await balanceOf(client, usdc, merchant);
    await start(port);

    // Clients send in waves of 16; the process is killed twice while requests are in flight.
    const killAfter = new Set([50, 130]);
    let answered = 0;
    for (let i = 0; i < total; i += 16) {
      const wave = bodies.slice(i, i + 16).map(async (body) => {
        if ((await settle(body)) !== undefined) answered += 1;
      });
      if ([...killAfter].some((k) => i <= k && k < i + 16)) {
        await new Promise((r) => setTimeout(r, 15)); // mid-flight
        await kill();
        await Promise.all(wave);
        await start(port);
      } else {
        await Promise.all(wave);
      }
    }
    expect(answered).toBeLessThan(total);

    // Clients retry until each payment has its final answer, as the x402 resource server does on settlement_pending.
    const outcomes = new Map<number, { success: boolean; transaction: string }>();
    const deadline = Date.now() + 90_000;
    while (outcomes.size < total && Date.now() < deadline) {
      const pending = bodies.map((b, i) => [b, i] as const).filter(([, i]) => !outcomes.has(i));
      await Promise.all(
        pending.map(async ([body, i]) => {
          const result = await settle(body);
          if (result && result.errorReason !== 'settlement_pending') outcomes.set(i, result);
        }),
      );
    }
    expect([...outcomes.values()].filter((o) => !o.success)).toEqual([]);
    expect(outcomes.size).toBe(total);

    // The chain: exactly one transfer per payment, by the transaction each answer names.
    expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + BigInt(total) * amount);
    for (const [i, outcome] of outcomes) {
      const receipt = await client.getTransactionReceipt({ hash: outcome.transaction as Hex });
      const used = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationUsed', logs: receipt.logs });
      expect(used.map((l) => (l.args as { nonce: string }).nonce)).toEqual([bodies[i].paymentPayload.payload.authorization.nonce]);
    }

    // The database agrees: every payment confirmed with that transaction, nothing left in flight.
    const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await db.connect();
    try {
      const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce.toLowerCase());
      const { rows } = await db.query(
        `SELECT authorization_nonce AS nonce, state::text AS state, tx_hash AS hash FROM facilitator.payments WHERE authorization_nonce = ANY($1)`,
        [nonces],
      );
      expect(rows).toHaveLength(total);
      const byNonce = new Map(rows.map((r) => [r.nonce, r]));
      for (const [i, outcome] of outcomes) {
        expect(byNonce.get(nonces[i])).toEqual({ nonce: nonces[i], state: 'confirmed', hash: outcome.transaction });
      }
      // Every signed transaction that was mined belongs to a payment it settled (no stray second sends).
      const { rows: sent } = await db.query(
        `SELECT t.hash, p.tx_hash FROM facilitator.payment_transactions t JOIN facilitator.payments p ON p.id = t.payment_id WHERE p.authorization_nonce = ANY($1)`,
        [nonces],
      );
      for (const tx of sent) {
        if (tx.hash === tx.tx_hash) continue;
        const receipt = await client.getTransactionReceipt({ hash: tx.hash }).catch(() => undefined);
        expect(receipt, `a second transaction ${tx.hash} of a payment was mined`).toBeUndefined();
      }
    } finally {
      await db.end();
    }
  }, 240_000);
});
