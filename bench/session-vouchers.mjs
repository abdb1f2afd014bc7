#!/usr/bin/env node
// Session-voucher benchmark (issue 14): vouchers accepted with durable accounting through POST /mpp/settle of the
// built facilitator, across many MPP evm session channels. Goal: ≥ 5,000 vouchers/s across ≥ 500 channels (each
// channel sequential, at most 10 vouchers/s as the spec caps a session), p99 ≤ 5 ms.
//
//   node bench/session-vouchers.mjs [--channels 500] [--rate 10] [--seconds 20] [--closed 100] [--closed-seconds 10] [--warmup 5]
//                                   [--sockets 64] [--replicas 1] [--cpu-prof] [--no-build]
//
// Phase A (the goal's shape, open loop): every channel sends --rate vouchers/s for --seconds, each waiting for the
// previous answer (sequential per channel); nothing is sent after --seconds, so a channel that fell behind sends fewer.
// Phase B (closed loop): every channel sends up to --closed vouchers back to back for at most --closed-seconds, one in
// flight per channel: the most it takes. Vouchers are cumulative and signed before any timing. Afterwards,
// PostgreSQL is checked: each channel's accepted_cumulative is its last voucher, and there is one
// `channel.voucher_accepted` outbox row per voucher accepted. --cpu-prof writes the facilitator's CPU profile to
// bench/results/ when it stops.
//
// --replicas N runs N facilitator processes on ports 9722, 9723, … (the first with every role, the others `api`), the
// way a deployment runs one per core behind a load balancer; each channel is sent to one of them (index mod N) and the
// sockets are shared out between them.
//
// It runs its own anvil (9721) and facilitator (9722, open mode, built app) on a fresh database mp_voucher_bench;
// all are stopped on exit, Ctrl-C or error. Exit code 0 whether or not the goal is met (printed as PASS/FAIL);
// non-zero when the harness fails or a check does not hold.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import pg from 'pg';
import secp256k1 from 'secp256k1';
import { createPublicClient, createWalletClient, domainSeparator, erc20Abi, getAddress, hexToBytes, http as viemHttp, keccak256, toHex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

import { startAnvil } from '../scripts/lib/anvil.mjs';
import { appEntry } from '../scripts/lib/build.mjs';
import { dropDatabase, migrateDeploy } from '../scripts/lib/database.mjs';
import { deployLocalChain, writeManifest } from '../scripts/lib/deploy.mjs';

import { percentile } from './lib/ledger-stack.mjs';
import { busyFraction, childProcesses, cpuSeconds, cpuSecondsOf, machineCpu } from './lib/processes.mjs';
import { headerComment } from './lib/help.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS_DIR = path.join(ROOT, 'bench', 'results');
const GOAL = { vouchersPerSecond: 5_000, p99Ms: 5, channels: 500 };
/** 2 cores at the goal's rate: 2,000 CPU-ms per second / 5,000 vouchers per second */
const CPU_BUDGET_MS_PER_VOUCHER = (2 * 1000) / GOAL.vouchersPerSecond;
const PRICE = 10n;

const { values: opt } = parseArgs({
  options: {
    channels: { type: 'string', default: '500' },
    rate: { type: 'string', default: '10' },
    seconds: { type: 'string', default: '20' },
    closed: { type: 'string', default: '100' },
    'closed-seconds': { type: 'string', default: '10' },
    warmup: { type: 'string', default: '5' },
    sockets: { type: 'string', default: '64' },
    replicas: { type: 'string', default: '1' },
    'anvil-port': { type: 'string', default: '9721' },
    'facilitator-port': { type: 'string', default: '9722' },
    'database-url': { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/mp_voucher_bench' },
    'cpu-prof': { type: 'boolean', default: false },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(headerComment(import.meta.url));
  process.exit(0);
}
const int = (name) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < 1) {
    console.error(`--${name} must be a positive integer (got ${opt[name]})`);
    process.exit(2);
  }
  return v;
};
const cfg = {
  channels: int('channels'),
  rate: int('rate'),
  seconds: int('seconds'),
  closed: int('closed'),
  closedSeconds: int('closed-seconds'),
  warmup: int('warmup'),
  sockets: int('sockets'),
  replicas: int('replicas'),
  anvilPort: int('anvil-port'),
  facilitatorPort: int('facilitator-port'),
  databaseUrl: opt['database-url'],
  cpuProf: opt['cpu-prof'],
  build: !opt['no-build'],
};
if (cfg.rate > 10) {
  console.error('--rate must be at most 10: the spec caps a session at 10 vouchers a second');
  process.exit(2);
}
if (!['127.0.0.1', 'localhost'].includes(new URL(cfg.databaseUrl).hostname) || !/bench/.test(new URL(cfg.databaseUrl).pathname)) {
  console.error('--database-url must be a database on 127.0.0.1 whose name contains "bench" (it is dropped and made again)');
  process.exit(2);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
fs.mkdirSync(RESULTS_DIR, { recursive: true });
const logFile = (name) => path.join(RESULTS_DIR, `session-vouchers-${stamp}.${name}.log`);
const say = (msg) => console.log(`[bench] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const processes = childProcesses({ cwd: ROOT });

// ---------------------------------------------------------------------------------------------------------
// the facilitator's build: rebuilt (nest build facilitator) when a source of it is newer

function newestSource(dir) {
  let newest = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) newest = entry.name === 'node_modules' ? newest : Math.max(newest, newestSource(full));
    else if (entry.name.endsWith('.ts') && !/\.(e2e-)?spec\.ts$/.test(entry.name)) newest = Math.max(newest, fs.statSync(full).mtimeMs);
  }
  return newest;
}

function buildFacilitatorIfStale() {
  const entry = appEntry('facilitator');
  const built = fs.existsSync(entry) ? fs.statSync(entry).mtimeMs : 0;
  if (built > Math.max(newestSource(path.join(ROOT, 'apps', 'facilitator', 'src')), newestSource(path.join(ROOT, 'libs')))) return;
  say('building the facilitator (nest build facilitator)…');
  const result = spawnSync('npx', ['nest', 'build', 'facilitator'], { cwd: ROOT, stdio: 'inherit' });
  if (result.status !== 0) throw new Error('nest build facilitator failed');
}

// ---------------------------------------------------------------------------------------------------------
// HTTP: one keep-alive agent; latency from just before http.request to the answer's last byte

// fifo: every socket stays in use, so none sits idle past the server's keep-alive timeout (5 s) and is closed under us
// (maxSockets counts per host:port, so each replica gets its share of --sockets)
const agent = new http.Agent({ keepAlive: true, maxSockets: Math.max(1, Math.floor(cfg.sockets / cfg.replicas)), scheduling: 'fifo' });
/** Requests sent again because the server closed an idle keep-alive socket as it was reused (Node's documented race). */
let resentOnClosedSocket = 0;
function post(route, body, replica = 0) {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = http.request(
      {
        host: '127.0.0.1',
        port: cfg.facilitatorPort + replica,
        path: route,
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks = [];
        res.on('data', (c) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode, text: Buffer.concat(chunks).toString('utf8'), started, ms: performance.now() - started }));
      },
    );
    req.on('error', (error) => {
      // nothing reached the server on a socket it had closed: sending again is safe (and a voucher is idempotent)
      if (req.reusedSocket && error.code === 'ECONNRESET') {
        resentOnClosedSocket++;
        post(route, body).then(resolve, reject);
      } else reject(error);
    });
    req.end(body);
  });
}
const postJson = async (route, value) => {
  const answer = await post(route, JSON.stringify(value));
  return { status: answer.status, body: JSON.parse(answer.text) };
};

/** Runs `fn` over `items`, `concurrency` at a time. */
async function pool(items, concurrency, fn) {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      for (let i = next++; i < items.length; i = next++) await fn(items[i], i);
    }),
  );
}

// ---------------------------------------------------------------------------------------------------------
// the run

const report = {
  config: cfg,
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavgBefore: os.loadavg() },
  setup: {},
  phases: [],
  checks: {},
};

async function main() {
  if (cfg.build) buildFacilitatorIfStale();
  if (!fs.existsSync(appEntry('facilitator'))) throw new Error(`${appEntry('facilitator')} is missing: run nest build facilitator`);
  const lib = (name) => createRequire(import.meta.url)(appEntry('facilitator', `../../../libs/${name}/src/index.js`));
  const { computeChannelId, serializeCredential, VOUCHER_DOMAIN } = lib('mpp');
  const { sessionEscrowAbi } = lib('chain');

  // --- the stack: a fresh database, anvil with the contracts, the facilitator as built
  const setupStarted = performance.now();
  say(`fresh database ${new URL(cfg.databaseUrl).pathname.slice(1)}`);
  await dropDatabase(cfg.databaseUrl);
  await migrateDeploy({ databaseUrl: cfg.databaseUrl, quiet: true });
  const anvil = (processes.anvil = await startAnvil({ port: cfg.anvilPort }));
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  const manifestPath = path.join(ROOT, '.local', 'chain-bench-vouchers.json');
  writeManifest(manifestPath, manifest);
  const replicas = [];
  for (let r = 0; r < cfg.replicas; r++) {
    const port = cfg.facilitatorPort + r;
    const name = r === 0 ? 'facilitator' : `facilitator-${r}`;
    replicas.push(
      await processes.start({
        label: name,
        args: [
          ...(cfg.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS_DIR}`, `--cpu-prof-name=session-vouchers-${stamp}.${name}.cpuprofile`] : []),
          appEntry('facilitator'),
        ],
        env: {
          DATABASE_URL: cfg.databaseUrl,
          LOG_LEVEL: 'warn',
          QUEUE_PREFIX: `bench-vouchers-${process.pid}`,
          FACILITATOR_PORT: String(port),
          // one process runs the workers (relay, settlement schedule), as a deployment would
          FACILITATOR_ROLE: r === 0 ? 'all' : 'api',
          CHAIN_MANIFEST: manifestPath,
          // open mode (no merchant key) without its per-address limit: every request of the bench comes from 127.0.0.1
          FACILITATOR_OPEN_MODE: 'true',
          OPEN_MODE_RATE_LIMIT_PER_MINUTE: '0',
        },
        log: logFile(name),
        readyUrl: `http://127.0.0.1:${port}/health`,
      }),
    );
  }

  const chain = {
    id: manifest.chainId,
    name: 'anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
  };
  const publicClient = createPublicClient({ chain, transport: viemHttp(anvil.rpcUrl) });
  const usdc = getAddress(manifest.tokens.usdc.address);
  const escrow = getAddress(manifest.contracts.sessionEscrow);
  const payee = getAddress(manifest.accounts.merchant.address);
  const terms = {
    realm: 'stream.example',
    offers: [
      {
        method: 'evm',
        intent: 'session',
        request: { amount: PRICE.toString(), currency: usdc, recipient: payee, methodDetails: { chainId: manifest.chainId } },
      },
    ],
    opaque: { resource: 'GET /stream' },
  };
  const termsJson = JSON.stringify(terms);

  // --- channels: several per payer (distinct salts), opened on chain by the payers, nonces sent in a row
  const perChannelVouchers = cfg.warmup + cfg.rate * cfg.seconds + cfg.closed;
  const deposit = PRICE * BigInt(perChannelVouchers + 1);
  const payers = manifest.accounts.payers.map((p) => ({ ...p, account: privateKeyToAccount(p.privateKey) }));
  const channels = Array.from({ length: cfg.channels }, (_, i) => {
    const payer = payers[i % payers.length];
    const salt = keccak256(toHex(`voucher-bench-${stamp}-${i}`));
    const channelId = computeChannelId({ payer: payer.account.address, payee, token: usdc, salt }, escrow, manifest.chainId);
    return { index: i, payer, salt, channelId, sent: [] };
  });
  say(`opening ${cfg.channels} channels from ${payers.length} payers (deposit ${deposit} each)…`);
  const opened = performance.now();
  const hashes = [];
  await Promise.all(
    payers.map(async (payer) => {
      const wallet = createWalletClient({ account: payer.account, chain, transport: viemHttp(anvil.rpcUrl) });
      const mine = channels.filter((c) => c.payer === payer);
      let nonce = await publicClient.getTransactionCount({ address: payer.account.address, blockTag: 'pending' });
      const fees = { maxFeePerGas: 10_000_000_000n, maxPriorityFeePerGas: 1_000_000_000n };
      hashes.push(
        await wallet.writeContract({
          address: usdc,
          abi: erc20Abi,
          functionName: 'approve',
          args: [escrow, deposit * BigInt(mine.length)],
          nonce: nonce++,
          gas: 100_000n,
          ...fees,
        }),
      );
      for (const c of mine) {
        c.openTx = await wallet.writeContract({
          address: escrow,
          abi: sessionEscrowAbi,
          functionName: 'open',
          args: [payee, usdc, deposit, c.salt, '0x0000000000000000000000000000000000000000'],
          nonce: nonce++,
          gas: 400_000n,
          ...fees,
        });
        hashes.push(c.openTx);
      }
    }),
  );
  await pool(hashes, 32, async (hash) => {
    const receipt = await publicClient.waitForTransactionReceipt({ hash, pollingInterval: 100, timeout: 120_000 });
    if (receipt.status !== 'success') throw new Error(`setup transaction ${hash} reverted`);
  });
  say(`  ${hashes.length} transactions mined in ${((performance.now() - opened) / 1000).toFixed(1)} s`);

  // --- vouchers, signed before any timing: native secp256k1 over the EIP-712 digest (the escrow's domain separator once)
  const separator = domainSeparator({ domain: { ...VOUCHER_DOMAIN, chainId: manifest.chainId, verifyingContract: escrow } }).slice(2);
  const typehash = keccak256(toHex('Voucher(bytes32 channelId,uint128 cumulativeAmount)')).slice(2);
  const keys = new Map(payers.map((p) => [p.account.address, hexToBytes(p.privateKey)]));
  const sign = (c, cumulative) => {
    const struct = keccak256(`0x${typehash}${c.channelId.slice(2)}${cumulative.toString(16).padStart(64, '0')}`).slice(2);
    const digest = hexToBytes(keccak256(`0x1901${separator}${struct}`));
    const { signature, recid } = secp256k1.ecdsaSign(digest, keys.get(c.payer.account.address));
    return `0x${Buffer.from(signature).toString('hex')}${(27 + recid).toString(16)}`;
  };
  const signStarted = performance.now();
  for (const c of channels) {
    c.signatures = [sign(c, 0n)];
    for (let k = 1; k <= perChannelVouchers; k++) c.signatures.push(sign(c, PRICE * BigInt(k)));
  }
  say(`  ${cfg.channels * (perChannelVouchers + 1)} vouchers signed in ${((performance.now() - signStarted) / 1000).toFixed(1)} s`);

  // --- one challenge per channel (its client's 402), then the open credentials (`hash`, with voucher 0)
  await pool(channels, 32, async (c) => {
    const issued = await postJson('/mpp/challenges', { ...terms, expiresIn: 3600 });
    if (issued.status !== 201) throw new Error(`POST /mpp/challenges: ${issued.status} ${JSON.stringify(issued.body)}`);
    c.challenge = issued.body.challenges[0];
  });
  const bodyOf = (c, payload, source) =>
    `{"credential":${JSON.stringify(serializeCredential({ challenge: c.challenge, payload, ...(source && { source }) }))},"terms":${termsJson}}`;
  await pool(channels, 32, async (c) => {
    const payload = { action: 'open', type: 'hash', channelId: c.channelId, hash: c.openTx, cumulativeAmount: '0', signature: c.signatures[0], salt: c.salt };
    const answer = await post('/mpp/settle', bodyOf(c, payload, `did:pkh:eip155:${manifest.chainId}:${c.payer.account.address}`));
    if (answer.status !== 200) throw new Error(`open credential of channel ${c.index}: ${answer.status} ${answer.text}`);
  });
  report.setup = {
    seconds: +((performance.now() - setupStarted) / 1000).toFixed(1),
    channels: cfg.channels,
    payers: payers.length,
    deposit: deposit.toString(),
  };
  say(`setup (database, chain, facilitator, ${cfg.channels} channels open and recorded) in ${report.setup.seconds} s`);

  // --- load
  const db = new pg.Client({ connectionString: cfg.databaseUrl });
  await db.connect();
  // PostgreSQL: per backend of the bench database, so one that ends during a phase cannot make the sum go down (its
  // CPU is left out: an underestimate); one that starts counts from 0
  const cpuNow = async () => {
    const backends = (await db.query(`SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`)).rows.map((r) => r.pid);
    const self = process.cpuUsage();
    return {
      facilitator: replicas.reduce((sum, r) => (sum === null || cpuSeconds(r.pid) === null ? null : sum + cpuSeconds(r.pid)), 0),
      postgres: new Map(backends.map((pid) => [pid, cpuSeconds(pid)]).filter(([, s]) => s !== null)),
      loadGenerator: (self.user + self.system) / 1e6,
      redis: cpuSecondsOf(['redis-server']),
    };
  };
  const cpuBetween = (a, b) =>
    Object.fromEntries(
      Object.keys(a).map((k) => {
        if (k === 'postgres') return [k, +[...b.postgres].reduce((sum, [pid, s]) => sum + s - (a.postgres.get(pid) ?? 0), 0).toFixed(2)];
        return [k, a[k] === null || b[k] === null ? null : +(b[k] - a[k]).toFixed(2)];
      }),
    );

  /** The voucher after the channel's last one: cumulative PRICE × k, its signature signed above. */
  const sendNext = async (c) => {
    const k = c.sent.length + 1;
    const cumulative = PRICE * BigInt(k);
    const body = bodyOf(c, { action: 'voucher', channelId: c.channelId, cumulativeAmount: cumulative.toString(), signature: c.signatures[k] });
    const answer = await post('/mpp/settle', body, c.index % cfg.replicas);
    c.sent.push({ cumulative, status: answer.status, text: answer.text });
    return answer;
  };

  const phase = async (name, drive) => {
    const [cpu0, m0] = [await cpuNow(), machineCpu()];
    const loadBefore = os.loadavg()[0];
    const latencies = [];
    const lateness = [];
    let errors = 0;
    const t0 = performance.now();
    await drive(async (c, scheduled) => {
      const answer = await sendNext(c);
      latencies.push(answer.ms);
      if (scheduled !== undefined) lateness.push(Math.max(0, answer.started - scheduled));
      if (answer.status !== 200) errors++;
    });
    const wallMs = performance.now() - t0;
    const [cpu1, m1] = [await cpuNow(), machineCpu()];
    const cpu = cpuBetween(cpu0, cpu1);
    const sorted = Float64Array.from(latencies).sort();
    const late = Float64Array.from(lateness).sort();
    const n = latencies.length;
    const perVoucher = (s) => (s === null ? null : +((s * 1000) / n).toFixed(3));
    const result = {
      name,
      vouchers: n,
      errors,
      wallSeconds: +(wallMs / 1000).toFixed(2),
      vouchersPerSecond: +((n - errors) / (wallMs / 1000)).toFixed(1),
      p50Ms: +percentile(sorted, 50).toFixed(2),
      p99Ms: +percentile(sorted, 99).toFixed(2),
      maxMs: +sorted[n - 1].toFixed(2),
      ...(late.length && { lateP99Ms: +percentile(late, 99).toFixed(1) }),
      cpuSeconds: cpu,
      cpuMsPerVoucher: Object.fromEntries(Object.entries(cpu).map(([k, s]) => [k, perVoucher(s)])),
      machineBusy: busyFraction(m0, m1),
      loadAverage: [+loadBefore.toFixed(2), +os.loadavg()[0].toFixed(2)],
    };
    say(
      `${name}: ${result.vouchersPerSecond} vouchers/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms, ${errors} errors (${n} vouchers in ${result.wallSeconds} s)`,
    );
    return result;
  };

  // closed loop: every channel sends up to `count` vouchers one after another, none started after `seconds`
  const closedLoop =
    (count, seconds = Infinity) =>
    (send) => {
      const end = performance.now() + seconds * 1000;
      return Promise.all(
        channels.map(async (c) => {
          for (let i = 0; i < count && performance.now() < end; i++) await send(c);
        }),
      );
    };
  // open loop: channel i sends at t0 + (i / channels + k) / rate, or as soon as its previous answer is in if that is
  // later; nothing is sent after the phase's `seconds` (a channel that fell behind sends fewer)
  const openLoop = (rate, seconds) => async (send) => {
    const period = 1000 / rate;
    const t0 = performance.now() + 100;
    const end = t0 + seconds * 1000;
    await Promise.all(
      channels.map(async (c) => {
        for (let k = 0; k < rate * seconds; k++) {
          const scheduled = t0 + (c.index / channels.length + k) * period;
          const wait = scheduled - performance.now();
          if (wait > 1) await sleep(wait);
          if (performance.now() >= end) break;
          await send(c, scheduled);
        }
      }),
    );
  };

  say(`warm-up: ${cfg.warmup} vouchers per channel`);
  report.warmup = await phase('warm-up', closedLoop(cfg.warmup));
  say(`phase A: ${cfg.channels} channels × ${cfg.rate}/s for ${cfg.seconds} s (offered ${cfg.channels * cfg.rate}/s, open loop)`);
  const a = await phase(`A: ${cfg.channels} ch × ${cfg.rate}/s`, openLoop(cfg.rate, cfg.seconds));
  say(`phase B: up to ${cfg.closed} vouchers per channel for at most ${cfg.closedSeconds} s, one in flight per channel (closed loop)`);
  const b = await phase(`B: closed, ${cfg.channels} in flight`, closedLoop(cfg.closed, cfg.closedSeconds));
  report.phases.push(a, b);
  agent.destroy();

  // --- the books: every answer 200 with the voucher's cumulative, accepted_cumulative = the last voucher, one event each
  let accepted = 0;
  let wrongReceipt = 0;
  const lastSent = new Map();
  for (const c of channels) {
    for (const s of c.sent) {
      if (s.status !== 200) continue;
      const body = JSON.parse(s.text);
      if (body.receipt?.acceptedCumulative === s.cumulative.toString()) accepted++;
      else wrongReceipt++;
    }
    lastSent.set(c.channelId.toLowerCase(), c.sent.at(-1).cumulative.toString());
  }
  const rows = (await db.query(`SELECT channel_id, accepted_cumulative::text AS accepted FROM facilitator.session_channels`)).rows;
  const [{ events }] = (await db.query(`SELECT count(*)::int AS events FROM facilitator.channel_events WHERE type = 'channel.voucher_accepted'`)).rows;
  const sentTotal = channels.reduce((n, c) => n + c.sent.length, 0);
  report.checks.everyAnswer200 = channels.every((c) => c.sent.every((s) => s.status === 200));
  report.checks.everyReceiptAtItsVoucher = wrongReceipt === 0;
  report.checks.acceptedCumulativeIsLastVoucher = rows.length === cfg.channels && rows.every((r) => lastSent.get(r.channel_id) === r.accepted);
  report.checks.oneOutboxRowPerAcceptedVoucher = events === accepted;
  report.totals = { sent: sentTotal, accepted, outboxRows: events, resentOnClosedSocket };
  if (!report.checks.everyAnswer200) {
    const sample = channels.flatMap((c) => c.sent.filter((s) => s.status !== 200)).slice(0, 3);
    for (const s of sample) say(`  not 200: ${s.status} ${s.text.slice(0, 300)}`);
  }
  await db.end();

  // --- the report
  const columns = [
    ['phase', 'name', 26],
    ['vouchers/s', 'vouchersPerSecond', 11],
    ['p50 ms', 'p50Ms', 8],
    ['p99 ms', 'p99Ms', 8],
    ['max ms', 'maxMs', 8],
    ['errors', 'errors', 7],
    ['late p99 ms', 'lateP99Ms', 12],
    ['machine busy', 'machineBusy', 13],
    ['load avg', 'loadAverage', 12],
  ];
  const cell = (p, key) => (p[key] === undefined ? '–' : Array.isArray(p[key]) ? p[key].join('→') : String(p[key]));
  console.log(`\n${columns.map(([title, , w], i) => (i ? title.padStart(w) : title.padEnd(w))).join(' ')}`);
  for (const p of report.phases) console.log(columns.map(([, key, w], i) => (i ? cell(p, key).padStart(w) : cell(p, key).padEnd(w))).join(' '));
  console.log(`\nCPU ms per voucher (budget at the goal: ${CPU_BUDGET_MS_PER_VOUCHER} ms on 2 cores, all processes together)`);
  console.log(
    `${'phase'.padEnd(26)} ${'facilitator'.padStart(12)} ${'postgres'.padStart(9)} ${'load gen'.padStart(9)} ${'redis*'.padStart(7)} ${'sum'.padStart(7)}`,
  );
  for (const p of report.phases) {
    const m = p.cpuMsPerVoucher;
    const sum = [m.facilitator, m.postgres, m.loadGenerator].reduce((s, v) => s + (v ?? 0), 0);
    p.cpuMsPerVoucherSum = +sum.toFixed(3);
    console.log(
      `${p.name.padEnd(26)} ${String(m.facilitator).padStart(12)} ${String(m.postgres).padStart(9)} ${String(m.loadGenerator).padStart(9)} ${String(m.redis).padStart(7)} ${sum.toFixed(3).padStart(7)}`,
    );
  }
  console.log("(postgres: the backends of the bench database; redis*: every redis-server on the machine, others' included, not in the sum)");
  console.log(`(load average before the run: ${report.machine.loadavgBefore.map((l) => l.toFixed(2)).join(' ')}; other sessions may share the machine)`);

  console.log('\nchecks:');
  for (const [name, ok] of Object.entries(report.checks)) console.log(`  ${ok ? 'ok  ' : 'FAIL'}  ${name}`);
  console.log(
    `  (${report.totals.sent} vouchers sent, ${accepted} accepted, ${events} channel.voucher_accepted rows; ${resentOnClosedSocket} sent again after the server closed an idle socket)`,
  );
  const goals = [
    [
      `A: ≥ ${GOAL.vouchersPerSecond.toLocaleString('en')} vouchers/s across ${cfg.channels} channels`,
      a.vouchersPerSecond >= GOAL.vouchersPerSecond && cfg.channels >= GOAL.channels,
      `${a.vouchersPerSecond}/s, ${(a.vouchersPerSecond / GOAL.vouchersPerSecond).toFixed(2)}× the goal (${a.vouchers} of the ${cfg.channels * cfg.rate * cfg.seconds} offered were sent in time)`,
    ],
    [`A: p99 ≤ ${GOAL.p99Ms} ms`, a.p99Ms <= GOAL.p99Ms, `p99 ${a.p99Ms} ms, p50 ${a.p50Ms} ms (${(GOAL.p99Ms / a.p99Ms).toFixed(2)}× the goal)`],
    [
      `B: closed-loop maximum ≥ ${GOAL.vouchersPerSecond.toLocaleString('en')} vouchers/s`,
      b.vouchersPerSecond >= GOAL.vouchersPerSecond,
      `${b.vouchersPerSecond}/s (${(b.vouchersPerSecond / GOAL.vouchersPerSecond).toFixed(2)}×), p50 ${b.p50Ms} ms, p99 ${b.p99Ms} ms`,
    ],
  ];
  console.log('goals:');
  for (const [name, ok, detail] of goals) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${name}: ${detail}`);
  report.goals = goals.map(([name, ok, detail]) => ({ name, ok, detail }));
  if (!goals.every(([, ok]) => ok)) {
    // where the time goes: CPU per voucher of each process against the 2 cores' budget at the goal's rate
    const m = b.cpuMsPerVoucher;
    console.log(
      `\nwhere the time goes (phase B, closed loop): at ${GOAL.vouchersPerSecond}/s two cores give ${CPU_BUDGET_MS_PER_VOUCHER} CPU-ms per voucher in all`,
    );
    for (const [k, label] of [
      ['facilitator', cfg.replicas === 1 ? 'facilitator (one Node thread: at most 1,000 ms/s)' : `facilitator (${cfg.replicas} processes together)`],
      ['postgres', 'PostgreSQL backends'],
      ['loadGenerator', 'load generator (this process)'],
    ]) {
      if (m[k] === null) continue;
      console.log(
        `  ${label.padEnd(50)} ${m[k].toFixed(3)} ms/voucher = ${((m[k] / CPU_BUDGET_MS_PER_VOUCHER) * 100).toFixed(0)} % of the budget; alone it caps at ${Math.round(1000 / m[k])}/s per core`,
      );
    }
    console.log(
      `  sum ${b.cpuMsPerVoucherSum} ms/voucher → at most ${Math.round(2000 / b.cpuMsPerVoucherSum)}/s on 2 idle cores (goal ${GOAL.vouchersPerSecond})`,
    );
  }
  const file = path.join(RESULTS_DIR, `session-vouchers-${stamp}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify(report, (_, v) => (typeof v === 'bigint' ? v.toString() : v), 2),
  );
  say(`results in ${path.relative(process.cwd(), file)}`);
  return Object.values(report.checks).every(Boolean);
}

let ok = false;
try {
  ok = await main();
} catch (error) {
  console.error(`[bench] ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
}
await processes.cleanup();
process.exit(ok ? 0 : 1);
