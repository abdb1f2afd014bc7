#!/usr/bin/env node
// Paid requests against the peers (issue 15): a paid A2A task (first message → completed, settlement included) and a
// paid MPP request, one caller, sequential, through our merchant agent and through the peers on the same chain:
//   A2A: our agent (settling through our facilitator) vs bench/peers/a2a-merchant.mjs (@a2a-js/sdk server pieces,
//        settling through the reference x402 facilitator), both paid by our buyer (buyFromAgent) unchanged;
//   MPP: our agent's POST /mpp/forecast (settled by our facilitator) vs bench/peers/mppx-server.mjs (mppx's own server
//        and evm charge), both paid by mppx's client (buyWithMpp) unchanged.
// Nothing is signed in advance: each paid request is a whole buyer flow. Prints median / p90 / p99 per side and the
// ratio ours / peer, and checks on chain that each side's merchant got exactly N × price (once per request).
//
//   node bench/paid-requests.mjs [--requests 100] [--warmup 5] [--only a2a|mpp] [--mppx-settle direct|facilitator]
//                                [--cpu-prof] [--trace] [--no-build] [--anvil-port 9801] [--facilitator-port 9802]
//                                [--reference-port 9803] [--a2a-peer-port 9804] [--mppx-peer-port 9805]
//                                [--merchant-port 9806] [--trace-port 9807] [--database-url postgresql://…/mp_peers_bench]
//
// --cpu-prof writes our merchant agent's and facilitator's CPU profiles (node --cpu-prof) to bench/results/.
// --trace turns on our apps' OpenTelemetry tracing, exported (OTLP http/json) to a collector in this process, and
// prints where one paid request of ours spends its time: PostgreSQL, Redis, chain RPC, facilitator calls, per app.
// Everything it starts is stopped on exit, Ctrl-C or error. Exit code 0 whether or not the goals are met (printed as
// PASS/FAIL); non-zero only when the harness fails.
import { randomBytes } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { createPublicClient, erc20Abi, getAddress, http as viemHttp, parseAbiItem } from 'viem';

import { startAnvil } from '../scripts/lib/anvil.mjs';
import { appEntry, buildIfStale } from '../scripts/lib/build.mjs';
import { dropDatabase, migrateDeploy } from '../scripts/lib/database.mjs';
import { deployLocalChain, deriveAccounts, writeManifest } from '../scripts/lib/deploy.mjs';
import { busyFraction, childProcesses, cpuSeconds, machineCpu } from './lib/processes.mjs';
import { headerComment } from './lib/help.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS_DIR = path.join(ROOT, 'bench', 'results');

