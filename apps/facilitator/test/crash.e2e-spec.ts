import { spawn, type ChildProcess } from 'node:child_process';
import { parseEventLogs, type Address, type Hex } from 'viem';
import { eip3009Abi } from '@mp/chain';
import { appEntry, buildIfStale } from '../../../scripts/lib/build.mjs';
import { balanceOf, payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { TEST_DATABASE_URL } from '../../../test/support/facilitator';
import pg from 'pg';
import { freePort } from '../../../test/support/net';

/**
 * Kill the facilitator (SIGKILL) at least 3 times in the middle of 300 settlements (batching on) and start it again
 * each time: once as soon as a transaction is recorded, then at crash points drawn at random (after a record, after a
 * broadcast, a batch's, before a receipt is recorded). Afterwards every caller has its final answer, every payment is
 * confirmed once by the transaction the database names, and the chain and the database agree.
 */
describe('crash safety', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 1_000n;
  const total = 300;
  const seed = Number(process.env.CRASH_SEED ?? Date.now() % 100_000);
  const CRASH_POINTS = ['settlement.recorded', 'settlement.broadcast', 'batch.recorded', 'batch.broadcast', 'receipt.read'];
  let child: ChildProcess | undefined;
  let url = '';
  let finished = false;
  let boots = 0;
  let kills = 0;

  /** A small deterministic generator, so a failing plan can be replayed with CRASH_SEED. */
  const random = (() => {
    let state = seed || 1;
    return () => (state = (state * 48_271) % 2_147_483_647) / 2_147_483_647;
  })();
  const plan: string[] = [
    '',
    ...Array.from({ length: 3 }, () => `${CRASH_POINTS[Math.floor(random() * CRASH_POINTS.length)]}@${1 + Math.floor(random() * 5)}`),
  ];

  async function start(port: number): Promise<void> {
    url = `http://127.0.0.1:${port}`;
    const crashPoints = plan[boots] ?? '';
    boots += 1;
    const spawned = spawn(process.execPath, [appEntry('facilitator')], {
      env: {
        ...process.env,
        DATABASE_URL: TEST_DATABASE_URL,
        FACILITATOR_PORT: String(port),
        FACILITATOR_SIGNER_KEYS: [0, 1].map((i) => manifest.accounts.facilitatorSigners[i].privateKey).join(','),
        FACILITATOR_INSTANCE_ID: 'crash-test',
        FACILITATOR_OPEN_MODE: 'true',
        QUEUE_PREFIX: 'mp:crash-test',
        SETTLE_BUDGET_MS: '3000',
        SETTLE_BATCH_MAX: '4',
        RECOVERY_INTERVAL_MS: '300',
        LOG_LEVEL: 'warn',
        CRASH_POINTS: crashPoints,
      },
      stdio: 'ignore',
    });
    child = spawned;
    spawned.once('exit', (_code, signal) => {
      if (signal === 'SIGKILL') kills += 1;
      if (!finished && child === spawned) void start(port);
    });
    for (let i = 0; i < 200; i++) {
      if (
        await fetch(`${url}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      if (spawned.exitCode !== null || spawned.signalCode !== null) return; // died at a crash point while booting: restarted
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the facilitator did not start');
  }

  /** Settles one payment as a client does: again after a dropped connection or settlement_pending, until final. */
  async function settleUntilFinal(body: unknown, deadline: number): Promise<{ success: boolean; transaction: string; errorReason?: string } | undefined> {
    while (Date.now() < deadline) {
      const answer = await fetch(`${url}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
        .then((r) => r.json() as Promise<{ success: boolean; transaction: string; errorReason?: string }>)
        .catch(() => undefined);
      if (answer && answer.errorReason !== 'settlement_pending') return answer;
      await new Promise((r) => setTimeout(r, answer ? 0 : 100));
    }
    return undefined;
  }

  async function receiptOrUndefined(hash: Hex) {
    return client.getTransactionReceipt({ hash }).catch((error: unknown) => {
      if (error instanceof Error && error.name === 'TransactionReceiptNotFoundError') return undefined;
      throw error;
    });
  }

  beforeAll(() => {
    buildIfStale();
  }, 180_000);
  afterAll(() => {
    finished = true;
    child?.kill('SIGKILL');
  });

  it('loses nothing and settles nothing twice across SIGKILLs at random crash points', async () => {
    console.log(`[crash] CRASH_SEED=${seed} plan: ${plan.map((p) => p || 'kill once a transaction is recorded').join(' → ')}`);
    const port = await freePort();
    const bodies = await Promise.all(
      Array.from({ length: total }, async (_, i) =>
        v2Body(
          await signAuthorization(payerAccount(manifest, i % 3), usdc, manifest.chainId, { to: merchant, value: amount }),
          v2Requirements(manifest, usdc, amount),
        ),
      ),
    );
    const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce.toLowerCase());
    const merchantBefore = await balanceOf(client, usdc, merchant);
    const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await db.connect();
    try {
      await start(port);
      // The first kill is deterministic: the moment a settlement transaction of this run is on record.
      const firstKill = (async () => {
        for (;;) {
          const { rows } = await db.query(`SELECT 1 FROM facilitator.payments WHERE state = 'submitted' AND authorization_nonce = ANY($1) LIMIT 1`, [nonces]);
          if (rows.length > 0) return child!.kill('SIGKILL');
          await new Promise((r) => setTimeout(r, 5));
        }
      })();

      const deadline = Date.now() + 150_000;
      const outcomes = new Array<{ success: boolean; transaction: string; errorReason?: string } | undefined>(total);
      let next = 0;
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          for (let i = next++; i < total; i = next++) outcomes[i] = await settleUntilFinal(bodies[i], deadline);
        }),
      );
      await firstKill;
      finished = true;

      expect(kills, `plan ${plan.join(', ')} (CRASH_SEED=${seed})`).toBeGreaterThanOrEqual(3);
      expect(outcomes.filter((o) => o === undefined)).toHaveLength(0);
      expect(
        outcomes.filter((o) => !o!.success),
        `CRASH_SEED=${seed}`,
      ).toEqual([]);

      // The chain: exactly one transfer per payment, by the transaction each answer names.
      expect(await balanceOf(client, usdc, merchant)).toBe(merchantBefore + BigInt(total) * amount);
      for (const [i, outcome] of outcomes.entries()) {
        const receipt = await client.getTransactionReceipt({ hash: outcome!.transaction as Hex });
        const used = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationUsed', logs: receipt.logs }).map((l) =>
          (l.args as { nonce: string }).nonce.toLowerCase(),
        );
        expect(used).toContain(nonces[i]);
      }

      // The database agrees: every payment confirmed with that transaction, nothing left in flight.
      const { rows } = await db.query(
        `SELECT authorization_nonce AS nonce, state::text AS state, tx_hash AS hash FROM facilitator.payments WHERE authorization_nonce = ANY($1)`,
        [nonces],
      );
      expect(rows).toHaveLength(total);
      const byNonce = new Map(rows.map((r) => [r.nonce, r]));
      for (const [i, outcome] of outcomes.entries())
        expect(byNonce.get(nonces[i])).toEqual({ nonce: nonces[i], state: 'confirmed', hash: outcome!.transaction });
      // Any other mined transaction of a payment did not use its authorization (no second transfer, ever).
      const { rows: sent } = await db.query(
        `SELECT t.hash, p.tx_hash, p.authorization_nonce AS nonce FROM facilitator.payment_transactions t JOIN facilitator.payments p ON p.id = t.payment_id WHERE p.authorization_nonce = ANY($1)`,
        [nonces],
      );
      for (const tx of sent) {
        if (tx.hash === tx.tx_hash) continue;
        const receipt = await receiptOrUndefined(tx.hash);
        if (!receipt) continue;
        const used = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationUsed', logs: receipt.logs }).map((l) =>
          (l.args as { nonce: string }).nonce.toLowerCase(),
        );
        expect(used, `transaction ${tx.hash} also used the authorization of a payment settled by ${tx.tx_hash}`).not.toContain(tx.nonce);
      }
    } finally {
      await db.end();
    }
  }, 240_000);
});

