#!/usr/bin/env node
// Crash recovery latency: how long callers whose payment was in flight wait for its final answer when the
// facilitator is SIGKILLed and a replacement (a new instance id: its predecessor's hot-wallet leases and job locks
// must lapse first) starts at once. See bench/README.md.
//
//   node bench/recovery.mjs [--payments 300] [--concurrency 32] [--kill-after 100] [--same-instance] [--no-build]
//
// Starts its own anvil (8548) and facilitator (4522), database machine_payments_bench_recovery; everything goes to
// 127.0.0.1 and is stopped on exit. Prints p50/p99/max of the answer time of the payments in flight at the kill,
// counted from the kill, and checks every payment ends confirmed once on chain.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { createPublicClient, http, parseAbi } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { startAnvil } from '../scripts/lib/anvil.mjs';
import { appEntry, buildIfStale } from '../scripts/lib/build.mjs';
import { migrateDeploy } from '../scripts/lib/database.mjs';
import { deployLocalChain, writeManifest } from '../scripts/lib/deploy.mjs';
import { resetLocalState } from '../scripts/lib/local-state.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const { values: opt } = parseArgs({
  options: {
    payments: { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '32' },
    'kill-after': { type: 'string', default: '100' },
    'no-build': { type: 'boolean', default: false },
    'same-instance': { type: 'boolean', default: false },
  },
});
const PAYMENTS = Number(opt.payments);
const CONCURRENCY = Number(opt.concurrency);
const KILL_AFTER = Number(opt['kill-after']);
const DATABASE_URL = 'postgresql://postgres@127.0.0.1:5432/machine_payments_bench_recovery';
const PORT = 4522;
const URL_ = `http://127.0.0.1:${PORT}`;
const AMOUNT = 1_000n;

const stoppers = [];
const stopAll = async () => {
  for (const stop of stoppers.reverse()) await stop().catch(() => undefined);
};
process.on('SIGINT', () => void stopAll().then(() => process.exit(130)));

function percentile(sorted, p) {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] : NaN;
}