const { values: opt } = parseArgs({
  options: {
    requests: { type: 'string', default: '100' },
    warmup: { type: 'string', default: '5' },
    only: { type: 'string' },
    'mppx-settle': { type: 'string', default: 'direct' },
    price: { type: 'string', default: '10000' },
    'anvil-port': { type: 'string', default: '9801' },
    'facilitator-port': { type: 'string', default: '9802' },
    'reference-port': { type: 'string', default: '9803' },
    'a2a-peer-port': { type: 'string', default: '9804' },
    'mppx-peer-port': { type: 'string', default: '9805' },
    'merchant-port': { type: 'string', default: '9806' },
    'database-url': { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/mp_peers_bench' },
    'cpu-prof': { type: 'boolean', default: false },
    trace: { type: 'boolean', default: false },
    'trace-port': { type: 'string', default: '9807' },
    'no-build': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (opt.help) {
  console.log(headerComment(import.meta.url));
  process.exit(0);
}
const int = (name, min = 1) => {
  const v = Number(opt[name]);
  if (!Number.isInteger(v) || v < min) {
    console.error(`--${name} must be an integer ≥ ${min} (got ${opt[name]})`);
    process.exit(2);
  }
  return v;
};
const cfg = {
  requests: int('requests'),
  warmup: int('warmup', 0),
  only: opt.only,
  mppxSettle: opt['mppx-settle'],
  price: BigInt(int('price')),
  ports: {
    anvil: int('anvil-port'),
    facilitator: int('facilitator-port'),
    reference: int('reference-port'),
    a2aPeer: int('a2a-peer-port'),
    mppxPeer: int('mppx-peer-port'),
    merchant: int('merchant-port'),
    trace: int('trace-port'),
  },
  databaseUrl: opt['database-url'],
  cpuProf: opt['cpu-prof'],
  trace: opt.trace,
  build: !opt['no-build'],
};
if (cfg.only !== undefined && !['a2a', 'mpp'].includes(cfg.only)) {
  console.error('--only must be a2a or mpp');
  process.exit(2);
}
if (!['direct', 'facilitator'].includes(cfg.mppxSettle)) {
  console.error('--mppx-settle must be direct or facilitator');
  process.exit(2);
}
if (!['127.0.0.1', 'localhost'].includes(new URL(cfg.databaseUrl).hostname) || !/bench/.test(new URL(cfg.databaseUrl).pathname)) {
  console.error('--database-url must be a database on 127.0.0.1 whose name contains "bench" (it is dropped and made again)');
  process.exit(2);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
fs.mkdirSync(RESULTS_DIR, { recursive: true });
const logFile = (name) => path.join(RESULTS_DIR, `paid-requests-${stamp}.${name}.log`);
const say = (msg) => console.log(`[bench] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const processes = childProcesses({ cwd: ROOT });

// ---------------------------------------------------------------------------------------------------------
// statistics

const percentile = (sorted, p) => sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
function stats(ms) {
  const s = [...ms].sort((a, b) => a - b);
  return { count: s.length, p50: percentile(s, 50), p90: percentile(s, 90), p99: percentile(s, 99), min: s[0], max: s[s.length - 1] };
}
const f1 = (v) => (v === undefined || v === null || Number.isNaN(v) ? '–' : v.toFixed(1));
const f2 = (v) => v.toFixed(2).padStart(7);

/** Sum and count of http_request_duration_seconds per "METHOD route" of a process's /metrics. */
async function routeTimes(baseUrl) {
  const text = await fetch(`${baseUrl}/metrics`).then(
    (r) => r.text(),
    () => '',
  );
  const out = {};
  for (const line of text.split('\n')) {
    const m = /^http_request_duration_seconds_(sum|count)\{([^}]*)\} ([0-9.eE+-]+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...m[2].matchAll(/(\w+)="([^"]*)"/g)].map((x) => [x[1], x[2]]));
    const key = `${labels.method} ${labels.route}`;
    out[key] ??= { sum: 0, count: 0 };
    out[key][m[1]] += Number(m[3]);
  }
  return out;
}
function routeDelta(before, after) {
  const out = {};
  for (const [key, v] of Object.entries(after)) {
    const count = v.count - (before[key]?.count ?? 0);
    if (count > 0) out[key] = { count, meanMs: +(((v.sum - (before[key]?.sum ?? 0)) / count) * 1000).toFixed(2) };
  }
  return out;
}

// ---------------------------------------------------------------------------------------------------------
// --trace: an OTLP/HTTP JSON collector for our apps' spans, and what one paid request spends where

const attr = (attributes, key) => {
  const v = attributes?.find((a) => a.key === key)?.value;
  return v ? (v.stringValue ?? v.intValue ?? v.doubleValue ?? v.boolValue) : undefined;
};

function startCollector(port) {
  const spans = [];
  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
        for (const rs of body.resourceSpans ?? []) {
          const service = attr(rs.resource?.attributes, 'service.name') ?? '?';
          for (const ss of rs.scopeSpans ?? []) for (const span of ss.spans ?? []) spans.push({ service, ...span });
        }
      } catch {
        // not JSON: ignored
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve({ spans, close: () => new Promise((r) => server.close(r)) }));
  });
}

/** Our apps' PostgreSQL statements per paid request, by app and statement text (the first 110 characters). */
function statementBreakdown(spans, requests) {
  const out = {};
  for (const span of spans) {
    const a = span.attributes;
    if ((attr(a, 'db.system.name') ?? attr(a, 'db.system')) !== 'postgresql') continue;
    const text = String(attr(a, 'db.query.text') ?? attr(a, 'db.statement') ?? span.name)
      .replace(/\s+/g, ' ')
      .slice(0, 110);
    const key = `${span.service} | ${text}`;
    out[key] ??= { count: 0, ms: 0 };
    out[key].count += 1;
    out[key].ms += Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6;
  }
  return Object.fromEntries(
    Object.entries(out)
      .sort((x, y) => y[1].count - x[1].count || y[1].ms - x[1].ms)
      .map(([k, v]) => [k, { perRequest: +(v.count / requests).toFixed(2), msPerRequest: +(v.ms / requests).toFixed(2) }]),
  );
}

/** What our apps' spans add up to, per paid request: per app, per kind of work (sum of span durations, count). */
function traceBreakdown(spans, requests, ports) {
  const out = {};
  for (const span of spans) {
    const ms = Number(BigInt(span.endTimeUnixNano) - BigInt(span.startTimeUnixNano)) / 1e6;
    const a = span.attributes;
    const db = attr(a, 'db.system.name') ?? attr(a, 'db.system');
    const serverPort = Number(attr(a, 'server.port') ?? attr(a, 'net.peer.port') ?? 0);
    let what;
    if (db === 'postgresql') what = 'PostgreSQL statements';
    else if (db === 'redis') what = 'Redis commands';
    else if (span.kind === 2) what = `served: ${attr(a, 'http.request.method') ?? attr(a, 'http.method') ?? ''} ${attr(a, 'http.route') ?? span.name}`.trim();
    else if (span.kind === 3 && serverPort === ports.anvil) what = 'chain RPC calls';
    else if (span.kind === 3 && serverPort === ports.facilitator) what = 'calls to the facilitator';
    else if (span.kind === 4 || span.kind === 5) what = `queue ${span.kind === 4 ? 'producer' : 'consumer'}: ${span.name}`;
    else continue;
    const key = `${span.service} | ${what}`;
    out[key] ??= { count: 0, ms: 0 };
    out[key].count += 1;
    out[key].ms += ms;
  }
  return Object.fromEntries(
    Object.entries(out)
      .sort((x, y) => y[1].ms - x[1].ms)
      .map(([k, v]) => [k, { perRequest: +(v.count / requests).toFixed(2), msPerRequest: +(v.ms / requests).toFixed(2) }]),
  );
}

/**
 * The spans of our median paid call (a merchant-agent request that called the facilitator's settle route, by its own
 * duration), in start order: offset from its start, duration, app and what (a statement's first words, an RPC method).
 */
function medianTimeline(spans) {
  const traces = new Map();
  for (const span of spans) {
    if (!traces.has(span.traceId)) traces.set(span.traceId, []);
    traces.get(span.traceId).push(span);
  }
  const ns = (span) => BigInt(span.startTimeUnixNano);
  const ms = (a, b) => Number(b - a) / 1e6;
  const paid = [];
  for (const group of traces.values()) {
    const root = group.find((s) => !s.parentSpanId && s.service === 'merchant-agent' && s.kind === 2);
    const settles = group.some((s) => s.service === 'facilitator' && s.kind === 2 && /settle/.test(String(attr(s.attributes, 'http.route') ?? s.name)));
    if (root && settles) paid.push({ root, group, total: ms(ns(root), BigInt(root.endTimeUnixNano)) });
  }
  if (!paid.length) return undefined;
  paid.sort((a, b) => a.total - b.total);
  const { root, group, total } = paid[Math.floor(paid.length / 2)];
  const label = (s) => {
    const text = attr(s.attributes, 'db.query.text') ?? attr(s.attributes, 'db.statement');
    return String(text ?? s.name)
      .replace(/\s+/g, ' ')
      .slice(0, 70);
  };
  return {
    totalMs: +total.toFixed(2),
    spans: group
      .filter((s) => s.kind !== 1 || attr(s.attributes, 'db.system.name') || attr(s.attributes, 'db.system'))
      .sort((a, b) => (ns(a) < ns(b) ? -1 : 1))
      .map((s) => ({
        atMs: +ms(ns(root), ns(s)).toFixed(2),
        ms: +ms(ns(s), BigInt(s.endTimeUnixNano)).toFixed(2),
        app: s.service,
        what: label(s),
      })),
  };
}

// ---------------------------------------------------------------------------------------------------------
// the run

/** The idle window before the phases (CPU of each process with no request). */
const IDLE_SECONDS = 3;

const report = {
  config: { ...cfg, price: cfg.price.toString() },
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavgAtStart: os.loadavg() },
  phases: {},
};

async function main() {
  if (cfg.build) buildIfStale({ log: say });
  for (const app of ['facilitator', 'merchant-agent']) if (!fs.existsSync(appEntry(app))) throw new Error(`${appEntry(app)} is missing: run npm run build`);
  const req = createRequire(import.meta.url);
  const { buyFromAgent } = req(appEntry('merchant-agent', 'buyer/a2a-buyer.js'));
  const { buyWithMpp } = req(appEntry('merchant-agent', 'mpp/mpp-buyer.js'));

  // --- the chain and the database
  say(`fresh database ${new URL(cfg.databaseUrl).pathname.slice(1)}`);
  await dropDatabase(cfg.databaseUrl);
  await migrateDeploy({ databaseUrl: cfg.databaseUrl, quiet: true });
  const anvil = (processes.anvil = await startAnvil({ port: cfg.ports.anvil }));
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  const manifestPath = writeManifest(path.join(ROOT, '.local', 'chain-bench-peers.json'), manifest);
  const usdc = manifest.tokens.usdc;
  const signers = manifest.accounts.facilitatorSigners;
  // each side is paid to its own address, so each side's balance tells its own settlements
  const extra = deriveAccounts(18);
  const payTo = { ours: getAddress(manifest.accounts.merchant.address), a2aPeer: getAddress(extra[16].address), mppxPeer: getAddress(extra[17].address) };
  const url = (port) => `http://127.0.0.1:${port}`;
  const prof = (name) => (cfg.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS_DIR}`, `--cpu-prof-name=paid-requests-${stamp}.${name}.cpuprofile`] : []);

  // --- ours: the facilitator (keyed, as deployed) and the merchant agent without a ledger
  const operatorToken = randomBytes(32).toString('hex');
  const collector = cfg.trace ? await startCollector(cfg.ports.trace) : undefined;
  const tracing = cfg.trace
    ? {
        OTEL_TRACES_EXPORTER: 'otlp',
        OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${url(cfg.ports.trace)}/v1/traces`,
        OTEL_BSP_SCHEDULE_DELAY: '200',
      }
    : {};
  const common = { DATABASE_URL: cfg.databaseUrl, LOG_LEVEL: 'warn', QUEUE_PREFIX: `peersbench-${process.pid}`, CHAIN_MANIFEST: manifestPath, ...tracing };
  const facilitator = await processes.start({
    label: 'facilitator',
    args: [...prof('facilitator'), appEntry('facilitator')],
    env: {
      ...common,
      FACILITATOR_PORT: String(cfg.ports.facilitator),
      FACILITATOR_SIGNER_KEYS: [signers[0], signers[1]].map((s) => s.privateKey).join(','),
      OPERATOR_TOKEN: operatorToken,
      FACILITATOR_OPEN_MODE: 'false',
      // one caller: the per-key limit (600/min) would only add noise
      RATE_LIMIT_PER_MINUTE: '0',
    },
    log: logFile('facilitator'),
    readyUrl: `${url(cfg.ports.facilitator)}/ready`,
  });
  const created = spawnSync(
    process.execPath,
    ['scripts/merchants.mjs', 'create', '--name', 'peers bench', '--receiving-address', `${manifest.network}:${payTo.ours}`, '--json'],
    { cwd: ROOT, env: { ...process.env, FACILITATOR_URL: url(cfg.ports.facilitator), OPERATOR_TOKEN: operatorToken }, encoding: 'utf8' },
  );
  if (created.status !== 0) throw new Error(`merchants.mjs create failed: ${created.stderr}`);
  const { apiKey } = JSON.parse(created.stdout);
  const merchant = await processes.start({
    label: 'merchant-agent',
    args: [...prof('merchant-agent'), appEntry('merchant-agent')],
    env: {
      ...common,
      MERCHANT_PORT: String(cfg.ports.merchant),
      FACILITATOR_URL: url(cfg.ports.facilitator),
      FACILITATOR_API_KEY: apiKey,
      MERCHANT_PRICE: cfg.price.toString(),
      MERCHANT_PAY_TO: payTo.ours,
    },
    log: logFile('merchant-agent'),
    readyUrl: `${url(cfg.ports.merchant)}/ready`,
  });

  // --- the peers: the reference facilitator, the a2a-js merchant through it, mppx's server
  const reference = await processes.start({
    label: 'reference',
    args: [
      path.join(ROOT, 'bench', 'reference-facilitator.mjs'),
      '--port',
      String(cfg.ports.reference),
      '--rpc-url',
      anvil.rpcUrl,
      '--private-key',
      signers[3].privateKey,
    ],
    log: logFile('reference'),
    readyUrl: `${url(cfg.ports.reference)}/supported`,
  });
  const tokenArgs = ['--asset', usdc.address, '--asset-name', usdc.name, '--asset-version', usdc.version, '--price', cfg.price.toString()];
  const a2aPeer = await processes.start({
    label: 'a2a-peer',
    args: [
      path.join(ROOT, 'bench', 'peers', 'a2a-merchant.mjs'),
      ...['--port', String(cfg.ports.a2aPeer), '--facilitator-url', url(cfg.ports.reference), '--network', manifest.network, '--pay-to', payTo.a2aPeer],
      ...tokenArgs,
    ],
    log: logFile('a2a-peer'),
    readyUrl: `${url(cfg.ports.a2aPeer)}/health`,
  });
  const mppxPeer = await processes.start({
    label: 'mppx-peer',
    args: [
      path.join(ROOT, 'bench', 'peers', 'mppx-server.mjs'),
      ...['--port', String(cfg.ports.mppxPeer), '--rpc-url', anvil.rpcUrl, '--chain-id', String(manifest.chainId), '--decimals', String(usdc.decimals)],
      ...['--pay-to', payTo.mppxPeer, '--private-key', signers[2].privateKey, '--settle', cfg.mppxSettle, '--facilitator-url', url(cfg.ports.reference)],
      ...tokenArgs,
    ],
    log: logFile('mppx-peer'),
    readyUrl: `${url(cfg.ports.mppxPeer)}/health`,
  });
  const pids = {
    facilitator: facilitator.pid,
    merchantAgent: merchant.pid,
    reference: reference.pid,
    a2aPeer: a2aPeer.pid,
    mppxPeer: mppxPeer.pid,
    anvil: anvil.pid,
  };
  // What each process spends with no request at all (its pollers), over IDLE_SECONDS once everything is up.
  const idle0 = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
  await sleep(IDLE_SECONDS * 1000);
  report.idleCpuMsPerSecond = Object.fromEntries(
    Object.entries(pids).map(([k, pid]) => [k, +(((cpuSeconds(pid) - idle0[k]) * 1000) / IDLE_SECONDS).toFixed(1)]),
  );

  // --- the buyers, as they are: one whole flow per request, payers taken round robin
  const payers = manifest.accounts.payers;
  let turn = 0;
  const nextPayer = () => payers[turn++ % payers.length].privateKey;
  const a2aBuy = (agentUrl) => async () => {
    const purchase = await buyFromAgent(
      { agentUrl, privateKey: nextPayer(), network: manifest.network, asset: usdc.address, maxAmountPerPayment: cfg.price.toString() },
      'forecast Porto',
    );
    if (purchase.outcome !== 'TASK_STATE_COMPLETED' || !purchase.receipt?.success) throw new Error(`not paid: ${purchase.outcome} ${purchase.error ?? ''}`);
    return purchase.receipt.transaction;
  };
  const mppBuy = (resourceUrl) => async () => {
    const purchase = await buyWithMpp({
      url: resourceUrl,
      body: { city: 'Porto' },
      method: 'evm',
      evm: { privateKey: nextPayer(), name: usdc.name, version: usdc.version },
    });
    if (purchase.status !== 200 || !purchase.receipt?.reference)
      throw new Error(`not paid: HTTP ${purchase.status} ${JSON.stringify(purchase.body).slice(0, 300)}`);
    return purchase.receipt.reference;
  };

  const publicClient = createPublicClient({ transport: viemHttp(anvil.rpcUrl) });
  const balance = (address) => publicClient.readContract({ address: usdc.address, abi: erc20Abi, functionName: 'balanceOf', args: [address] });
  const transferEvent = parseAbiItem('event Transfer(address indexed from, address indexed to, uint256 value)');

  const phases = [
    {
      name: 'a2a',
      label: 'paid A2A task (first message → completed)',
      ours: a2aBuy(url(cfg.ports.merchant)),
      peer: a2aBuy(url(cfg.ports.a2aPeer)),
      peerPayTo: payTo.a2aPeer,
      peerName: '@a2a-js/sdk + reference facilitator',
    },
    {
      name: 'mpp',
      label: 'paid MPP request (evm charge)',
      ours: mppBuy(`${url(cfg.ports.merchant)}/mpp/forecast`),
      peer: mppBuy(`${url(cfg.ports.mppxPeer)}/forecast`),
      peerPayTo: payTo.mppxPeer,
      peerName: `mppx server (settle: ${cfg.mppxSettle})`,
    },
  ].filter((p) => !cfg.only || p.name === cfg.only);

  for (const phase of phases) {
    say(`${phase.label}: ${cfg.warmup} warm-up + ${cfg.requests} measured per side, one caller, order alternating per round`);
    const sides = { ours: { run: phase.ours, payTo: payTo.ours }, peer: { run: phase.peer, payTo: phase.peerPayTo } };
    for (let i = 0; i < cfg.warmup; i++) for (const side of Object.values(sides)) await side.run();
    const fromBlock = (await publicClient.getBlockNumber({ cacheTime: 0 })) + 1n;
    const before = { ours: await balance(payTo.ours), peer: await balance(phase.peerPayTo) };
    const result = { ours: { ms: [], tx: [], failures: [] }, peer: { ms: [], tx: [], failures: [] } };
    if (collector) {
      await sleep(1000); // the warm-up's spans flushed
      collector.spans.length = 0;
    }
    const cpu0 = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuSeconds(pid)]));
    const routes0 = { facilitator: await routeTimes(url(cfg.ports.facilitator)), merchantAgent: await routeTimes(url(cfg.ports.merchant)) };
    const m0 = machineCpu();
    const started = performance.now();
    for (let round = 0; round < cfg.requests; round++) {
      const order = round % 2 === 0 ? ['ours', 'peer'] : ['peer', 'ours'];
      for (const name of order) {
        const t0 = performance.now();
        try {
          const tx = await sides[name].run();
          result[name].ms.push(performance.now() - t0);
          result[name].tx.push(tx);
        } catch (error) {
          result[name].failures.push(error instanceof Error ? error.message : String(error));
        }
      }
      if ((round + 1) % 25 === 0) say(`  ${round + 1}/${cfg.requests} rounds`);
    }
    const wallS = (performance.now() - started) / 1000;
    const m1 = machineCpu();
    const routes = {
      facilitator: routeDelta(routes0.facilitator, await routeTimes(url(cfg.ports.facilitator))),
      merchantAgent: routeDelta(routes0.merchantAgent, await routeTimes(url(cfg.ports.merchant))),
    };
    const cpu = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, +(cpuSeconds(pid) - cpu0[k]).toFixed(2)]));
    let trace;
    let statements;
    let timeline;
    if (collector) {
      await sleep(1500); // the last spans flushed
      const spans = collector.spans.splice(0);
      trace = traceBreakdown(spans, result.ours.ms.length || 1, cfg.ports);
      statements = statementBreakdown(spans, result.ours.ms.length || 1);
      timeline = medianTimeline(spans);
    }

    // --- on chain: each side's merchant got price once per paid request, by the transactions the answers named
    const toBlock = await publicClient.getBlockNumber({ cacheTime: 0 });
    const checks = {};
    for (const name of ['ours', 'peer']) {
      const side = result[name];
      const delta = (await balance(sides[name].payTo)) - before[name];
      const logs = await publicClient.getLogs({ address: usdc.address, event: transferEvent, args: { to: sides[name].payTo }, fromBlock, toBlock });
      const logTx = logs.map((l) => l.transactionHash.toLowerCase());
      const answered = side.tx.map((t) => t.toLowerCase());
      const expected = cfg.price * BigInt(side.ms.length);
      checks[name] = {
        paid: side.ms.length,
        failed: side.failures.length,
        balanceDelta: delta.toString(),
        expectedDelta: expected.toString(),
        balanceOk: delta === expected && side.ms.length === cfg.requests,
        transfers: logs.length,
        distinctAnsweredTx: new Set(answered).size,
        everyAnswerOnChain: answered.every((t) => logTx.includes(t)),
        everyTransferAnswered: logTx.every((t) => answered.includes(t)),
        onePerRequest: logs.length === side.ms.length && new Set(logTx).size === logs.length && logs.every((l) => l.args.value === cfg.price),
      };
    }
    report.phases[phase.name] = {
      label: phase.label,
      peer: phase.peerName,
      wallSeconds: +wallS.toFixed(2),
      ours: stats(result.ours.ms),
      peerStats: stats(result.peer.ms),
      latenciesMs: { ours: result.ours.ms.map((v) => +v.toFixed(2)), peer: result.peer.ms.map((v) => +v.toFixed(2)) },
      failures: { ours: result.ours.failures.slice(0, 20), peer: result.peer.failures.slice(0, 20) },
      checks,
      cpuSeconds: cpu,
      machineBusy: busyFraction(m0, m1),
      serverRouteMeanMs: routes,
      ...(trace && { traceOursPerRequest: trace, statementsOursPerRequest: statements, medianPaidCall: timeline }),
      loadavgAtEnd: os.loadavg(),
    };
  }
  report.machine.loadavgAtEnd = os.loadavg();
  printReport();
  const out = path.join(RESULTS_DIR, `paid-requests-${stamp}.json`);
  fs.writeFileSync(out, JSON.stringify(report, null, 2));
  say(`report: ${out}`);
}