/**
 * A fee-bump replacement is recorded, then the process dies before broadcasting it: the original waits in the
 * mempool, the replacement exists only in the database. The restarted facilitator rebroadcasts the recorded
 * replacement; whichever of the two is mined, each payment is paid once and answered with the transaction that did it.
 */
describe('crash safety: a SIGKILL right after a replacement is recorded', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 1_500n;
  let child: ChildProcess | undefined;

  async function start(port: number, crashPoints: string): Promise<ChildProcess> {
    const spawned = spawn(process.execPath, [appEntry('facilitator')], {
      env: {
        ...process.env,
        DATABASE_URL: TEST_DATABASE_URL,
        FACILITATOR_PORT: String(port),
        FACILITATOR_INSTANCE_ID: 'crash-replacement-test',
        FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[2].privateKey,
        FACILITATOR_OPEN_MODE: 'true',
        QUEUE_PREFIX: 'mp:crash-replacement-test',
        SETTLE_BUDGET_MS: '500',
        STUCK_TX_AFTER_MS: '300',
        RECOVERY_INTERVAL_MS: '300',
        LOG_LEVEL: 'warn',
        CRASH_POINTS: crashPoints,
      },
      stdio: 'ignore',
    });
    child = spawned;
    for (let i = 0; i < 200; i++) {
      if (
        await fetch(`http://127.0.0.1:${port}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return spawned;
      await new Promise((r) => setTimeout(r, 50));
    }
    throw new Error('the facilitator did not start');
  }

  beforeAll(() => {
    buildIfStale();
  }, 180_000);
  afterAll(() => child?.kill('SIGKILL'));

  it('rebroadcasts the recorded replacement after the restart and settles each payment once', async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const bodies = await Promise.all(
      [0, 1, 2].map(async (i) =>
        v2Body(
          await signAuthorization(payerAccount(manifest, 3 + i), usdc, manifest.chainId, { to: merchant, value: amount }),
          v2Requirements(manifest, usdc, amount),
        ),
      ),
    );
    const nonces = bodies.map((b) => b.paymentPayload.payload.authorization.nonce.toLowerCase());
    const before = await balanceOf(client, usdc, merchant);
    const settle = (body: unknown) =>
      fetch(`${url}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
        (r) => r.json() as Promise<{ success: boolean; transaction: string; errorReason?: string }>,
        () => undefined,
      );
    const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
    await db.connect();
    await client.request({ method: 'evm_setAutomine' as never, params: [false] as never });
    try {
      const first = await start(port, 'replacement.recorded@1');
      const died = new Promise<string | null>((resolve) => first.once('exit', (_code, signal) => resolve(signal)));
      await Promise.all(bodies.map(settle));
      expect(await died).toBe('SIGKILL');
      const { rows: recorded } = await db.query(
        `SELECT p.authorization_nonce AS nonce, count(*)::int AS n FROM facilitator.payment_transactions t JOIN facilitator.payments p ON p.id = t.payment_id
          WHERE p.authorization_nonce = ANY($1) GROUP BY 1`,
        [nonces],
      );
      expect(
        recorded.some((r) => r.n >= 2),
        'a replacement was recorded before the kill',
      ).toBe(true);

      await start(port, '');
      const answers = await Promise.all(
        bodies.map(async (body) => {
          for (let i = 0; i < 100; i++) {
            await client.request({ method: 'evm_mine' as never, params: [] as never });
            const answer = await settle(body);
            if (answer && answer.errorReason !== 'settlement_pending') return answer;
          }
          return undefined;
        }),
      );
      expect(answers.map((a) => a?.success)).toEqual([true, true, true]);
      expect(await balanceOf(client, usdc, merchant)).toBe(before + 3n * amount);
      for (const [i, answer] of answers.entries()) {
        const receipt = await client.getTransactionReceipt({ hash: answer!.transaction as Hex });
        const used = parseEventLogs({ abi: eip3009Abi, eventName: 'AuthorizationUsed', logs: receipt.logs }).map((l) =>
          (l.args as { nonce: string }).nonce.toLowerCase(),
        );
        expect(used).toEqual([nonces[i]]);
      }
    } finally {
      await client.request({ method: 'evm_setAutomine' as never, params: [true] as never });
      await db.end();
    }
  }, 120_000);
});