async function main() {
  if (!opt['no-build']) buildIfStale({ log: (line) => console.log(line) });
  const anvil = await startAnvil({ port: 8548 });
  stoppers.push(() => anvil.stop());
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  const manifestPath = writeManifest(path.join(ROOT, '.local', 'chain-bench-recovery.json'), manifest);
  await migrateDeploy({ databaseUrl: DATABASE_URL, quiet: true });
  await resetLocalState({ databaseUrl: DATABASE_URL });
  const client = createPublicClient({ transport: http(anvil.rpcUrl) });

  const usdc = manifest.tokens.usdc;
  const bodies = await Promise.all(
    Array.from({ length: PAYMENTS }, async (_, i) => {
      const payer = privateKeyToAccount(manifest.accounts.payers[i % manifest.accounts.payers.length].privateKey);
      const authorization = {
        from: payer.address,
        to: manifest.accounts.merchant.address,
        value: AMOUNT,
        validAfter: 0n,
        validBefore: BigInt(Math.floor(Date.now() / 1000) + 3600),
        nonce: `0x${randomBytes(32).toString('hex')}`,
      };
      const signature = await payer.signTypedData({
        domain: { name: usdc.name, version: usdc.version, chainId: manifest.chainId, verifyingContract: usdc.address },
        types: {
          TransferWithAuthorization: ['from:address', 'to:address', 'value:uint256', 'validAfter:uint256', 'validBefore:uint256', 'nonce:bytes32'].map((f) => ({
            name: f.split(':')[0],
            type: f.split(':')[1],
          })),
        },
        primaryType: 'TransferWithAuthorization',
        message: authorization,
      });
      const requirements = {
        scheme: 'exact',
        network: manifest.network,
        amount: AMOUNT.toString(),
        asset: usdc.address,
        payTo: manifest.accounts.merchant.address,
        maxTimeoutSeconds: 3600,
        extra: { name: usdc.name, version: usdc.version },
      };
      const payload = { signature, authorization: Object.fromEntries(Object.entries(authorization).map(([k, v]) => [k, v.toString()])) };
      return {
        x402Version: 2,
        paymentPayload: { x402Version: 2, resource: { url: 'http://bench/recovery' }, accepted: requirements, payload },
        paymentRequirements: requirements,
      };
    }),
  );

  let child;
  let instance = 0;
  const start = async () => {
    instance += 1;
    child = spawn(process.execPath, [appEntry('facilitator')], {
      env: {
        ...process.env,
        DATABASE_URL,
        CHAIN_MANIFEST: manifestPath,
        FACILITATOR_PORT: String(PORT),
        FACILITATOR_OPEN_MODE: 'true',
        OPEN_MODE_RATE_LIMIT_PER_MINUTE: '0',
        FACILITATOR_INSTANCE_ID: `bench-recovery-${opt['same-instance'] ? 1 : instance}`,
        LOG_LEVEL: 'error',
        FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners
          .slice(0, 3)
          .map((s) => s.privateKey)
          .join(','),
      },
      stdio: 'ignore',
    });
    const spawned = child;
    stoppers.push(async () => spawned.kill('SIGKILL'));
    for (let i = 0; i < 400; i++) {
      if (
        await fetch(`${URL_}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      await new Promise((r) => setTimeout(r, 25));
    }
    throw new Error('the facilitator did not start');
  };
  await start();

  const balanceBefore = await client.readContract({
    address: usdc.address,
    abi: parseAbi(['function balanceOf(address) view returns (uint256)']),
    functionName: 'balanceOf',
    args: [manifest.accounts.merchant.address],
  });
  let answered = 0;
  let killedAt;
  let killing;
  const inFlightAtKill = new Set();
  const inFlight = new Set();
  const finalAt = new Array(PAYMENTS);
  const outcomes = new Array(PAYMENTS);
  let next = 0;
  const settle = (body) =>
    fetch(`${URL_}/settle`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then(
      (r) => r.json(),
      () => undefined,
    );
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      for (let i = next++; i < PAYMENTS; i = next++) {
        inFlight.add(i);
        for (;;) {
          const answer = await settle(bodies[i]);
          if (answer && answer.errorReason !== 'settlement_pending') {
            outcomes[i] = answer;
            break;
          }
          if (!answer) await (killing ?? new Promise((r) => setTimeout(r, 50)));
        }
        finalAt[i] = performance.now();
        inFlight.delete(i);
        answered += 1;
        if (answered === KILL_AFTER && !killing) {
          killedAt = performance.now();
          for (const j of inFlight) inFlightAtKill.add(j);
          child.kill('SIGKILL');
          killing = new Promise((r) => child.once('exit', r)).then(start);
        }
      }
    }),
  );
  await killing;
  const waits = [...inFlightAtKill].map((i) => finalAt[i] - killedAt).sort((a, b) => a - b);
  const failures = outcomes.filter((o) => !o?.success).length;
  const balanceAfter = await client.readContract({
    address: usdc.address,
    abi: parseAbi(['function balanceOf(address) view returns (uint256)']),
    functionName: 'balanceOf',
    args: [manifest.accounts.merchant.address],
  });
  console.log(
    `\nrecovery across one SIGKILL (${PAYMENTS} payments @${CONCURRENCY}, killed after ${KILL_AFTER} answers, ${opt['same-instance'] ? 'restarted with the same instance id' : 'replacement with a new instance id'})`,
  );
  console.log(`  payments in flight at the kill: ${waits.length}`);
  console.log(
    `  their answer time from the kill: p50 ${percentile(waits, 50).toFixed(0)} ms, p99 ${percentile(waits, 99).toFixed(0)} ms, max ${waits.at(-1)?.toFixed(0)} ms`,
  );
  console.log(`  answers not success: ${failures}; merchant received ${balanceAfter - balanceBefore} of ${BigInt(PAYMENTS) * AMOUNT} expected`);
  await stopAll();
  process.exit(failures === 0 && balanceAfter - balanceBefore === BigInt(PAYMENTS) * AMOUNT ? 0 : 1);
}

main().catch(async (error) => {
  console.error(error);
  await stopAll();
  process.exit(2);
});
