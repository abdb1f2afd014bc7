#!/usr/bin/env node
// Usage-events benchmark: events per second through POST /usage/events of the built ledger app, (a) in batches of
// 100 per request, (b) one event per request, from many concurrent clients, with dedupe on (every event is claimed by
// the (merchant, source, id) primary key, and every 50th request is a retry of an earlier one, which must come back as
// duplicates); p50/p99 per request, and the ratio to issue 14's goals (20,000/s batched, 2,000/s single). Afterwards,
// PostgreSQL is checked: exactly the events answered `accepted` are stored, once each.
//
//   node bench/usage.mjs [--batched 300000] [--batch-concurrency 8] [--single 30000] [--concurrency 64]
//                        [--write-concurrency 4] [--only batched|single] [--cpu-prof] [--no-build]
//
// --cpu-prof writes the ledger's CPU profile (node --cpu-prof) to bench/results/ when it stops.
//
// It runs its own anvil (9711, the facilitator needs a chain), facilitator (9712, which resolves the API key) and
// ledger (9713), on a fresh database mp_usage_bench; all are stopped on exit, Ctrl-C or error. Exit code 0 whether
// or not the goals are met (printed as PASS/FAIL); non-zero when the harness fails or a check does not hold.
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import pg from 'pg';

import { appEntry, buildIfStale } from '../scripts/lib/build.mjs';

import { cpuProbe, percentile, postAll, startLedgerStack } from './lib/ledger-stack.mjs';
import { busyFraction, childProcesses, machineCpu } from './lib/processes.mjs';
import { headerComment } from './lib/help.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS_DIR = path.join(ROOT, 'bench', 'results');
const GOALS = { batched: 20_000, single: 2_000 };
/** Every RETRY_EVERY-th request sends an earlier request's body again: a client retrying after a lost answer. */
const RETRY_EVERY = 50;

