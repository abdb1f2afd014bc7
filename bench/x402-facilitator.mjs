#!/usr/bin/env node
// x402 facilitator benchmark: our facilitator against the reference TypeScript facilitator
// (@x402/core x402Facilitator + @x402/evm ExactEvmScheme, bench/reference-facilitator.mjs), on the same
// anvil chain and token, with the same pre-signed x402 v2 payloads. See bench/README.md.
//
//   node bench/x402-facilitator.mjs [--verify-requests 3000] [--warmup 200] [--settle-payloads 300]
//                                   [--concurrency 32] [--settle-serial 200] [--runs 1] [--batch 1] [--no-build]
//                                   [--phases verify,settle,serial] [--count-round-trips] [--cpu-prof]
//   --batch N: our facilitator settles up to N payments per Multicall3 transaction (SETTLE_BATCH_MAX)
//   --settle-serial N: settle @1, N distinct payloads one after another (one caller), after 10 unmeasured
//   --count-round-trips: count PostgreSQL / Redis / JSON-RPC round trips per settle @1 (bench/lib/round-trip-counter.mjs)
//   --ours-main PATH: run this build of our facilitator instead (e.g. another worktree's, for a before/after)
//   --cpu-prof: V8 CPU profiles of both servers, with a summary of their top items (bench/lib/cpuprofile-top.mjs)
//   --floor: also run the verify and settle phases against bench/floor.mjs (4525), a bare node:http server doing only
//            the work no facilitator can skip, with our own digest, recovery, calldata and signing, and no durable
//            record: the ceiling for ours (it settles from its own three wallets, mnemonic accounts 16-18)
//   --floor-durable: the same, and the floor keeps the least durable record exactly-once settlement needs in
//            PostgreSQL (a row unique per authorization before the broadcast, its outcome after the receipt)
//   --baseline-main PATH: also run the verify phase against this other build of ours (4526), in every run beside
//            ours: a before/after measured in one run, where separate runs differ by more than the change (the
//            machine's speed drifts by ±20 % within minutes)
//
// Everything it starts (anvil on 8547, ours on 4520, the reference on 4521) is its own and is stopped on
// exit, Ctrl-C or error. All traffic goes to 127.0.0.1. Exit code 0 whether or not the goals are met
// (they are printed as PASS/FAIL); non-zero only when the harness itself fails.
import { execFileSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { Worker } from 'node:worker_threads';

import { createPublicClient, defineChain, http, parseAbi, parseAbiItem } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { x402Client } from '@x402/core/client';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';

import { formatProfile, summarizeProfile } from './lib/cpuprofile-top.mjs';
import { startAnvil } from '../scripts/lib/anvil.mjs';
import { resetLocalState } from '../scripts/lib/local-state.mjs';
import { migrateDeploy } from '../scripts/lib/database.mjs';
import { ACCOUNT_LAYOUT, deployLocalChain, deriveAccounts, writeManifest } from '../scripts/lib/deploy.mjs';
import { headerComment } from './lib/help.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS_DIR = path.join(ROOT, 'bench', 'results');
const OUR_MAIN = path.join(ROOT, 'dist', 'apps', 'facilitator', 'apps', 'facilitator', 'src', 'main.js');
const REFERENCE_MAIN = path.join(ROOT, 'bench', 'reference-facilitator.mjs');
const MANIFEST_PATH = path.join(ROOT, '.local', 'chain-bench.json');
const FLOOR_MAIN = path.join(ROOT, 'bench', 'floor.mjs');
const ROUND_TRIP_COUNTER = path.join(ROOT, 'bench', 'lib', 'round-trip-counter.mjs');

// ---------------------------------------------------------------------------------------------------------
// options

const { values: opt } = parseArgs({
  options: {
    'verify-requests': { type: 'string', default: '3000' },
    warmup: { type: 'string', default: '200' },
    'settle-payloads': { type: 'string', default: '300' },
    concurrency: { type: 'string', default: '32' },
    runs: { type: 'string', default: '1' },
    amount: { type: 'string', default: '10000' },
    'anvil-port': { type: 'string', default: '8547' },
    'ours-port': { type: 'string', default: '4520' },
    'reference-port': { type: 'string', default: '4521' },
    'database-url': { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/machine_payments_bench' },
    'no-build': { type: 'boolean', default: false },
    'ours-main': { type: 'string' },
    batch: { type: 'string', default: '1' },
    'settle-serial': { type: 'string', default: '200' },
    'settle-serial-warmup': { type: 'string', default: '10' },
    phases: { type: 'string', default: 'verify,settle,serial' },
    'count-round-trips': { type: 'boolean', default: false },
    'cpu-prof': { type: 'boolean', default: false },
    floor: { type: 'boolean', default: false },
    'floor-durable': { type: 'boolean', default: false },
    'floor-port': { type: 'string', default: '4525' },
    'baseline-main': { type: 'string' },
    'baseline-port': { type: 'string', default: '4526' },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(headerComment(import.meta.url));
  process.exit(0);
}
const positiveInt = (name) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < 0 || (v === 0 && name !== 'warmup' && name !== 'settle-serial-warmup')) {
    console.error(`--${name} must be a positive integer (got ${opt[name]})`);
    process.exit(2);
  }
  return v;
};
const cfg = {
  verifyRequests: positiveInt('verify-requests'),
  warmup: positiveInt('warmup'),
  settlePayloads: positiveInt('settle-payloads'),
  concurrency: positiveInt('concurrency'),
  runs: positiveInt('runs'),
  amount: BigInt(positiveInt('amount')),
  batch: positiveInt('batch'),
  settleSerial: positiveInt('settle-serial'),
  settleSerialWarmup: positiveInt('settle-serial-warmup'),
  phases: new Set(opt.phases.split(',').map((p) => p.trim())),
  countRoundTrips: opt['count-round-trips'],
  cpuProf: opt['cpu-prof'],
  floor: opt.floor || opt['floor-durable'],
  floorDurable: opt['floor-durable'],
  floorPort: positiveInt('floor-port'),
  baselineMain: opt['baseline-main'] ? path.resolve(opt['baseline-main']) : undefined,
  baselinePort: positiveInt('baseline-port'),
  anvilPort: positiveInt('anvil-port'),
  oursPort: positiveInt('ours-port'),
  referencePort: positiveInt('reference-port'),
  databaseUrl: opt['database-url'],
  build: !opt['no-build'],
  oursMain: opt['ours-main'] ? path.resolve(opt['ours-main']) : OUR_MAIN,
  verifyTimeoutMs: 30_000,
  // The reference waits for receipts up to the SDK default confirmationTimeoutMs (180 s); give it room.
  settleTimeoutMs: 240_000,
  maxTimeoutSeconds: 3600,
};
for (const phase of cfg.phases) {
  if (!['verify', 'settle', 'serial'].includes(phase)) {
    console.error(`--phases takes verify, settle and serial, comma-separated (got ${phase})`);
    process.exit(2);
  }
}
if (cfg.baselineMain && ([...cfg.phases].some((p) => p !== 'verify') || !fs.existsSync(cfg.baselineMain))) {
  // it shares ours' database and queues, so it would take ours' settlements
  console.error(`--baseline-main measures the verify phase only (add --phases verify), from a build that exists (got ${cfg.baselineMain})`);
  process.exit(2);
}
if (cfg.floorDurable && cfg.batch > 1) {
  console.error('--floor-durable keeps its record one payment at a time: leave out --batch');
  process.exit(2);
}
if (new URL(cfg.databaseUrl).hostname !== '127.0.0.1' && new URL(cfg.databaseUrl).hostname !== 'localhost') {
  console.error('--database-url must point at 127.0.0.1');
  process.exit(2);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
fs.mkdirSync(RESULTS_DIR, { recursive: true });
const logFile = (side) => path.join(RESULTS_DIR, `x402-facilitator-${stamp}.${side}.log`);
const PROFILE_DIR = path.join(RESULTS_DIR, `x402-facilitator-${stamp}.profiles`);
const say = (msg) => console.log(`[bench] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------
// process bookkeeping: everything started here is stopped on exit, Ctrl-C and errors

const children = new Set();
let anvil;
let worker;
let cleaning;

function track(child) {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

async function cleanup() {
  cleaning ??= (async () => {
    if (worker) await worker.terminate().catch(() => {});
    await Promise.all(
      [...children].map(
        (child) =>
          new Promise((resolve) => {
            if (child.exitCode !== null || child.signalCode !== null) return resolve();
            // A profiled server writes its profile as it exits: give it time.
            const timer = setTimeout(() => child.kill('SIGKILL'), cfg.cpuProf ? 20_000 : 3000);
            child.once('exit', () => {
              clearTimeout(timer);
              resolve();
            });
            child.kill('SIGTERM');
          }),
      ),
    );
    if (anvil) await anvil.stop().catch(() => {});
  })();
  return cleaning;
}

process.on('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.once(signal, () => {
    console.error(`\n[bench] ${signal}: stopping everything`);
    cleanup().finally(() => process.exit(130));
  });
}

// ---------------------------------------------------------------------------------------------------------
// helpers

function assertPortFree(port) {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', (err) =>
      reject(err.code === 'EADDRINUSE' ? new Error(`127.0.0.1:${port} is already in use; pick another port or stop what holds it`) : err),
    );
    srv.listen({ port, host: '127.0.0.1', exclusive: true }, () => srv.close(() => resolve()));
  });
}

function run(cmd, args, label) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = track(spawn(cmd, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] }));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve(performance.now() - t0);
      else reject(new Error(`${label} failed (${code ?? signal}):\n${out.trim().slice(-4000)}`));
    });
  });
}

function tail(file, lines = 40) {
  try {
    return fs.readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '';
  }
}

/** Spawn a server with its output in a log file; resolves once `readyPath` answers 200. */
async function startServer({ label, args, env, port, readyPath, log }) {
  const out = fs.openSync(log, 'a');
  const child = track(spawn(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ['ignore', out, out] }));
  fs.closeSync(out);
  child.spawnedAt = Date.now();
  let exited = null;
  child.once('exit', (code, signal) => (exited = code ?? signal));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (exited !== null) throw new Error(`${label} exited (${exited}) before it was ready; log ${log}:\n${tail(log)}`);
    const ok = await fetch(`http://127.0.0.1:${port}${readyPath}`, { signal: AbortSignal.timeout(1000) })
      .then((r) => r.status === 200)
      .catch(() => false);
    if (ok) return child;
    if (Date.now() > deadline) throw new Error(`${label} did not answer ${readyPath} within 60 s; log ${log}:\n${tail(log)}`);
    await sleep(100);
  }
}

/** CPU seconds (user + system) a process has used so far, from /proc (Linux only; null elsewhere). */
const CLK_TCK = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100;
  } catch {
    return 100;
  }
})();
function procCpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) / CLK_TCK; // utime, stime
  } catch {
    return null;
  }
}
/** Whole-machine busy and total jiffies, from /proc/stat. */
function machineCpu() {
  try {
    const [, ...nums] = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/);
    const v = nums.map(Number);
    const idle = v[3] + (v[4] ?? 0);
    const total = v.reduce((a, b) => a + b, 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length, Math.max(1, rank)) - 1];
}
function latencyStats(latencies) {
  const s = Float64Array.from(latencies).sort();
  const sum = s.reduce((a, b) => a + b, 0);
  return {
    count: s.length,
    mean: s.length ? sum / s.length : NaN,
    min: s[0] ?? NaN,
    p50: percentile(s, 50),
    p90: percentile(s, 90),
    p99: percentile(s, 99),
    max: s[s.length - 1] ?? NaN,
  };
}
function median(values) {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = v.length >> 1;
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
/** Per-key medians of settleCpuPerSuccess's breakdowns (null when no run had one). */
function medianCpu(breakdowns) {
  const present = breakdowns.filter(Boolean);
  if (!present.length) return null;
  return Object.fromEntries(Object.keys(present[0]).map((key) => [key, median(present.map((b) => b[key]))]));
}
const countBy = (items, key) => items.reduce((acc, item) => ((acc[key(item)] = (acc[key(item)] ?? 0) + 1), acc), {});
const safeJson = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

// ---------------------------------------------------------------------------------------------------------
// load generator (worker thread)

let nextJob = 0;
const pending = new Map();
function startWorker() {
  worker = new Worker(new URL('./load-worker.mjs', import.meta.url));
  worker.on('message', (msg) => {
    const job = pending.get(msg.id);
    if (!job) return;
    pending.delete(msg.id);
    if (msg.ok) job.resolve(msg.result);
    else job.reject(new Error(`load worker: ${msg.error}`));
  });
  worker.on('error', (err) => {
    for (const job of pending.values()) job.reject(err);
    pending.clear();
  });
}
function load(origin, urlPath, bodies, concurrency, timeoutMs) {
  return new Promise((resolve, reject) => {
    const id = ++nextJob;
    pending.set(id, { resolve, reject });
    worker.postMessage({ id, cmd: 'run', origin, path: urlPath, bodies, concurrency, timeoutMs });
  });
}

/** Run a load phase and measure the CPU the participants used meanwhile. */
async function measuredLoad(sides, side, urlPath, bodies, timeoutMs, concurrency = cfg.concurrency) {
  const pids = {
    ours: sides.ours.pid,
    reference: sides.reference.pid,
    ...(sides.floor && { floor: sides.floor.pid }),
    ...(sides.baseline && { baseline: sides.baseline.pid }),
    anvil: anvil.pid,
  };
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, procCpuSeconds(pid)]));
  const selfBefore = process.cpuUsage();
  const m0 = machineCpu();
  const result = await load(sides[side].origin, urlPath, bodies, concurrency, timeoutMs);
  const m1 = machineCpu();
  const self = process.cpuUsage(selfBefore);
  const cpuSeconds = Object.fromEntries(
    Object.entries(pids).map(([k, pid]) => {
      const after = procCpuSeconds(pid);
      return [k, after === null || before[k] === null ? null : +(after - before[k]).toFixed(2)];
    }),
  );
  cpuSeconds.loadGenerator = +((self.user + self.system) / 1e6).toFixed(2);
  const machineBusy = m0 && m1 ? +((m1.busy - m0.busy) / (m1.total - m0.total)).toFixed(3) : null;
  return { ...result, cpu: { seconds: cpuSeconds, machineBusyFraction: machineBusy, wallSeconds: +(result.wallMs / 1000).toFixed(2) } };
}

