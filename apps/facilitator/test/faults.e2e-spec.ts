import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Address } from 'viem';
import { balanceOf, payerAccount, signAuthorization, testChain, v2Body, v2Requirements, withAutomineOff } from '../../../test/support/chain';
import { postJson, startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from '../../../test/support/facilitator';
import { freePort } from '../../../test/support/net';
import { startTcpProxy, type TcpProxy } from '../../../test/support/tcp-proxy';
import { until } from '../../../test/support/webhook-receiver';
import pg from 'pg';

async function paymentState(nonce: string): Promise<string | undefined> {
  const db = new pg.Client({ connectionString: TEST_DATABASE_URL });
  await db.connect();
  try {
    const { rows } = await db.query(`SELECT state::text AS state FROM facilitator.payments WHERE authorization_nonce = $1`, [nonce]);
    return rows[0]?.state;
  } finally {
    await db.end();
  }
}

/** Faults in what the facilitator depends on: the chain RPC, Redis and PostgreSQL, each behind a proxy we can break. */
describe('faults', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const amount = 3_000n;
  const body = async (payer = 0) =>
    v2Body(
      await signAuthorization(payerAccount(manifest, payer), usdc, manifest.chainId, { to: merchant, value: amount }),
      v2Requirements(manifest, usdc, amount),
    );

  describe('chain RPC', () => {
    let rpc: TcpProxy;
    let facilitator: RunningFacilitator;

    beforeAll(async () => {
      rpc = await startTcpProxy(Number(new URL(manifest.rpcUrl).port));
      const file = join(mkdtempSync(join(tmpdir(), 'faults-')), 'networks.json');
      writeFileSync(
        file,
        JSON.stringify({
          networks: [
            {
              network: manifest.network,
              displayName: 'anvil behind a proxy',
              rpcUrls: [rpc.url('http')],
              pollingIntervalMs: 25,
              signerKeyEnv: ['FAULTS_SIGNER_KEY'],
              assets: [{ address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } }],
            },
          ],
        }),
      );
      facilitator = await startFacilitator({
        FACILITATOR_NETWORKS_FILE: file,
        FAULTS_SIGNER_KEY: manifest.accounts.facilitatorSigners[1].privateKey,
        RPC_TIMEOUT_MS: '400',
        SETTLE_BUDGET_MS: '1500',
        QUEUE_PREFIX: 'mp:test-faults-rpc',
      });
    });
    afterAll(async () => {
      await facilitator?.close();
      await rpc?.close();
    });

    it.each(['refuse', 'hang'] as const)(
      'when the RPC %ss: verify is unexpected_verify_error, settle fails clearly, nothing is claimed; it recovers',
      async (mode) => {
        const payment = await body(1);
        rpc.set(mode);
        const verify = await postJson(`${facilitator.url}/verify`, payment);
        expect(verify.status).toBe(200);
        expect(verify.body).toMatchObject({ isValid: false, invalidReason: 'unexpected_verify_error' });
        const settle = await postJson(`${facilitator.url}/settle`, payment);
        expect(settle.status).toBe(200);
        expect(settle.body).toMatchObject({ success: false, errorReason: 'unexpected_settle_error', transaction: '' });

        rpc.set('pass');
        expect((await postJson(`${facilitator.url}/verify`, payment)).body).toMatchObject({ isValid: true });
        const settled = await postJson(`${facilitator.url}/settle`, payment);
        expect(settled.body).toMatchObject({ success: true });
      },
    );

    it('when the RPC dies after the transaction is sent, settle answers settlement_pending and a later settle the outcome', async () => {
      const payment = await body(2);
      const before = await balanceOf(client, usdc, merchant);
      const nonce = payment.paymentPayload.payload.authorization.nonce.toLowerCase();
      // The transaction waits in the mempool (automine off) until the RPC is cut: the fault always lands after the send.
      const first = await withAutomineOff(client, async () => {
        const pending = postJson(`${facilitator.url}/settle`, payment);
        await until('the settlement transaction to be sent', async () => ((await paymentState(nonce)) === 'submitted' ? true : undefined));
        rpc.set('refuse');
        const answer = (await pending).body;
        await client.request({ method: 'evm_mine' as never, params: [] as never });
        return answer;
      });
      expect(first).toMatchObject({ success: false, errorReason: 'settlement_pending', transaction: expect.stringMatching(/^0x[0-9a-f]{64}$/) });
      rpc.set('pass');
      let final = first;
      for (let i = 0; i < 40 && !final.success; i++) final = (await postJson(`${facilitator.url}/settle`, payment)).body;
      expect(final).toMatchObject({ success: true, transaction: first.transaction });
      expect(await balanceOf(client, usdc, merchant)).toBe(before + amount);
    });
  });

  describe('Redis', () => {
    let redis: ChildProcess | undefined;
    let port = 0;
    let facilitator: RunningFacilitator;

    const startRedis = async () => {
      redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
      for (let i = 0; i < 100; i++) {
        const up = await new Promise<boolean>((resolve) => {
          const socket = connect(port, '127.0.0.1');
          socket.once('connect', () => (socket.destroy(), resolve(true)));
          socket.once('error', () => resolve(false));
        });
        if (up) return;
        await new Promise((r) => setTimeout(r, 50));
      }
      throw new Error('redis-server did not start');
    };
    const stopRedis = () => new Promise<void>((resolve) => (redis?.once('exit', () => resolve()), redis?.kill('SIGKILL')));

    beforeAll(async () => {
      port = await freePort();
      await startRedis();
      facilitator = await startFacilitator({
        REDIS_URL: `redis://127.0.0.1:${port}`,
        FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[1].privateKey,
        SETTLE_BUDGET_MS: '3000',
        RECOVERY_INTERVAL_MS: '300',
        SIGNER_LEASE_MS: '3000',
      });
    }, 60_000);
    afterAll(async () => {
      await facilitator?.close();
      await stopRedis();
    });

    it('answers /settle with a 503 problem while Redis is down, and settles once it is back', async () => {
      const payment = await body(3);
      const before = await balanceOf(client, usdc, merchant);
      await stopRedis();

      const down = await postJson(`${facilitator.url}/settle`, payment);
      expect(down.status).toBe(503);
      expect(down.contentType).toContain('application/problem+json');
      expect(down.body).toMatchObject({ code: 'upstream_unavailable', detail: expect.stringContaining('settlement queue') });
      expect((await postJson(`${facilitator.url}/verify`, payment)).body).toMatchObject({ isValid: true });

      await startRedis();
      let final: { success?: boolean } = {};
      for (let i = 0; i < 60 && !final.success; i++) {
        final = (await postJson(`${facilitator.url}/settle`, payment)).body;
        if (!final.success) await new Promise((r) => setTimeout(r, 250));
      }
      expect(final).toMatchObject({ success: true });
      expect(await balanceOf(client, usdc, merchant)).toBe(before + amount);
    }, 60_000);
  });

  describe('PostgreSQL', () => {
    let postgres: TcpProxy;
    let facilitator: RunningFacilitator;

    beforeAll(async () => {
      const target = new URL(TEST_DATABASE_URL);
      postgres = await startTcpProxy(Number(target.port || 5432));
      target.port = String(postgres.port);
      facilitator = await startFacilitator({
        DATABASE_URL: target.toString(),
        FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners[1].privateKey,
        QUEUE_PREFIX: 'mp:test-faults-pg',
        SETTLE_BUDGET_MS: '3000',
      });
    });
    afterAll(async () => {
      await facilitator?.close();
      await postgres?.close();
    });

    it('answers /settle with a 503 problem while the database is unreachable, and recovers', async () => {
      const payment = await body(4);
      postgres.set('refuse');
      const down = await postJson(`${facilitator.url}/settle`, payment);
      expect(down.status, JSON.stringify(down.body)).toBe(503);
      expect(down.body).toMatchObject({ code: 'upstream_unavailable' });
      expect(JSON.stringify(down.body)).not.toMatch(/at .*\.ts:\d+/); // no stack trace

      postgres.set('pass');
      let final: { success?: boolean } = {};
      for (let i = 0; i < 40 && !final.success; i++) {
        final = (await postJson(`${facilitator.url}/settle`, payment)).body;
        if (!final.success) await new Promise((r) => setTimeout(r, 250));
      }
      expect(final).toMatchObject({ success: true });
    }, 30_000);
  });
});