function printReport() {
  console.log('');
  console.log(
    `paid requests, ${cfg.requests} per side, sequential (one caller), ${os.cpus().length} CPUs, load average ${report.machine.loadavgAtStart.map((v) => v.toFixed(2)).join(' ')} at start`,
  );
  console.log(
    `idle CPU ms per second (${IDLE_SECONDS} s, no requests): ${Object.entries(report.idleCpuMsPerSecond)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
  const goals = [];
  for (const [name, phase] of Object.entries(report.phases)) {
    const o = phase.ours;
    const p = phase.peerStats;
    console.log('');
    console.log(`${phase.label}: ours vs ${phase.peer}`);
    console.log('                      ours ms     peer ms   ours / peer');
    for (const k of ['p50', 'p90', 'p99', 'min', 'max'])
      console.log(`  ${k.padEnd(8)}  ${f1(o[k]).padStart(10)}  ${f1(p[k]).padStart(10)}  ${(o[k] / p[k]).toFixed(2).padStart(10)}×`);
    for (const side of ['ours', 'peer']) {
      const c = phase.checks[side];
      console.log(
        `  ${side}: paid ${c.paid}/${cfg.requests} (failed ${c.failed}), merchant +${c.balanceDelta} (expected ${c.expectedDelta}), ${c.transfers} transfers, one per request: ${c.onePerRequest ? 'yes' : 'NO'}`,
      );
    }
    console.log(
      `  CPU s over the phase: ${Object.entries(phase.cpuSeconds)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ')}; machine busy ${phase.machineBusy}`,
    );
    const routes = (r) =>
      Object.entries(r)
        .map(([k, v]) => `${k} ${v.count}× ${v.meanMs} ms`)
        .join(', ');
    console.log(`  our server-side mean per route: facilitator: ${routes(phase.serverRouteMeanMs.facilitator)}`);
    console.log(`                                  merchant agent: ${routes(phase.serverRouteMeanMs.merchantAgent)}`);
    if (phase.traceOursPerRequest) {
      console.log('  our spans per paid request (app | work: count, ms summed):');
      for (const [k, v] of Object.entries(phase.traceOursPerRequest)) console.log(`    ${k}: ${v.perRequest}, ${v.msPerRequest} ms`);
      console.log('  our PostgreSQL statements per paid request (app | statement: count, ms summed):');
      for (const [k, v] of Object.entries(phase.statementsOursPerRequest)) console.log(`    ${k}: ${v.perRequest}, ${v.msPerRequest} ms`);
      if (phase.medianPaidCall) {
        console.log(`  our median paid call to the agent (${phase.medianPaidCall.totalMs} ms), its spans (start ms, duration ms):`);
        for (const s of phase.medianPaidCall.spans) console.log(`    ${f2(s.atMs)} ${f2(s.ms)}  ${s.app.padEnd(14)} ${s.what}`);
      }
    }
    goals.push([o.p50 <= p.p50, `${name}: our median ≤ the peer's: ${f1(o.p50)} ms vs ${f1(p.p50)} ms (${(o.p50 / p.p50).toFixed(2)}×)`]);
    const exact = ['ours', 'peer'].every(
      (s) => phase.checks[s].balanceOk && phase.checks[s].onePerRequest && phase.checks[s].everyAnswerOnChain && phase.checks[s].everyTransferAnswered,
    );
    goals.push([exact, `${name}: every paid request settled exactly once on each side (balance delta = N × price, one Transfer per answered transaction)`]);
  }
  console.log('');
  console.log('Goals:');
  for (const [ok, text] of goals) console.log(`  ${ok ? 'PASS' : 'FAIL'}  ${text}`);
}

main()
  .catch((error) => {
    console.error(`[bench] failed: ${error instanceof Error ? error.stack : error}${error?.cause ? `\n  cause: ${error.cause.stack ?? error.cause}` : ''}`);
    process.exitCode = 1;
  })
  .finally(() => processes.cleanup().then(() => process.exit()));