// ---------------------------------------------------------------------------------------------------------
// payloads, signed with the official x402 client

function makeSigners(manifest) {
  return manifest.accounts.payers.map((payer) =>
    new x402Client()
      .register(manifest.network, new ExactEvmScheme(toClientEvmSigner(privateKeyToAccount(payer.privateKey))))
      .setSpendControls({ allowedAssets: [{ network: manifest.network, asset: manifest.tokens.usdc.address, maxAmountPerPayment: cfg.amount.toString() }] }),
  );
}

function requirementsFor(manifest) {
  const usdc = manifest.tokens.usdc;
  return {
    scheme: 'exact',
    network: manifest.network,
    asset: usdc.address,
    amount: cfg.amount.toString(),
    payTo: manifest.accounts.merchant.address,
    maxTimeoutSeconds: cfg.maxTimeoutSeconds,
    extra: { name: usdc.name, version: usdc.version },
  };
}

let signedCount = 0;
/** `count` payloads, payer i % payers; returns the request bodies (JSON strings) and what identifies each. */
async function signPayloads(clients, requirements, count, label) {
  const resource = { url: `http://127.0.0.1/bench/${label}`, description: 'x402 facilitator benchmark', mimeType: 'application/json' };
  const out = [];
  for (let i = 0; i < count; i++) {
    const client = clients[signedCount++ % clients.length];
    const paymentPayload = await client.createPaymentPayload({ x402Version: 2, resource, accepts: [requirements] });
    const { from, nonce } = paymentPayload.payload.authorization;
    out.push({ from, nonce, body: JSON.stringify({ x402Version: 2, paymentPayload, paymentRequirements: paymentPayload.accepted }) });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// phases

async function verifyPhase(sides, side, set) {
  if (set.warmup.length)
    await load(
      sides[side].origin,
      '/verify',
      set.warmup.map((p) => p.body),
      cfg.concurrency,
      cfg.verifyTimeoutMs,
    );
  const r = await measuredLoad(
    sides,
    side,
    '/verify',
    set.measured.map((p) => p.body),
    cfg.verifyTimeoutMs,
  );
  const answers = Array.from({ length: r.bodies.length }, (_, i) => {
    const body = safeJson(r.bodies[i]);
    return { status: r.status[i], error: r.errors[i], body, text: body === undefined ? (r.bodies[i] ?? '').slice(0, 300) : undefined };
  });
  const valid = answers.filter((a) => a.status === 200 && a.body?.isValid === true).length;
  const outcomes = countBy(answers, (a) =>
    a.error
      ? `error: ${a.error}`
      : a.status !== 200
        ? `HTTP ${a.status}`
        : a.body?.isValid === true
          ? 'isValid:true'
          : `isValid:false ${a.body?.invalidReason ?? '?'}`,
  );
  const firstBad = answers.find((a) => !(a.status === 200 && a.body?.isValid === true));
  return {
    requests: r.bodies.length,
    wallMs: r.wallMs,
    throughput: r.bodies.length / (r.wallMs / 1000),
    latencyMs: latencyStats(r.latencyMs),
    valid,
    outcomes,
    firstBadAnswer: firstBad ? { status: firstBad.status, error: firstBad.error, body: firstBad.body ?? firstBad.text } : null,
    client: { eventLoopUtilization: +r.elu.utilization.toFixed(3) },
    cpu: r.cpu,
  };
}

async function settlePhase(sides, side, payloads, concurrency = cfg.concurrency) {
  const r = await measuredLoad(
    sides,
    side,
    '/settle',
    payloads.map((p) => p.body),
    cfg.settleTimeoutMs,
    concurrency,
  );
  const answers = payloads.map((p, i) => {
    const body = safeJson(r.bodies[i]);
    return {
      from: p.from,
      nonce: p.nonce,
      status: r.status[i],
      error: r.errors[i],
      latencyMs: +r.latencyMs[i].toFixed(2),
      success: r.status[i] === 200 && body?.success === true,
      errorReason: body?.errorReason,
      errorMessage: typeof body?.errorMessage === 'string' ? body.errorMessage.slice(0, 300) : undefined,
      errorDetails: typeof body?.errorMessage === 'string' ? /^Details: (.*)$/m.exec(body.errorMessage)?.[1] : undefined,
      serverError: r.status[i] !== 200 ? (body?.error ?? body?.message ?? (r.bodies[i] ?? '').slice(0, 300)) : undefined,
      transaction: body?.transaction,
    };
  });
  return { wallMs: r.wallMs, answers, latencyMs: latencyStats(r.latencyMs), client: { eventLoopUtilization: +r.elu.utilization.toFixed(3) }, cpu: r.cpu };
}

/**
 * Settle @1: one caller sending distinct payloads one after another (after an unmeasured warm-up), as a merchant's
 * single paid request waits for /settle. With --count-round-trips, the server's round trips during the measured
 * part, then during 2 s of idleness after it (the background: pollers, lease renewals, the workers' blocking reads).
 */
async function serialPhase(sides, side, set) {
  const warmup = set.warmup.length ? await settlePhase(sides, side, set.warmup, 1) : undefined;
  const before = cfg.countRoundTrips ? await roundTripSnapshot(sides, side) : undefined;
  const startedAt = Date.now();
  const measured = { ...(await settlePhase(sides, side, set.measured, 1)), startedAt, endedAt: Date.now() };
  let roundTrips;
  if (before) {
    const after = await roundTripSnapshot(sides, side);
    await sleep(2000);
    const idle = await roundTripSnapshot(sides, side);
    roundTrips = roundTripsPerSettlement({ before, after, idle, settlements: set.measured.length, wallMs: measured.wallMs });
  }
  return { warmup, measured, roundTrips };
}

/** The counter's cumulative counts and the trace since the last snapshot (bench/lib/round-trip-counter.mjs). */
async function roundTripSnapshot(sides, side) {
  const file = sides[side].roundTripFile;
  fs.rmSync(file, { force: true });
  fs.writeFileSync(`${file}.ask`, '');
  const deadline = Date.now() + 10_000;
  while (!fs.existsSync(file)) {
    if (Date.now() > deadline) throw new Error(`the ${side} server wrote no round-trip counts to ${file}`);
    await sleep(20);
  }
  return JSON.parse(fs.readFileSync(file, 'utf8'));
}

/** Per settlement of a concurrent phase: the counts during it ÷ settlements (the background is small beside them). */
function perSettlement(before, after, settlements) {
  const counts = {};
  for (const [k, n] of Object.entries(after.counts)) {
    const during = n - (before.counts[k] ?? 0);
    if (during > 0) counts[k] = +(during / settlements).toFixed(2);
  }
  return counts;
}

/**
 * Per settlement: (the counts during the measured phase − the idle rate × its wall time) ÷ settlements; and, from
 * the trace, the round trips that started inside each /settle request's window (median over requests), with the
 * timeline of the median request.
 */
function roundTripsPerSettlement({ before, after, idle, settlements, wallMs }) {
  const idleSeconds = (idle.at - after.at) / 1000;
  const keys = new Set([...Object.keys(after.counts), ...Object.keys(idle.counts)]);
  const perSettlement = {};
  const background = {};
  for (const k of [...keys].sort()) {
    const during = (after.counts[k] ?? 0) - (before.counts[k] ?? 0);
    const idleRate = ((idle.counts[k] ?? 0) - (after.counts[k] ?? 0)) / idleSeconds;
    background[k] = +idleRate.toFixed(2);
    const net = (during - idleRate * (wallMs / 1000)) / settlements;
    if (during > 0) perSettlement[k] = +net.toFixed(2);
  }
  const requests = after.trace.filter((e) => e.kind === 'http' && /^POST \/settle/.test(e.name)).sort((a, b) => a.t - b.t);
  const windows = requests.map((req) => {
    const events = after.trace.filter((e) => e.kind !== 'http' && e.t >= req.t && e.t < req.t + req.ms).sort((a, b) => a.t - b.t);
    const byKind = countBy(events, (e) => e.kind);
    return { ms: req.ms, events, byKind };
  });
  const inWindow = {};
  for (const kind of ['pg', 'redis', 'rpc']) inWindow[kind] = median(windows.map((w) => w.byKind[kind] ?? 0));
  const byName = {};
  for (const w of windows) {
    for (const e of w.events) {
      const key = `${e.kind} ${e.name}`;
      byName[key] = (byName[key] ?? 0) + 1;
    }
  }
  const names = Object.fromEntries(
    Object.entries(byName)
      .map(([k, n]) => [k, +(n / Math.max(1, windows.length)).toFixed(2)])
      .sort((a, b) => b[1] - a[1]),
  );
  const sorted = [...windows].sort((a, b) => a.ms - b.ms);
  const typical = sorted[Math.floor(sorted.length / 2)];
  const start = typical ? requests.find((r) => r.ms === typical.ms).t : 0;
  return {
    perSettlement,
    backgroundPerSecond: background,
    inRequestWindow: { median: inWindow, perSettlementByName: names, requests: windows.length },
    medianRequest: typical && {
      ms: typical.ms,
      // where it lies on the monotonic clock of V8's CPU profiles (µs), to read its samples in a --cpu-prof run
      profileClockUs: { from: after.zeroUs + start * 1000, to: after.zeroUs + (start + typical.ms) * 1000 },
      timeline: typical.events.map((e) => ({ at: +(e.t - start).toFixed(2), ms: e.ms, kind: e.kind, name: e.name })),
    },
  };
}

/** Wait until anvil has no pending transaction (automine: normally immediate). */
async function waitForIdleChain(publicClient) {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const status = await publicClient.request({ method: 'txpool_status', params: [] });
    const pendingTx = Number(status.pending);
    const queued = Number(status.queued);
    if (pendingTx === 0 || Date.now() > deadline) return { pending: pendingTx, queued };
    await sleep(100);
  }
}

const usdcAbi = parseAbi([
  'function authorizationState(address authorizer, bytes32 nonce) view returns (bool)',
  'function balanceOf(address owner) view returns (uint256)',
]);
const authorizationUsedEvent = parseAbiItem('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');
const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

/**
 * On-chain truth for every settle payload: authorizationState, the AuthorizationUsed events for it and the
 * Transfers to the merchant in those transactions. Classifies each answer against it.
 */
async function auditSettlements(publicClient, manifest, fromBlock, settleRuns, merchantBefore) {
  const token = manifest.tokens.usdc.address;
  const merchant = manifest.accounts.merchant.address;
  const all = settleRuns.flatMap((s) => s.answers.map((a) => Object.assign(a, { side: s.side, run: s.run })));

  const states = [];
  for (let i = 0; i < all.length; i += 250) {
    const chunk = all.slice(i, i + 250);
    states.push(
      ...(await publicClient.multicall({
        allowFailure: false,
        contracts: chunk.map((a) => ({ address: token, abi: usdcAbi, functionName: 'authorizationState', args: [a.from, a.nonce] })),
      })),
    );
  }
  const toBlock = await publicClient.getBlockNumber();
  // No block since the first settle (no settle phase ran): nothing to read.
  const noBlocks = toBlock < fromBlock;
  const [usedLogs, transferLogs, merchantAfter] = await Promise.all([
    noBlocks ? [] : publicClient.getLogs({ address: token, event: authorizationUsedEvent, fromBlock, toBlock }),
    noBlocks ? [] : publicClient.getLogs({ address: token, event: transferEvent, args: { to: merchant }, fromBlock, toBlock }),
    publicClient.readContract({ address: token, abi: usdcAbi, functionName: 'balanceOf', args: [merchant] }),
  ]);
  const key = (from, nonce) => `${from.toLowerCase()}|${nonce.toLowerCase()}`;
  const usedByAuth = new Map();
  for (const log of usedLogs) {
    const k = key(log.args.authorizer, log.args.nonce);
    usedByAuth.set(k, [...(usedByAuth.get(k) ?? []), log]);
  }
  const transfersByTx = new Map();
  for (const log of transferLogs) transfersByTx.set(log.transactionHash, [...(transfersByTx.get(log.transactionHash) ?? []), log]);

  const known = new Set(all.map((a) => key(a.from, a.nonce)));
  const attributedTx = new Set();
  const perSide = {};
  for (const [i, a] of all.entries()) {
    const k = key(a.from, a.nonce);
    const used = usedByAuth.get(k) ?? [];
    const txs = [...new Set(used.map((l) => l.transactionHash))];
    // The token emits AuthorizationUsed, then the authorization's Transfer: the next log of the same transaction.
    // (Matching by payer alone would count a batch's other payments of the same payer as duplicates.)
    const transfers = used.flatMap((u) =>
      (transfersByTx.get(u.transactionHash) ?? []).filter((t) => t.logIndex === u.logIndex + 1 && t.args.from.toLowerCase() === a.from.toLowerCase()),
    );
    txs.forEach((tx) => attributedTx.add(tx));
    a.onChain = states[i] === true;
    a.onChainTx = txs;
    a.transferCount = transfers.length;
    a.transferred = transfers.reduce((s, t) => s + t.args.value, 0n);
    a.lost = (a.success && !a.onChain) || (!a.success && a.onChain);
    a.duplicated = used.length > 1 || transfers.length > 1;
    a.txMismatch = a.success && a.onChain && typeof a.transaction === 'string' && !txs.some((tx) => tx.toLowerCase() === a.transaction.toLowerCase());
    const side = (perSide[`${a.side}#${a.run}`] ??= {
      side: a.side,
      run: a.run,
      onChain: 0,
      transferred: 0n,
      transferEvents: 0,
      lost: 0,
      duplicated: 0,
      txMismatch: 0,
      lostDetails: [],
      duplicatedDetails: [],
    });
    if (a.onChain) side.onChain++;
    side.transferred += a.transferred;
    side.transferEvents += a.transferCount;
    if (a.lost) {
      side.lost++;
      if (side.lostDetails.length < 10) side.lostDetails.push(pick(a));
    }
    if (a.duplicated) {
      side.duplicated++;
      if (side.duplicatedDetails.length < 10) side.duplicatedDetails.push(pick(a));
    }
    if (a.txMismatch) side.txMismatch++;
  }
  for (const s of Object.values(perSide)) {
    s.expectedTransferred = cfg.amount * BigInt(s.onChain);
    s.transferMatchesOnChainCount = s.transferred === s.expectedTransferred && s.transferEvents === s.onChain;
    // Gas of every transaction that settled one of this side's payments, shared out over those payments.
    const hashes = [...new Set(all.filter((a) => a.side === s.side && a.run === s.run && a.onChain).flatMap((a) => a.onChainTx))];
    let gas = 0n;
    for (const hash of hashes) gas += (await publicClient.getTransactionReceipt({ hash })).gasUsed;
    s.transactions = hashes.length;
    s.gasPerPayment = s.onChain ? Number(gas / BigInt(s.onChain)) : 0;
  }
  const strayTransfers = transferLogs.filter((t) => !attributedTx.has(t.transactionHash)).length;
  const foreignAuthorizations = usedLogs.filter((l) => !known.has(key(l.args.authorizer, l.args.nonce))).length;
  const totalOnChain = all.filter((a) => a.onChain).length;
  return {
    perSide,
    merchant: {
      before: merchantBefore,
      after: merchantAfter,
      delta: merchantAfter - merchantBefore,
      expected: cfg.amount * BigInt(totalOnChain),
      matches: merchantAfter - merchantBefore === cfg.amount * BigInt(totalOnChain),
    },
    strayTransfers,
    foreignAuthorizations,
    fromBlock,
    toBlock,
  };
}
const pick = (a) => ({
  from: a.from,
  nonce: a.nonce,
  status: a.status,
  error: a.error,
  success: a.success,
  errorReason: a.errorReason,
  errorMessage: a.errorMessage,
  errorDetails: a.errorDetails,
  serverError: a.serverError,
  transaction: a.transaction,
  onChain: a.onChain,
  onChainTx: a.onChainTx,
  transferCount: a.transferCount,
});

function summarizeSettle(phase, side, run) {
  const successes = phase.answers.filter((a) => a.success).length;
  return {
    side,
    run,
    payloads: phase.answers.length,
    succeeded: successes,
    wallMs: phase.wallMs,
    settlesPerSecond: successes / (phase.wallMs / 1000),
    latencyMs: phase.latencyMs,
    failures: countBy(
      phase.answers.filter((a) => !a.success),
      (a) => (a.error ? `no answer: ${a.error}` : a.status !== 200 ? `HTTP ${a.status}` : (a.errorReason ?? 'success:false without errorReason')),
    ),
    httpStatus: countBy(phase.answers, (a) => String(a.status)),
    client: phase.client,
    cpu: phase.cpu,
    roundTrips: phase.roundTrips,
  };
}

/**
 * Where the machine's CPU went per successful settlement during one side's phase: that side's server, anvil, the
 * bench process (its load generator), and the rest of the machine (PostgreSQL, Redis, the kernel), which is the
 * machine's busy time from /proc/stat less the processes counted by pid. Null off Linux.
 */
function settleCpuPerSuccess(summary) {
  const { cpu, succeeded, side } = summary;
  if (!cpu || !succeeded || cpu.machineBusyFraction === null || cpu.seconds[side] === null || cpu.seconds.anvil === null) return null;
  const counted = Object.values(cpu.seconds).reduce((sum, seconds) => sum + (seconds ?? 0), 0);
  const machine = cpu.machineBusyFraction * os.cpus().length * cpu.wallSeconds;
  const perSuccess = (seconds) => (seconds * 1000) / succeeded;
  return {
    server: perSuccess(cpu.seconds[side]),
    anvil: perSuccess(cpu.seconds.anvil),
    loadGenerator: perSuccess(cpu.seconds.loadGenerator),
    rest: perSuccess(Math.max(0, machine - counted)),
  };
}

// ---------------------------------------------------------------------------------------------------------
// report

const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : '—');
const f2 = (x) => (Number.isFinite(x) ? x.toFixed(2) : '—');
const fRatio = (x) => (Number.isFinite(x) ? `${x.toFixed(2)}×` : '—');
function table(rows) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c] ?? '').length)));
  return rows
    .map((r, i) => {
      const line = r.map((cell, c) => (c === 0 ? String(cell ?? '').padEnd(widths[c]) : String(cell ?? '').padStart(widths[c]))).join('   ');
      return i === 0 ? `${line}\n${widths.map((w) => '-'.repeat(w)).join('   ')}` : line;
    })
    .join('\n');
}