const { values: opt } = parseArgs({
  options: {
    batched: { type: 'string', default: '300000' },
    'batch-size': { type: 'string', default: '100' },
    'batch-concurrency': { type: 'string', default: '8' },
    single: { type: 'string', default: '30000' },
    concurrency: { type: 'string', default: '64' },
    'write-concurrency': { type: 'string', default: '4' },
    'anvil-port': { type: 'string', default: '9711' },
    'facilitator-port': { type: 'string', default: '9712' },
    'ledger-port': { type: 'string', default: '9713' },
    'database-url': { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/mp_usage_bench' },
    only: { type: 'string' },
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
  batched: int('batched'),
  batchSize: int('batch-size'),
  batchConcurrency: int('batch-concurrency'),
  single: int('single'),
  concurrency: int('concurrency'),
  writeConcurrency: int('write-concurrency'),
  anvilPort: int('anvil-port'),
  facilitatorPort: int('facilitator-port'),
  ledgerPort: int('ledger-port'),
  databaseUrl: opt['database-url'],
  only: opt.only,
  cpuProf: opt['cpu-prof'],
  build: !opt['no-build'],
};
if (cfg.only !== undefined && !['batched', 'single'].includes(cfg.only)) {
  console.error('--only must be batched or single');
  process.exit(2);
}
if (cfg.batchSize > 100) {
  console.error('--batch-size must be at most 100 (the API refuses larger batches)');
  process.exit(2);
}
if (!['127.0.0.1', 'localhost'].includes(new URL(cfg.databaseUrl).hostname) || !/bench/.test(new URL(cfg.databaseUrl).pathname)) {
  console.error('--database-url must be a database on 127.0.0.1 whose name contains "bench" (it is dropped and made again)');
  process.exit(2);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
fs.mkdirSync(RESULTS_DIR, { recursive: true });
const logFile = (name) => path.join(RESULTS_DIR, `usage-${stamp}.${name}.log`);
const say = (msg) => console.log(`[bench] ${msg}`);

const processes = childProcesses({ cwd: ROOT });

// ---------------------------------------------------------------------------------------------------------
// load: `concurrency` loops over prepared bodies, keep-alive, latency from request to last byte

const load = (bodies, concurrency, apiKey) =>
  postAll({
    port: cfg.ledgerPort,
    path: '/usage/events',
    apiKey,
    bodies,
    concurrency,
    contentType: (body) => (body.startsWith('[') ? 'application/cloudevents-batch+json' : 'application/cloudevents+json'),
  });

// ---------------------------------------------------------------------------------------------------------
// events: realistic CloudEvents (an LLM gateway's), ids unique per run; retries repeat an earlier body

let sequence = 0;
const subjects = Array.from({ length: 500 }, (_, i) => `customer-${i}`);
const models = ['small', 'medium', 'large'];
function cloudEvent(now) {
  const n = sequence++;
  return {
    specversion: '1.0',
    id: randomUUID(),
    source: `gateway/${n % 4}`,
    type: 'llm.completion',
    subject: subjects[n % subjects.length],
    time: new Date(now - (n % 3_600_000)).toISOString(),
    data: { tokens: 1 + ((n * 7919) % 4000), model: models[n % models.length] },
  };
}

/** `requests` bodies of `perRequest` events; every RETRY_EVERY-th is an earlier body again. */
function bodies(requests, perRequest) {
  const now = Date.now();
  const out = [];
  let retriedEvents = 0;
  for (let i = 0; i < requests; i++) {
    if (i > 0 && i % RETRY_EVERY === 0) {
      out.push(out[i - RETRY_EVERY / 2]);
      retriedEvents += perRequest;
    } else if (perRequest === 1) out.push(JSON.stringify(cloudEvent(now)));
    else out.push(JSON.stringify(Array.from({ length: perRequest }, () => cloudEvent(now))));
  }
  return { bodies: out, retriedEvents };
}

// ---------------------------------------------------------------------------------------------------------
// the run

const report = {
  config: cfg,
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavg: os.loadavg() },
  phases: [],
  checks: {},
};

async function main() {
  if (cfg.build) {
    say('building the apps if stale (nest build)…');
    buildIfStale({ log: say });
  }
  for (const app of ['facilitator', 'ledger']) if (!fs.existsSync(appEntry(app))) throw new Error(`${appEntry(app)} is missing: run npm run build`);

  const { apiKey, ledger } = await startLedgerStack({
    name: 'usage',
    processes,
    logFile,
    say,
    databaseUrl: cfg.databaseUrl,
    anvilPort: cfg.anvilPort,
    facilitatorPort: cfg.facilitatorPort,
    ledgerPort: cfg.ledgerPort,
    ledgerEnv: { USAGE_WRITE_CONCURRENCY: String(cfg.writeConcurrency), LEDGER_INGEST: 'false', RENEWAL_SCAN_EVERY_MS: '0', RECON_SCHEDULE: 'off' },
    ledgerNodeArgs: cfg.cpuProf ? ['--cpu-prof', `--cpu-prof-dir=${RESULTS_DIR}`, `--cpu-prof-name=usage-${stamp}.ledger.cpuprofile`] : [],
  });

  const db = new pg.Client({ connectionString: cfg.databaseUrl });
  await db.connect();
  const cpuNow = cpuProbe(ledger.pid);

  let acceptedTotal = 0;
  let duplicatesTotal = 0;
  let retriedTotal = 0;
  const phase = async (name, events, perRequest, concurrency) => {
    const { bodies: prepared, retriedEvents } = bodies(Math.max(1, Math.round(events / perRequest)), perRequest);
    const [cpu0, m0] = [await cpuNow(), machineCpu()];
    const run = await load(prepared, concurrency, apiKey);
    const [cpu1, m1] = [await cpuNow(), machineCpu()];
    const cpu = Object.fromEntries(Object.keys(cpu0).map((k) => [k, cpu0[k] === null || cpu1[k] === null ? null : +(cpu1[k] - cpu0[k]).toFixed(2)]));
    let accepted = 0;
    let duplicates = 0;
    let failed = 0;
    for (const a of run.answers) {
      if (a.status !== 200) failed++;
      else {
        const body = JSON.parse(a.text);
        accepted += body.accepted;
        duplicates += body.duplicates;
      }
    }
    const sent = perRequest * run.answers.length;
    const sorted = Float64Array.from(run.latencies).sort();
    const result = {
      name,
      perRequest,
      concurrency,
      requests: run.answers.length,
      events: sent,
      accepted,
      duplicates,
      expectedDuplicates: retriedEvents,
      failedRequests: failed,
      wallSeconds: +(run.wallMs / 1000).toFixed(3),
      eventsPerSecond: +(sent / (run.wallMs / 1000)).toFixed(1),
      requestsPerSecond: +(run.answers.length / (run.wallMs / 1000)).toFixed(1),
      p50Ms: +percentile(sorted, 50).toFixed(2),
      p99Ms: +percentile(sorted, 99).toFixed(2),
      maxMs: +sorted[sorted.length - 1].toFixed(2),
      cpuSeconds: cpu,
      ledgerCpuUsPerEvent: cpu.ledger === null ? null : +((cpu.ledger * 1e6) / sent).toFixed(1),
      postgresCpuUsPerEvent: cpu.postgres === null ? null : +((cpu.postgres * 1e6) / sent).toFixed(1),
      machineBusy: busyFraction(m0, m1),
    };
    report.phases.push(result);
    acceptedTotal += accepted;
    duplicatesTotal += duplicates;
    retriedTotal += retriedEvents;
    say(
      `${name}: ${result.eventsPerSecond} events/s, p50 ${result.p50Ms} ms, p99 ${result.p99Ms} ms per request (${result.requests} requests × ${perRequest}, c=${concurrency})`,
    );
    return result;
  };

  say('warm-up');
  await phase('warm-up', 20 * cfg.batchSize, cfg.batchSize, cfg.batchConcurrency);
  await phase('warm-up single', 500, 1, cfg.concurrency);
  report.phases.splice(0);
  const batched = cfg.only === 'single' ? undefined : await phase(`batches of ${cfg.batchSize}`, cfg.batched, cfg.batchSize, cfg.batchConcurrency);
  const single = cfg.only === 'batched' ? undefined : await phase('one per request', cfg.single, 1, cfg.concurrency);

  // PostgreSQL: the events answered accepted are stored, once each; every retried event came back a duplicate
  const [{ n }] = (await db.query(`SELECT count(*)::int AS n FROM ledger.usage_events`)).rows;
  report.checks.storedEqualsAccepted = n === acceptedTotal;
  report.checks.retriesAnsweredDuplicate = duplicatesTotal === retriedTotal;
  report.checks.everyRequestAnswered200 = report.phases.every((p) => p.failedRequests === 0);
  await db.end();

  const goals = [
    ...(batched ? [[`batches of ${cfg.batchSize} ≥ ${GOALS.batched.toLocaleString('en')} events/s`, batched.eventsPerSecond, GOALS.batched]] : []),
    ...(single ? [[`one event per request ≥ ${GOALS.single.toLocaleString('en')} events/s`, single.eventsPerSecond, GOALS.single]] : []),
  ];
  const columns = [
    ['phase', 'name', 16],
    ['events/s', 'eventsPerSecond', 10],
    ['requests/s', 'requestsPerSecond', 11],
    ['p50 ms', 'p50Ms', 8],
    ['p99 ms', 'p99Ms', 8],
    ['max ms', 'maxMs', 8],
    ['ledger CPU µs/event', 'ledgerCpuUsPerEvent', 20],
    ['PostgreSQL CPU µs/event', 'postgresCpuUsPerEvent', 24],
    ['machine busy', 'machineBusy', 13],
    ['duplicates', 'duplicates', 11],
  ];
  console.log(`\n${columns.map(([title, , w], i) => (i ? title.padStart(w) : title.padEnd(w))).join(' ')}`);
  for (const p of report.phases) console.log(columns.map(([, key, w], i) => (i ? String(p[key]).padStart(w) : String(p[key]).padEnd(w))).join(' '));
  console.log(`(load average before the run: ${report.machine.loadavg.map((l) => l.toFixed(2)).join(' ')}; the load generator shares the machine)`);
  console.log('\nchecks:');
  for (const [name, ok] of Object.entries(report.checks)) console.log(`  ${ok ? 'ok  ' : 'FAIL'}  ${name}`);
  console.log('goals:');
  for (const [name, value, goal] of goals) console.log(`  ${value >= goal ? 'PASS' : 'FAIL'}  ${name}: ${value}/s (${(value / goal).toFixed(2)}× the goal)`);
  report.goals = goals.map(([name, value, goal]) => ({ name, value, goal, ratio: +(value / goal).toFixed(2) }));
  const file = path.join(RESULTS_DIR, `usage-${stamp}.json`);
  fs.writeFileSync(file, JSON.stringify(report, null, 2));
  say(`results in ${path.relative(process.cwd(), file)}`);
  return Object.values(report.checks).every(Boolean);
}

let ok = false;
try {
  ok = await main();
} catch (error) {
  console.error(`[bench] ${error instanceof Error ? error.message : String(error)}`);
}
await processes.cleanup();
process.exit(ok ? 0 : 1);