function report(result) {
  const { verify, settle, serial, goals } = result.summary;
  const rows = [['', 'ours', 'reference', 'ours / reference']];
  if (cfg.phases.has('verify'))
    rows.push(
      [
        `/verify req/s (c=${cfg.concurrency}, n=${cfg.verifyRequests})`,
        f1(verify.ours.throughput),
        f1(verify.reference.throughput),
        fRatio(verify.throughputRatio),
      ],
      ['/verify latency p50 ms', f1(verify.ours.p50), f1(verify.reference.p50), ''],
      ['/verify latency p90 ms', f1(verify.ours.p90), f1(verify.reference.p90), ''],
      ['/verify latency p99 ms', f1(verify.ours.p99), f1(verify.reference.p99), ''],
      ['/verify server CPU ms per request', f2(verify.ours.serverCpuMsPerRequest), f2(verify.reference.serverCpuMsPerRequest), ''],
      ['/verify isValid:true', `${verify.ours.valid}/${verify.ours.requests}`, `${verify.reference.valid}/${verify.reference.requests}`, ''],
    );
  // a third server of the verify phase, read against ours
  const beside = (name, label, other) =>
    rows.push(
      [`/verify ${label} req/s`, f1(other.throughput), '', `ours / ${name} ${fRatio(verify.ours.throughput / other.throughput)}`],
      [
        `/verify ${name} CPU ms per request`,
        f2(other.serverCpuMsPerRequest),
        '',
        `${fRatio(verify.ours.serverCpuMsPerRequest / other.serverCpuMsPerRequest)} its CPU`,
      ],
      [`/verify ${name} isValid:true`, `${other.valid}/${other.requests}`, '', ''],
    );
  if (verify.floor) beside('floor', 'floor (bare node:http)', verify.floor);
  if (verify.baseline) beside('baseline', 'baseline build', verify.baseline);
  if (cfg.phases.has('settle'))
    rows.push(
      [
        `/settle succeeded (${cfg.settlePayloads} distinct, c=${cfg.concurrency})`,
        `${settle.ours.succeeded}/${settle.ours.payloads}`,
        `${settle.reference.succeeded}/${settle.reference.payloads}`,
        '',
      ],
      ['/settle settled on chain', settle.ours.onChain, settle.reference.onChain, ''],
      ['/settle wall time s', (settle.ours.wallMs / 1000).toFixed(2), (settle.reference.wallMs / 1000).toFixed(2), ''],
      [
        '/settle settles/s (successes / wall time)',
        f1(settle.ours.settlesPerSecond),
        f1(settle.reference.settlesPerSecond),
        fRatio(settle.settlesPerSecondRatio),
      ],
      ['/settle latency p50 ms', f1(settle.ours.p50), f1(settle.reference.p50), ''],
      ['/settle latency p99 ms', f1(settle.ours.p99), f1(settle.reference.p99), ''],
      ['lost payments', settle.ours.lost, settle.reference.lost, ''],
      ['duplicated payments', settle.ours.duplicated, settle.reference.duplicated, ''],
      ['success answers with a wrong tx hash', settle.ours.txMismatch, settle.reference.txMismatch, ''],
      [
        `/settle gas per settled payment${cfg.batch > 1 ? ` (ours in batches of ≤${cfg.batch})` : ''}`,
        settle.ours.gasPerPayment,
        settle.reference.gasPerPayment,
        fRatio(settle.ours.gasPerPayment / settle.reference.gasPerPayment),
      ],
      ['/settle transactions sent', settle.ours.transactions, settle.reference.transactions, ''],
      ['merchant Transfers = amount × on-chain count', settle.ours.transfersMatch ? 'yes' : 'NO', settle.reference.transfersMatch ? 'yes' : 'NO', ''],
    );
  if (cfg.phases.has('settle') && settle.ours.cpuMsPerSuccess && settle.reference.cpuMsPerSuccess) {
    // The arithmetic of the limit: with the machine full, a server that used no CPU at all would still share the cores
    // with anvil, PostgreSQL and the load, so the throughput it could reach is the cores' time over theirs.
    const [ours, reference] = [settle.ours.cpuMsPerSuccess, settle.reference.cpuMsPerSuccess];
    const others = (c) => c.anvil + c.loadGenerator + c.rest;
    const ceiling = (os.cpus().length * 1000) / others(ours);
    rows.push(
      ['/settle CPU ms per success: the server', f2(ours.server), f2(reference.server), ''],
      ['/settle CPU ms per success: anvil', f2(ours.anvil), f2(reference.anvil), ''],
      ['/settle CPU ms per success: the load generator', f2(ours.loadGenerator), f2(reference.loadGenerator), ''],
      ['/settle CPU ms per success: the rest (PostgreSQL, Redis, kernel)', f2(ours.rest), f2(reference.rest), ''],
      ['/settle settles/s the cores allow a server using no CPU', f1(ceiling), '', fRatio(ceiling / settle.reference.settlesPerSecond)],
    );
  }
  if (settle.floor) {
    const floor = settle.floor;
    const cpu = floor.cpuMsPerSuccess;
    rows.push(
      [`/settle floor (bare node:http${cfg.floorDurable ? ', durable record' : ''}) succeeded`, `${floor.succeeded}/${floor.payloads}`, '', ''],
      ['/settle floor settles/s', f1(floor.settlesPerSecond), '', fRatio(floor.settlesPerSecond / settle.reference.settlesPerSecond)],
      ['/settle floor latency p50 / p99 ms', `${f1(floor.p50)} / ${f1(floor.p99)}`, '', ''],
      ['/settle floor lost / duplicated / wrong tx hash', `${floor.lost} / ${floor.duplicated} / ${floor.txMismatch}`, '', ''],
      ...(cpu
        ? [
            ['/settle floor CPU ms per success: the floor / anvil', `${f2(cpu.server)} / ${f2(cpu.anvil)}`, '', ''],
            ['/settle floor CPU ms per success: load generator / the rest', `${f2(cpu.loadGenerator)} / ${f2(cpu.rest)}`, '', ''],
          ]
        : []),
    );
  }
  if (cfg.phases.has('serial'))
    rows.push(
      [
        `/settle @1 succeeded (${cfg.settleSerial} distinct × ${cfg.runs}, one caller)`,
        `${serial.ours.succeeded}/${serial.ours.payloads}`,
        `${serial.reference.succeeded}/${serial.reference.payloads}`,
        '',
      ],
      ['/settle @1 ok/s', f1(serial.ours.okPerSecond), f1(serial.reference.okPerSecond), fRatio(serial.okPerSecondRatio)],
      ['/settle @1 latency p50 ms', f1(serial.ours.p50), f1(serial.reference.p50), fRatio(serial.p50Ratio)],
      ['/settle @1 latency p90 ms', f1(serial.ours.p90), f1(serial.reference.p90), fRatio(serial.ours.p90 / serial.reference.p90)],
      ['/settle @1 latency p99 ms', f1(serial.ours.p99), f1(serial.reference.p99), fRatio(serial.ours.p99 / serial.reference.p99)],
      ['/settle @1 latency max ms', f1(serial.ours.max), f1(serial.reference.max), ''],
      [
        '/settle @1 lost / duplicated / wrong tx hash',
        `${serial.ours.lost} / ${serial.ours.duplicated} / ${serial.ours.txMismatch}`,
        `${serial.reference.lost} / ${serial.reference.duplicated} / ${serial.reference.txMismatch}`,
        '',
      ],
      [
        '/settle @1 merchant Transfers = amount × on-chain count',
        serial.ours.transfersMatch ? 'yes' : 'NO',
        serial.reference.transfersMatch ? 'yes' : 'NO',
        '',
      ],
    );
  console.log('');
  console.log(
    `x402 facilitator benchmark, ${result.startedAt}: node ${process.version}, ${os.cpus().length} CPUs, ${cfg.runs} run(s)${cfg.runs > 1 ? ' (medians)' : ''}`,
  );
  console.log('');
  console.log(table(rows));
  console.log('');
  if (cfg.runs > 1 && cfg.phases.has('verify') && cfg.phases.has('settle')) {
    const perRun = [
      ['run (first side)', 'verify req/s ours', 'reference', 'p99 ours ms', 'p50 reference ms', 'settled ours', 'reference', 'settles/s ours', 'reference'],
    ];
    for (let r = 1; r <= cfg.runs; r++) {
      const v = (side) => result.verifyRuns.find((x) => x.run === r && x.side === side);
      const st = (side) => result.settleRuns.find((x) => x.run === r && x.side === side);
      perRun.push([
        `${r} (${r % 2 === 1 ? 'ours' : 'reference'})`,
        f1(v('ours').throughput),
        f1(v('reference').throughput),
        f1(v('ours').latencyMs.p99),
        f1(v('reference').latencyMs.p50),
        st('ours').succeeded,
        st('reference').succeeded,
        f1(st('ours').settlesPerSecond),
        f1(st('reference').settlesPerSecond),
      ]);
    }
    console.log(table(perRun));
    console.log('');
  }
  if (cfg.phases.has('serial')) {
    const perRun = [['settle @1 run', 'p50 ours ms', 'reference', 'p99 ours ms', 'reference', 'ok/s ours', 'reference']];
    for (let r = 1; r <= cfg.runs; r++) {
      const st = (side) => result.serialRuns.find((x) => x.run === `${r}@1` && x.side === side);
      perRun.push([
        `${r} (${r % 2 === 1 ? 'ours' : 'reference'} first)`,
        f1(st('ours').latencyMs.p50),
        f1(st('reference').latencyMs.p50),
        f1(st('ours').latencyMs.p99),
        f1(st('reference').latencyMs.p99),
        f1(st('ours').settlesPerSecond),
        f1(st('reference').settlesPerSecond),
      ]);
    }
    console.log(table(perRun));
    console.log('');
    for (const failuresOf of ['ours', 'reference']) {
      const f = serial[failuresOf].failures;
      if (Object.keys(f).length)
        console.log(
          `/settle @1 failures, ${failuresOf}: ${Object.entries(f)
            .map(([k, v]) => `${v} × ${k}`)
            .join(', ')}`,
        );
    }
  }
  if (cfg.countRoundTrips) {
    for (const s of result.settleRuns) {
      if (!s.roundTrips) continue;
      console.log(`round trips per settlement, ${s.side}, /settle run ${s.run} at c=${cfg.concurrency} (during the phase ÷ ${s.payloads}):`);
      console.log(
        Object.entries(s.roundTrips)
          .filter(([, n]) => n >= 0.05)
          .map(([k, n]) => `    ${String(n).padStart(7)}  ${k}`)
          .join('\n'),
      );
    }
    for (const s of result.serialRuns) {
      if (!s.roundTrips) continue;
      const rt = s.roundTrips;
      const keys = Object.keys(rt.perSettlement).filter((k) => Math.abs(rt.perSettlement[k]) >= 0.05);
      console.log(`round trips per settlement, ${s.side}, run ${s.run} (measured − idle rate × wall time, ÷ ${cfg.settleSerial}):`);
      console.log(
        keys
          .map((k) => `    ${String(rt.perSettlement[k]).padStart(7)}  ${k}${rt.backgroundPerSecond[k] ? `   (idle: ${rt.backgroundPerSecond[k]}/s)` : ''}`)
          .join('\n'),
      );
      console.log(
        `  inside a request's window, median: PostgreSQL ${rt.inRequestWindow.median.pg}, Redis ${rt.inRequestWindow.median.redis}, JSON-RPC HTTP ${rt.inRequestWindow.median.rpc}`,
      );
      if (rt.medianRequest) {
        console.log(`  the median request (${rt.medianRequest.ms} ms), its round trips (start ms, duration ms):`);
        console.log(
          rt.medianRequest.timeline.map((e) => `    ${e.at.toFixed(2).padStart(7)} ${e.ms.toFixed(2).padStart(6)}  ${e.kind.padEnd(5)} ${e.name}`).join('\n'),
        );
      }
      console.log('');
    }
  }
  for (const side of cfg.phases.has('settle') ? ['ours', 'reference'] : []) {
    const failures = settle[side].failures;
    const text = Object.keys(failures).length
      ? Object.entries(failures)
          .sort((a, b) => b[1] - a[1])
          .map(([k, v]) => `${v} × ${k}`)
          .join(', ')
      : 'none';
    console.log(`/settle failures, ${side}${cfg.runs > 1 ? ' (all runs)' : ''}: ${text}`);
  }
  for (const side of cfg.phases.has('verify') ? ['ours', 'reference'] : []) {
    const o = verify[side].outcomes;
    if (verify[side].valid !== verify[side].requests)
      console.log(
        `/verify answers, ${side}: ${Object.entries(o)
          .map(([k, v]) => `${v} × ${k}`)
          .join(', ')}`,
      );
  }
  const m = result.audit.merchant;
  console.log(
    `merchant balance delta ${m.delta} = ${cfg.amount} × ${result.audit.totalOnChain} on-chain settlements: ${m.matches ? 'yes' : 'NO'}; stray Transfers to the merchant: ${result.audit.strayTransfers}`,
  );
  console.log('');
  console.log('Goals:');
  for (const g of goals) console.log(`  ${g.pass ? 'PASS' : 'FAIL'}  ${g.name}: ${g.detail}`);
  console.log('');
}

// ---------------------------------------------------------------------------------------------------------
// main

async function main() {
  const startedAt = new Date().toISOString();
  for (const port of [cfg.anvilPort, cfg.oursPort, cfg.referencePort, ...(cfg.floor ? [cfg.floorPort] : []), ...(cfg.baselineMain ? [cfg.baselinePort] : [])])
    await assertPortFree(port);

  // 1. Chain.
  anvil = await startAnvil({ port: cfg.anvilPort });
  say(`anvil on ${anvil.rpcUrl} (pid ${anvil.pid})`);
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  writeManifest(MANIFEST_PATH, manifest);
  say(`deployed; manifest ${path.relative(ROOT, MANIFEST_PATH)}`);
  const chain = defineChain({
    id: manifest.chainId,
    name: 'bench anvil',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [anvil.rpcUrl] } },
    contracts: { multicall3: { address: manifest.contracts.multicall3 } },
  });
  const publicClient = createPublicClient({ chain, transport: http(anvil.rpcUrl), pollingInterval: 100 });

  // 2. Database.
  await migrateDeploy({ databaseUrl: cfg.databaseUrl, quiet: true });
  await resetLocalState({ databaseUrl: cfg.databaseUrl });
  say(`database ${new URL(cfg.databaseUrl).pathname.slice(1)} migrated and emptied`);

  // 3. Build ours.
  if (cfg.build) {
    await run(process.execPath, ['scripts/prisma-generate.mjs', '--quiet'], 'prisma generate');
    const ms = await run(path.join(ROOT, 'node_modules', '.bin', 'nest'), ['build', 'facilitator'], 'nest build facilitator');
    say(`built ours in ${(ms / 1000).toFixed(1)} s`);
  }
  if (!fs.existsSync(cfg.oursMain)) throw new Error(`${path.relative(ROOT, cfg.oursMain)} is missing; run without --no-build`);

  // 4. Servers (under --cpu-prof / --count-round-trips: with the profiler / the counter preloaded).
  const signers = manifest.accounts.facilitatorSigners;
  const nodeFlags = (side) => [
    ...(cfg.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`, `--cpu-prof-name=${side}.cpuprofile`] : []),
    ...(cfg.countRoundTrips ? ['--import', pathToFileURL(ROUND_TRIP_COUNTER).href] : []),
  ];
  const roundTripFile = (side) => path.join(RESULTS_DIR, `x402-facilitator-${stamp}.${side}.round-trips.json`);
  const oursEnv = (port) => ({
    FACILITATOR_PORT: String(port),
    FACILITATOR_HOST: '127.0.0.1',
    DATABASE_URL: cfg.databaseUrl,
    CHAIN_MANIFEST: MANIFEST_PATH,
    FACILITATOR_SIGNER_KEYS: signers
      .slice(0, 3)
      .map((s) => s.privateKey)
      .join(','),
    FACILITATOR_OPEN_MODE: 'true', // the reference has no API keys either
    OPEN_MODE_RATE_LIMIT_PER_MINUTE: '0', // one load generator, one address: not what is measured
    SETTLE_BATCH_MAX: String(cfg.batch),
    LOG_LEVEL: 'warn',
  });
  const [oursChild, referenceChild] = await Promise.all([
    startServer({
      label: 'our facilitator',
      args: [...nodeFlags('ours'), cfg.oursMain],
      env: { ROUND_TRIP_FILE: roundTripFile('ours'), ...oursEnv(cfg.oursPort) },
      port: cfg.oursPort,
      readyPath: '/ready',
      log: logFile('ours'),
    }),
    startServer({
      label: 'reference facilitator',
      args: [
        ...nodeFlags('reference'),
        REFERENCE_MAIN,
        '--port',
        String(cfg.referencePort),
        '--rpc-url',
        anvil.rpcUrl,
        '--private-key',
        signers[3].privateKey,
        '--token',
        manifest.tokens.usdc.address,
      ],
      env: { ROUND_TRIP_FILE: roundTripFile('reference') },
      port: cfg.referencePort,
      readyPath: '/supported',
      log: logFile('reference'),
    }),
  ]);
  const sides = {
    ours: { origin: `http://127.0.0.1:${cfg.oursPort}`, pid: oursChild.pid, spawnedAt: oursChild.spawnedAt, roundTripFile: roundTripFile('ours') },
    reference: {
      origin: `http://127.0.0.1:${cfg.referencePort}`,
      pid: referenceChild.pid,
      spawnedAt: referenceChild.spawnedAt,
      roundTripFile: roundTripFile('reference'),
    },
  };
  say(`ours on ${sides.ours.origin} (pid ${oursChild.pid}, signers 0-2), reference on ${sides.reference.origin} (pid ${referenceChild.pid}, signer 3)`);
  if (cfg.floor && (cfg.phases.has('verify') || cfg.phases.has('settle'))) {
    // Three wallets of its own, past the accounts the deployment gives roles (anvil funds the first 20).
    const firstFree = ACCOUNT_LAYOUT.payers[1] + 1;
    const floorWallets = deriveAccounts(firstFree + 3).slice(firstFree);
    const floorChild = await startServer({
      label: 'floor',
      args: [
        FLOOR_MAIN,
        '--port',
        String(cfg.floorPort),
        '--rpc-url',
        anvil.rpcUrl,
        '--chain-id',
        String(manifest.chainId),
        '--dist',
        path.resolve(cfg.oursMain, '../../../..') /* dist/apps/facilitator of that build */,
        '--wallet-keys',
        floorWallets.map((w) => w.privateKey).join(','),
        ...(cfg.floorDurable ? ['--database-url', cfg.databaseUrl] : []),
        ...(cfg.batch > 1 ? ['--batch', String(cfg.batch), '--multicall3', manifest.contracts.multicall3] : []),
      ],
      env: {},
      port: cfg.floorPort,
      readyPath: '/ready',
      log: logFile('floor'),
    });
    sides.floor = { origin: `http://127.0.0.1:${cfg.floorPort}`, pid: floorChild.pid, spawnedAt: floorChild.spawnedAt };
    say(`floor on ${sides.floor.origin} (pid ${floorChild.pid}, mnemonic accounts ${firstFree}-${firstFree + 2})`);
  }
  if (cfg.baselineMain) {
    const baselineChild = await startServer({
      label: 'baseline facilitator',
      args: [cfg.baselineMain],
      env: oursEnv(cfg.baselinePort),
      port: cfg.baselinePort,
      readyPath: '/ready',
      log: logFile('baseline'),
    });
    sides.baseline = { origin: `http://127.0.0.1:${cfg.baselinePort}`, pid: baselineChild.pid, spawnedAt: baselineChild.spawnedAt };
    say(`baseline build of ours on ${sides.baseline.origin} (pid ${baselineChild.pid}): ${path.relative(ROOT, cfg.baselineMain)}`);
  }

  // 5. Pre-sign everything.
  const clients = makeSigners(manifest);
  const requirements = requirementsFor(manifest);
  const t0 = performance.now();
  const plan = [];
  for (let r = 0; r < cfg.runs; r++) {
    const sign = (on, count, label) => (cfg.phases.has(on) ? signPayloads(clients, requirements, count, label) : []);
    const serialSet = async (side) => ({
      warmup: await sign('serial', cfg.settleSerialWarmup, `serial-warmup-${side}-${r}`),
      measured: await sign('serial', cfg.settleSerial, `serial-${side}-${r}`),
    });
    plan.push({
      verify: {
        warmup: await sign('verify', cfg.warmup, `warmup-${r}`),
        measured: await sign('verify', cfg.verifyRequests, `verify-${r}`),
      },
      settle: {
        ours: await sign('settle', cfg.settlePayloads, `settle-ours-${r}`),
        reference: await sign('settle', cfg.settlePayloads, `settle-reference-${r}`),
        ...(sides.floor && { floor: await sign('settle', cfg.settlePayloads, `settle-floor-${r}`) }),
      },
      serial: { ours: await serialSet('ours'), reference: await serialSet('reference') },
    });
  }
  say(`pre-signed ${signedCount} payloads from ${clients.length} payers with the official x402 client in ${((performance.now() - t0) / 1000).toFixed(1)} s`);

  // 6. Load.
  startWorker();
  const verifyRuns = [];
  const settleRuns = [];
  const serialRuns = [];
  const serialWarmups = [];
  const settleFromBlock = (await publicClient.getBlockNumber()) + 1n;
  const merchantBefore = await publicClient.readContract({
    address: manifest.tokens.usdc.address,
    abi: usdcAbi,
    functionName: 'balanceOf',
    args: [manifest.accounts.merchant.address],
  });
  for (let r = 0; r < cfg.runs; r++) {
    const order = r % 2 === 0 ? ['ours', 'reference'] : ['reference', 'ours'];
    // a baseline build between ours and the reference, so that ours and it take turns at going first
    const verifyOrder = sides.baseline ? [order[0], 'baseline', order[1]] : order;
    for (const side of cfg.phases.has('verify') ? [...verifyOrder, ...(sides.floor ? ['floor'] : [])] : []) {
      say(`run ${r + 1}/${cfg.runs}: /verify ${side} (${cfg.warmup} warm-up + ${cfg.verifyRequests} at c=${cfg.concurrency})`);
      const startedAt = Date.now();
      const v = await verifyPhase(sides, side, plan[r].verify);
      verifyRuns.push({ run: r + 1, side, ...v, startedAt, endedAt: Date.now() });
      say(`  ${v.throughput.toFixed(1)} req/s, p50 ${v.latencyMs.p50.toFixed(1)} ms, p99 ${v.latencyMs.p99.toFixed(1)} ms, ${v.valid}/${v.requests} valid`);
    }
    // The chain slows as it grows, so the floor takes turns too: last in odd runs, first in even ones.
    const settleOrder = !sides.floor ? order : r % 2 === 0 ? [...order, 'floor'] : ['floor', ...order];
    for (const side of cfg.phases.has('settle') ? settleOrder : []) {
      say(`run ${r + 1}/${cfg.runs}: /settle ${side} (${cfg.settlePayloads} distinct at c=${cfg.concurrency})`);
      const before = cfg.countRoundTrips && sides[side].roundTripFile ? await roundTripSnapshot(sides, side) : undefined;
      const startedAt = Date.now();
      const s = { ...(await settlePhase(sides, side, plan[r].settle[side])), startedAt, endedAt: Date.now() };
      const roundTrips = before && perSettlement(before, await roundTripSnapshot(sides, side), s.answers.length);
      const idle = await waitForIdleChain(publicClient);
      settleRuns.push({ run: r + 1, side, ...s, roundTrips, txpoolAfter: idle });
      const ok = s.answers.filter((a) => a.success).length;
      say(
        `  ${ok}/${s.answers.length} succeeded in ${(s.wallMs / 1000).toFixed(1)} s${idle.pending || idle.queued ? ` (txpool after: ${idle.pending} pending, ${idle.queued} queued)` : ''}`,
      );
    }
    for (const side of cfg.phases.has('serial') ? order : []) {
      say(`run ${r + 1}/${cfg.runs}: /settle @1 ${side} (${cfg.settleSerialWarmup} warm-up + ${cfg.settleSerial} distinct, one after another)`);
      const { warmup, measured, roundTrips } = await serialPhase(sides, side, plan[r].serial[side]);
      const idle = await waitForIdleChain(publicClient);
      if (warmup) serialWarmups.push({ run: `${r + 1}@1 warm-up`, side, ...warmup });
      serialRuns.push({ run: `${r + 1}@1`, side, ...measured, roundTrips, txpoolAfter: idle });
      const ok = measured.answers.filter((a) => a.success).length;
      say(
        `  ${ok}/${measured.answers.length} succeeded, p50 ${measured.latencyMs.p50.toFixed(1)} ms, p99 ${measured.latencyMs.p99.toFixed(1)} ms, ${(ok / (measured.wallMs / 1000)).toFixed(1)} ok/s`,
      );
    }
  }
  await sleep(500);
  await waitForIdleChain(publicClient);

  // 7. On-chain audit.
  const audit = await auditSettlements(publicClient, manifest, settleFromBlock, [...settleRuns, ...serialWarmups, ...serialRuns], merchantBefore);
  audit.totalOnChain = Object.values(audit.perSide).reduce((s, x) => s + x.onChain, 0);

  // 8. Summary (medians over runs).
  const settleSummaries = settleRuns.map((s) => ({ ...summarizeSettle(s, s.side, s.run), audit: audit.perSide[`${s.side}#${s.run}`] }));
  const verifyFor = (side) => {
    const vs = verifyRuns.filter((v) => v.side === side);
    return {
      throughput: median(vs.map((v) => v.throughput)),
      p50: median(vs.map((v) => v.latencyMs.p50)),
      p90: median(vs.map((v) => v.latencyMs.p90)),
      p99: median(vs.map((v) => v.latencyMs.p99)),
      serverCpuMsPerRequest: median(vs.map((v) => (v.cpu.seconds[side] === null ? NaN : (v.cpu.seconds[side] * 1000) / v.requests))),
      valid: vs.reduce((s, v) => s + v.valid, 0),
      requests: vs.reduce((s, v) => s + v.requests, 0),
      outcomes: vs.reduce((acc, v) => {
        for (const [k, n] of Object.entries(v.outcomes)) acc[k] = (acc[k] ?? 0) + n;
        return acc;
      }, {}),
    };
  };
  const settleFor = (side) => {
    const ss = settleSummaries.filter((s) => s.side === side);
    return {
      payloads: median(ss.map((s) => s.payloads)),
      succeeded: median(ss.map((s) => s.succeeded)),
      onChain: median(ss.map((s) => s.audit.onChain)),
      wallMs: median(ss.map((s) => s.wallMs)),
      settlesPerSecond: median(ss.map((s) => s.settlesPerSecond)),
      p50: median(ss.map((s) => s.latencyMs.p50)),
      p99: median(ss.map((s) => s.latencyMs.p99)),
      lost: ss.reduce((n, s) => n + s.audit.lost, 0),
      duplicated: ss.reduce((n, s) => n + s.audit.duplicated, 0),
      txMismatch: ss.reduce((n, s) => n + s.audit.txMismatch, 0),
      gasPerPayment: median(ss.map((s) => s.audit.gasPerPayment)),
      transactions: median(ss.map((s) => s.audit.transactions)),
      transfersMatch: ss.every((s) => s.audit.transferMatchesOnChainCount),
      failures: ss.reduce((acc, s) => {
        for (const [k, n] of Object.entries(s.failures)) acc[k] = (acc[k] ?? 0) + n;
        return acc;
      }, {}),
      cpuMsPerSuccess: medianCpu(ss.map(settleCpuPerSuccess)),
    };
  };
  const serialSummaries = serialRuns.map((s) => ({
    ...summarizeSettle(s, s.side, s.run),
    audit: audit.perSide[`${s.side}#${s.run}`],
    roundTrips: s.roundTrips,
  }));
  const serialFor = (side) => {
    const ss = serialSummaries.filter((s) => s.side === side);
    const warm = serialWarmups.filter((s) => s.side === side).map((s) => audit.perSide[`${s.side}#${s.run}`]);
    return {
      payloads: ss.reduce((n, s) => n + s.payloads, 0),
      succeeded: ss.reduce((n, s) => n + s.succeeded, 0),
      okPerSecond: median(ss.map((s) => s.settlesPerSecond)),
      p50: median(ss.map((s) => s.latencyMs.p50)),
      p90: median(ss.map((s) => s.latencyMs.p90)),
      p99: median(ss.map((s) => s.latencyMs.p99)),
      max: Math.max(...ss.map((s) => s.latencyMs.max)),
      lost: [...ss.map((s) => s.audit), ...warm].reduce((n, a) => n + a.lost, 0),
      duplicated: [...ss.map((s) => s.audit), ...warm].reduce((n, a) => n + a.duplicated, 0),
      txMismatch: [...ss.map((s) => s.audit), ...warm].reduce((n, a) => n + a.txMismatch, 0),
      transfersMatch: [...ss.map((s) => s.audit), ...warm].every((a) => a.transferMatchesOnChainCount),
      failures: ss.reduce((acc, s) => {
        for (const [k, n] of Object.entries(s.failures)) acc[k] = (acc[k] ?? 0) + n;
        return acc;
      }, {}),
    };
  };
  const serial = { ours: serialFor('ours'), reference: serialFor('reference') };
  serial.p50Ratio = serial.ours.p50 / serial.reference.p50;
  serial.okPerSecondRatio = serial.ours.okPerSecond / serial.reference.okPerSecond;
  const verify = {
    ours: verifyFor('ours'),
    reference: verifyFor('reference'),
    ...(sides.floor && cfg.phases.has('verify') && { floor: verifyFor('floor') }),
    ...(sides.baseline && { baseline: verifyFor('baseline') }),
  };
  verify.throughputRatio = verify.ours.throughput / verify.reference.throughput;
  const settle = { ours: settleFor('ours'), reference: settleFor('reference'), ...(sides.floor && cfg.phases.has('settle') && { floor: settleFor('floor') }) };
  settle.settlesPerSecondRatio = settle.ours.settlesPerSecond / settle.reference.settlesPerSecond;
  const goals = [
    {
      phase: 'verify',
      name: '/verify throughput ours ≥ 3× reference',
      pass: verify.throughputRatio >= 3,
      detail: `${f1(verify.ours.throughput)} / ${f1(verify.reference.throughput)} req/s = ${fRatio(verify.throughputRatio)}`,
    },
    {
      phase: 'verify',
      name: '/verify throughput ours ≥ 10× reference (issue 15)',
      pass: verify.throughputRatio >= 10,
      detail: `${fRatio(verify.throughputRatio)}${
        verify.floor
          ? `; the floor (bare node:http, the same checks) made ${fRatio(verify.floor.throughput / verify.reference.throughput)}, so 10× asks ours for ${((10 * verify.reference.throughput) / verify.floor.throughput).toFixed(2)} of the floor's throughput`
          : ''
      }`,
    },
    {
      phase: 'verify',
      name: '/verify our p99 ≤ reference p50',
      pass: verify.ours.p99 <= verify.reference.p50,
      detail: `${f1(verify.ours.p99)} ms vs ${f1(verify.reference.p50)} ms`,
    },
    {
      phase: 'verify',
      name: '/verify every valid payload answered isValid:true (ours)',
      pass: verify.ours.valid === verify.ours.requests,
      detail: `${verify.ours.valid}/${verify.ours.requests}`,
    },
    {
      phase: 'settle',
      name: '/settle no lost and no duplicated payment (ours)',
      pass:
        settle.ours.lost === 0 &&
        settle.ours.duplicated === 0 &&
        settle.ours.txMismatch === 0 &&
        settle.ours.transfersMatch &&
        audit.merchant.matches &&
        audit.strayTransfers === 0,
      detail: `lost ${settle.ours.lost}, duplicated ${settle.ours.duplicated}, wrong tx hash ${settle.ours.txMismatch}, merchant balance ${audit.merchant.matches ? 'matches' : 'DOES NOT match'} the on-chain count`,
    },
    {
      phase: 'settle',
      name: `/settle ok/s ours ≥ ${cfg.batch > 1 ? 60 : 30}× reference${cfg.batch > 1 ? ' with batching' : ' without batching'} (issue 15, at 1,000 distinct @64)`,
      pass: settle.settlesPerSecondRatio >= (cfg.batch > 1 ? 60 : 30),
      detail: `${f1(settle.ours.settlesPerSecond)} / ${f1(settle.reference.settlesPerSecond)} ok/s = ${fRatio(settle.settlesPerSecondRatio)} (this run: ${cfg.settlePayloads} distinct @${cfg.concurrency})`,
    },
    {
      phase: 'serial',
      name: '/settle @1 our p50 ≤ reference p50',
      pass: serial.ours.p50 <= serial.reference.p50,
      detail: `${f1(serial.ours.p50)} ms vs ${f1(serial.reference.p50)} ms (${fRatio(serial.p50Ratio)})`,
    },
    {
      phase: 'serial',
      name: '/settle @1 our p99 ≤ 2× reference p50',
      pass: serial.ours.p99 <= 2 * serial.reference.p50,
      detail: `${f1(serial.ours.p99)} ms vs 2 × ${f1(serial.reference.p50)} = ${f1(2 * serial.reference.p50)} ms`,
    },
    {
      phase: 'serial',
      name: '/settle @1 every payload settled, none lost or duplicated (ours)',
      pass:
        serial.ours.succeeded === serial.ours.payloads &&
        serial.ours.lost === 0 &&
        serial.ours.duplicated === 0 &&
        serial.ours.txMismatch === 0 &&
        serial.ours.transfersMatch &&
        audit.merchant.matches &&
        audit.strayTransfers === 0,
      detail: `${serial.ours.succeeded}/${serial.ours.payloads} succeeded, lost ${serial.ours.lost}, duplicated ${serial.ours.duplicated}, wrong tx hash ${serial.ours.txMismatch} (warm-ups included)`,
    },
  ].filter((g) => cfg.phases.has(g.phase));

  const result = {
    benchmark: 'x402-facilitator',
    startedAt,
    finishedAt: new Date().toISOString(),
    config: { ...cfg, amount: cfg.amount.toString(), phases: [...cfg.phases] },
    environment: {
      node: process.version,
      cpus: os.cpus().length,
      cpuModel: os.cpus()[0]?.model,
      loadAverage: os.loadavg(),
      gitCommit: (() => {
        try {
          return execFileSync('git', ['rev-parse', 'HEAD'], { cwd: ROOT }).toString().trim();
        } catch {
          return null;
        }
      })(),
    },
    setup: {
      rpcUrl: anvil.rpcUrl,
      token: manifest.tokens.usdc.address,
      merchant: manifest.accounts.merchant.address,
      ours: { url: sides.ours.origin, signers: signers.slice(0, 3).map((s) => s.address), log: path.relative(ROOT, logFile('ours')) },
      reference: { url: sides.reference.origin, signers: [signers[3].address], log: path.relative(ROOT, logFile('reference')) },
      payers: manifest.accounts.payers.map((p) => p.address),
    },
    summary: { verify, settle, serial, goals },
    audit: { ...audit, perSide: Object.values(audit.perSide) },
    verifyRuns,
    settleRuns: settleSummaries,
    serialRuns: serialSummaries,
    settleAnswers: [...settleRuns, ...serialWarmups, ...serialRuns].flatMap((s) => s.answers),
  };
  const file = path.join(RESULTS_DIR, `x402-facilitator-${stamp}.json`);
  fs.writeFileSync(file, `${JSON.stringify(result, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
  report(result);
  if (cfg.cpuProf) {
    await cleanup(); // the profiles are written as the servers exit
    for (const side of ['ours', 'reference']) {
      const file = path.join(PROFILE_DIR, `${side}.cpuprofile`);
      if (!fs.existsSync(file)) {
        say(`no CPU profile from ${side} (${path.relative(ROOT, file)})`);
        continue;
      }
      // Samples of the measured phases only (the whole life of the process when none ran).
      const windows = [...verifyRuns, ...settleRuns, ...serialRuns]
        .filter((s) => s.side === side)
        .map((s) => [s.startedAt - sides[side].spawnedAt, s.endedAt - sides[side].spawnedAt]);
      const top = summarizeProfile(JSON.parse(fs.readFileSync(file, 'utf8')), windows.length ? { windows } : {});
      fs.writeFileSync(path.join(PROFILE_DIR, `${side}.folded`), top.folded);
      result.profiles = { ...result.profiles, [side]: { file: path.relative(ROOT, file), ...top, folded: undefined } };
      console.log(formatProfile(side, top));
    }
    fs.writeFileSync(file, `${JSON.stringify(result, (_k, v) => (typeof v === 'bigint' ? v.toString() : v), 2)}\n`);
    say(`profiles: ${path.relative(ROOT, PROFILE_DIR)} (.cpuprofile for Chrome DevTools / speedscope, .folded for flamegraph.pl / speedscope)`);
  }
  say(`full results: ${path.relative(ROOT, file)}; server logs: ${path.relative(ROOT, logFile('ours'))}, ${path.relative(ROOT, logFile('reference'))}`);
}

main()
  .then(() => cleanup())
  .then(() => process.exit(0))
  .catch(async (error) => {
    console.error(`[bench] failed: ${error instanceof Error ? (error.stack ?? error.message) : error}`);
    await cleanup();
    process.exit(1);
  });
