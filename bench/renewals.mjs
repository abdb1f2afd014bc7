#!/usr/bin/env node
// Renewals due at once (issue 13, "Speed"). --rail evm (default): N EVM subscriptions whose period 1 opens in the same
// minute are each charged exactly once, through the ledger's renewal scan, the facilitator's subscription commands and
// its batch settlement (goal 60 s for 10,000). --rail stripe: N Stripe Billing subscriptions on one test clock of the
// fake Stripe renew when the clock moves, and reach the books through Stripe's webhooks or the ledger's charge commands,
// whichever comes first (goal 30 s for 1,000; the default N with stripe).
// Measured: from the moment the chain (and, through CLOCK_RPC_URL, both services; with stripe, the test clock too)
// steps past every period 1 start until the ledger records all N period-1 charges paid. Then the books' invariants.
//
//   node bench/renewals.mjs [--rail evm|stripe] [--subscriptions 10000|1000] [--amount 10000] [--batch 100]
//                           [--scan-batch 1000] [--scan-every-ms 500] [--worker-concurrency 32] [--ingest-concurrency 8]
//                           [--setup-concurrency 24] [--timeout-s 3000] [--anvil-port 8614] [--facilitator-port 4614]
//                           [--ledger-port 4615] [--stripe-port 12614] [--database-url …] [--queue-prefix …]
//                           [--webhook-events handled|all] [--webhook-concurrency 16] [--cpu-prof] [--no-build]
//
// It runs its own anvil, fresh database, facilitator and ledger (and fake Stripe) as processes; all are stopped on
// exit, Ctrl-C or error. Exit code 0 whether or not the goal is met (printed as PASS/FAIL); non-zero when the harness
// fails or an invariant does not hold. --cpu-prof writes the services' CPU profiles to bench/results/. With stripe,
// the facilitator's webhook endpoint receives the events it acts on (--webhook-events handled, as the runbook sets the
// endpoint up at Stripe) or every event (all), up to --webhook-concurrency at once (Stripe sends concurrently).
import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { Challenge, Credential } from 'mppx';
import pg from 'pg';
import Stripe from 'stripe';
import { createPublicClient, getAddress, http, parseAbiItem } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';

import { startAnvil } from '../scripts/lib/anvil.mjs';
import { appEntry, buildIfStale } from '../scripts/lib/build.mjs';
import { dropDatabase, migrateDeploy } from '../scripts/lib/database.mjs';
import { deployLocalChain, writeManifest } from '../scripts/lib/deploy.mjs';

import { busyFraction, childProcesses, cpuSeconds, cpuSecondsOf, machineCpu } from './lib/processes.mjs';
import { headerComment } from './lib/help.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const RESULTS_DIR = path.join(ROOT, 'bench', 'results');
const MANIFEST_PATH = path.join(ROOT, '.local', 'chain-bench-renewals.json');
const DAY = 86_400;
/** Stripe finalizes (and so collects) a renewal invoice an hour after it is made: the step goes past that too. */
const STRIPE_FINALIZE_SECONDS = 3_700;
const STRIPE_WEBHOOK_SECRET = `whsec_bench_${randomBytes(8).toString('hex')}`;
/** The events the facilitator's webhook acts on (docs/runbook.md, "MPP and Stripe"): what its endpoint is set up with. */
const FACILITATOR_STRIPE_EVENTS = [
  'payment_intent.succeeded',
  'payment_intent.payment_failed',
  'refund.created',
  'refund.updated',
  'refund.failed',
  'charge.refunded',
  'invoice.paid',
  'invoice.payment_failed',
  'customer.subscription.deleted',
];

const { values: opt } = parseArgs({
  options: {
    rail: { type: 'string', default: 'evm' },
    subscriptions: { type: 'string' },
    amount: { type: 'string', default: '10000' },
    batch: { type: 'string', default: '100' },
    'batch-window-ms': { type: 'string', default: '20' },
    'scan-batch': { type: 'string', default: '1000' },
    'scan-every-ms': { type: 'string', default: '500' },
    'worker-concurrency': { type: 'string', default: '32' },
    'ingest-concurrency': { type: 'string', default: '8' },
    'setup-concurrency': { type: 'string', default: '24' },
    'timeout-s': { type: 'string', default: '3000' },
    'anvil-port': { type: 'string', default: '8614' },
    'facilitator-port': { type: 'string', default: '4614' },
    'ledger-port': { type: 'string', default: '4615' },
    'stripe-port': { type: 'string', default: '12614' },
    'database-url': { type: 'string', default: 'postgresql://postgres@127.0.0.1:5432/machine_payments_bench_renewals' },
    'queue-prefix': { type: 'string', default: `bench-renewals-${process.pid}` },
    'webhook-events': { type: 'string', default: 'handled' },
    'webhook-concurrency': { type: 'string', default: '16' },
    'cpu-prof': { type: 'boolean', default: false },
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
if (!['evm', 'stripe'].includes(opt.rail)) {
  console.error(`--rail is evm or stripe (got ${opt.rail})`);
  process.exit(2);
}
// each rail's goal is set for its own N
opt.subscriptions ??= opt.rail === 'stripe' ? '1000' : '10000';
const cfg = {
  rail: opt.rail,
  subscriptions: int('subscriptions'),
  amount: BigInt(int('amount')),
  batch: int('batch'),
  batchWindowMs: int('batch-window-ms'),
  scanBatch: int('scan-batch'),
  scanEveryMs: int('scan-every-ms'),
  workerConcurrency: int('worker-concurrency'),
  ingestConcurrency: int('ingest-concurrency'),
  setupConcurrency: int('setup-concurrency'),
  timeoutSeconds: int('timeout-s'),
  anvilPort: int('anvil-port'),
  facilitatorPort: int('facilitator-port'),
  ledgerPort: int('ledger-port'),
  stripePort: int('stripe-port'),
  databaseUrl: opt['database-url'],
  queuePrefix: opt['queue-prefix'],
  webhookEvents: opt['webhook-events'],
  webhookConcurrency: int('webhook-concurrency'),
  cpuProf: opt['cpu-prof'],
  build: !opt['no-build'],
};
/** Issue 13's goals: 10,000 EVM renewals in 60 s, 1,000 Stripe renewals in 30 s. */
const GOAL_SECONDS = cfg.rail === 'stripe' ? 30 : 60;
/** The issue's goal is for this many renewals at once; a run with another N is judged by the goal's rate. */
const GOAL_RENEWALS = cfg.rail === 'stripe' ? 1_000 : 10_000;
if (!['handled', 'all'].includes(cfg.webhookEvents)) {
  console.error(`--webhook-events is handled or all (got ${cfg.webhookEvents})`);
  process.exit(2);
}
if (cfg.batch > 100 || cfg.scanBatch > 5000) {
  console.error('--batch is at most 100 (SETTLE_BATCH_MAX) and --scan-batch at most 5000 (RENEWAL_SCAN_BATCH)');
  process.exit(2);
}
if (!['127.0.0.1', 'localhost'].includes(new URL(cfg.databaseUrl).hostname) || !/bench/.test(new URL(cfg.databaseUrl).pathname)) {
  console.error('--database-url must be a database on 127.0.0.1 whose name contains "bench" (it is dropped and made again)');
  process.exit(2);
}

const stamp = new Date().toISOString().replace(/[:.]/g, '-');
fs.mkdirSync(RESULTS_DIR, { recursive: true });
const runName = cfg.rail === 'stripe' ? `renewals-stripe-${stamp}` : `renewals-${stamp}`;
const logFile = (name) => path.join(RESULTS_DIR, `${runName}.${name}.log`);
const say = (msg) => console.log(`[bench] ${msg}`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------------------
// processes: everything started here is stopped on exit, Ctrl-C and errors

const processes = childProcesses({ cwd: ROOT });
const cleanup = () => processes.cleanup();
function startServer(label, entry, env, port, readyPath, readyHeaders) {
  const profile = cfg.cpuProf ? ['--cpu-prof', '--cpu-prof-dir', RESULTS_DIR, '--cpu-prof-name', `${runName}.${label}.cpuprofile`] : [];
  return processes.start({ label, args: [...profile, entry], env, log: logFile(label), readyUrl: `http://127.0.0.1:${port}${readyPath}`, readyHeaders });
}

async function call(origin, method, urlPath, apiKey, body) {
  const response = await fetch(`${origin}${urlPath}`, {
    method,
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => undefined);
  if (!response.ok) throw new Error(`${method} ${urlPath}: ${response.status} ${JSON.stringify(json)}`);
  return json;
}

/** Runs `work(i)` for i in [0, n) with `concurrency` loops; reports progress every 10 %. */
async function pool(n, concurrency, work, label) {
  let next = 0;
  let done = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      for (let i = next++; i < n; i = next++) {
        await work(i);
        if (++done % Math.max(1, Math.round(n / 10)) === 0) say(`${label}: ${done}/${n}`);
      }
    }),
  );
}

// ---------------------------------------------------------------------------------------------------------
// the run

const report = {
  config: { ...cfg, amount: String(cfg.amount) },
  machine: { cpus: os.cpus().length, model: os.cpus()[0]?.model, node: process.version, loadavgBefore: os.loadavg() },
  setup: {},
  renewals: {},
  checks: {},
};

async function main() {
  if (cfg.build) buildIfStale({ log: say });
  for (const app of ['facilitator', 'ledger', ...(cfg.rail === 'stripe' ? ['fake-stripe'] : [])])
    if (!fs.existsSync(appEntry(app))) throw new Error(`${appEntry(app)} is missing: run npm run build`);
  // the client side of the MPP subscription intent, as the apps compiled it (the bench signs what a buyer would)
  const { signEvmSubscription } = createRequire(import.meta.url)(appEntry('facilitator', '../../../libs/mpp/src/index.js'));

  say(`fresh database ${new URL(cfg.databaseUrl).pathname.slice(1)}`);
  await dropDatabase(cfg.databaseUrl);
  await migrateDeploy({ databaseUrl: cfg.databaseUrl, quiet: true });

  const anvil = (processes.anvil = await startAnvil({ port: cfg.anvilPort }));
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  writeManifest(MANIFEST_PATH, manifest);
  const chain = createPublicClient({ transport: http(anvil.rpcUrl) });
  const rpc = (method, params = []) => chain.request({ method, params });
  const usdc = manifest.tokens.usdc;
  const recipient = getAddress(manifest.accounts.merchant.address);
  const asset = cfg.rail === 'stripe' ? 'stripe/usd' : `${manifest.network}/${usdc.address.toLowerCase()}`;

  const common = { DATABASE_URL: cfg.databaseUrl, LOG_LEVEL: 'warn', QUEUE_PREFIX: cfg.queuePrefix, CLOCK_RPC_URL: anvil.rpcUrl };
  const operatorToken = randomBytes(32).toString('hex');
  const facilitatorOrigin = `http://127.0.0.1:${cfg.facilitatorPort}`;
  const ledgerOrigin = `http://127.0.0.1:${cfg.ledgerPort}`;
  const stripeOrigin = `http://127.0.0.1:${cfg.stripePort}`;
  // the Stripe side as scripts/demo.mjs runs it: the fake Stripe delivers its events to the facilitator's webhook
  const stripeEnv = (key) => (cfg.rail === 'stripe' ? { STRIPE_SECRET_KEY: key, STRIPE_API_BASE: stripeOrigin } : {});
  const fakeStripe =
    cfg.rail === 'stripe'
      ? await startServer(
          'fake-stripe',
          appEntry('fake-stripe'),
          {
            FAKE_STRIPE_PORT: String(cfg.stripePort),
            FAKE_STRIPE_WEBHOOK_URL: `${facilitatorOrigin}/stripe/webhooks`,
            FAKE_STRIPE_WEBHOOK_SECRET: STRIPE_WEBHOOK_SECRET,
            FAKE_STRIPE_WEBHOOK_EVENTS: cfg.webhookEvents === 'all' ? '*' : FACILITATOR_STRIPE_EVENTS.join(','),
            FAKE_STRIPE_WEBHOOK_CONCURRENCY: String(cfg.webhookConcurrency),
          },
          cfg.stripePort,
          '/v1/events?limit=1',
          { authorization: 'Bearer sk_test_bench' },
        )
      : undefined;
  const facilitator = await startServer(
    'facilitator',
    appEntry('facilitator'),
    {
      ...common,
      ...stripeEnv('sk_test_bench_facilitator'),
      ...(cfg.rail === 'stripe' && { STRIPE_WEBHOOK_SECRET }),
      FACILITATOR_PORT: String(cfg.facilitatorPort),
      CHAIN_MANIFEST: MANIFEST_PATH,
      FACILITATOR_SIGNER_KEYS: manifest.accounts.facilitatorSigners.map((s) => s.privateKey).join(','),
      FACILITATOR_OPEN_MODE: 'false',
      OPERATOR_TOKEN: operatorToken,
      RATE_LIMIT_PER_MINUTE: '0', // one merchant sets up every subscription: not what is measured
      SUBSCRIPTION_SEALING_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      SUBSCRIPTION_WORKER_CONCURRENCY: String(cfg.workerConcurrency),
      SETTLE_BATCH_MAX: String(cfg.batch),
      SETTLE_BATCH_WINDOW_MS: String(cfg.batchWindowMs),
      OUTBOX_POLL_MS: '50',
    },
    cfg.facilitatorPort,
    '/ready',
  );
  const created = spawnSync(
    process.execPath,
    ['scripts/merchants.mjs', 'create', '--name', 'renewals bench', '--receiving-address', `${manifest.network}:${recipient}`, '--json'],
    { cwd: ROOT, env: { ...process.env, FACILITATOR_URL: facilitatorOrigin, OPERATOR_TOKEN: operatorToken }, encoding: 'utf8' },
  );
  if (created.status !== 0) throw new Error(`merchants.mjs create failed: ${created.stderr}`);
  const { apiKey, merchantId } = JSON.parse(created.stdout);
  const ledger = await startServer(
    'ledger',
    appEntry('ledger'),
    {
      ...common,
      ...stripeEnv('sk_test_bench_ledger'),
      LEDGER_PORT: String(cfg.ledgerPort),
      FACILITATOR_URL: facilitatorOrigin,
      RECON_SCHEDULE: 'off',
      RENEWAL_SCAN_EVERY_MS: String(cfg.scanEveryMs),
      RENEWAL_SCAN_BATCH: String(cfg.scanBatch),
      LEDGER_INGEST_CONCURRENCY: String(cfg.ingestConcurrency),
    },
    cfg.ledgerPort,
    '/ready',
  );
  const db = new pg.Client({ connectionString: cfg.databaseUrl });
  await db.connect();
  const count = async (sql, ...params) => Number((await db.query(sql, params)).rows[0].n);

  // ---- setup: a plan, and N subscriptions activated over MPP (period 0 settled at activation)
  const planId = randomUUID();
  await call(ledgerOrigin, 'POST', '/plans', apiKey, {
    id: planId,
    name: 'Daily renewals bench',
    product: 'bench',
    amount: String(cfg.amount),
    asset,
    periodUnit: 'day',
    periodCount: 1,
  });
  const payers = manifest.accounts.payers.map((p) => privateKeyToAccount(p.privateKey));
  /** The chain's time as the services see it: the wall clock plus the offset the latest block shows. */
  const chainNowSeconds = async () => {
    const block = await chain.getBlock({ blockTag: 'latest' });
    return Math.floor(Math.max(Date.now(), Number(block.timestamp) * 1000) / 1000);
  };
  const activationFailures = [];
  const subscribe = async (i) => {
    const payer = payers[i % payers.length];
    const now = await chainNowSeconds();
    // two daily periods: 0 (paid at activation) and 1 (the renewal measured here)
    const expires = new Date((now + 1.5 * DAY) * 1000).toISOString().replace('.000Z', 'Z');
    const terms = {
      realm: 'renewals.bench',
      opaque: { plan: planId },
      offers: [
        {
          method: 'evm',
          intent: 'subscription',
          request: {
            amount: String(cfg.amount),
            currency: usdc.address,
            periodUnit: 'day',
            periodCount: '1',
            recipient,
            subscriptionExpires: expires,
            methodDetails: { chainId: manifest.chainId },
          },
        },
      ],
    };
    const issued = await call(facilitatorOrigin, 'POST', '/mpp/challenges', apiKey, terms);
    const challenge = Challenge.deserialize(issued.wwwAuthenticate[0]);
    const payload = await signEvmSubscription(challenge, {
      from: payer.address,
      signTypedData: (typed) => payer.signTypedData(typed),
      anchorSeconds: BigInt(now - 2),
    });
    if (payload.authorizations.length !== 2) throw new Error(`expected 2 authorized periods, signed ${payload.authorizations.length}`);
    const credential = Credential.serialize(Credential.from({ challenge, payload, source: `did:pkh:eip155:${manifest.chainId}:${payer.address}` }));
    return settle(credential, terms, challenge.id);
  };
  // the Stripe profile, as scripts/demo.mjs's buyer: a Customer on the bench's test clock pays with a card
  const stripeApi =
    cfg.rail === 'stripe' ? new Stripe('sk_test_bench_buyer', { host: '127.0.0.1', port: cfg.stripePort, protocol: 'http', maxNetworkRetries: 0 }) : undefined;
  // One clock for every customer: the fake sets no limit per clock, and then every subscription shares one anchor and
  // one advance renews them all. It stands at the services' time (the chain's).
  const testClock = stripeApi && (await stripeApi.testHelpers.testClocks.create({ frozen_time: await chainNowSeconds(), name: 'renewals bench' }));
  const subscribeStripe = async () => {
    const customer = await stripeApi.customers.create({ test_clock: testClock.id });
    const terms = {
      realm: 'renewals.bench',
      opaque: { plan: planId },
      offers: [
        {
          method: 'stripe',
          intent: 'subscription',
          request: {
            amount: String(cfg.amount),
            currency: 'usd',
            periodUnit: 'day',
            periodCount: '1',
            methodDetails: { networkId: 'profile_bench_merchant', paymentMethodTypes: ['card'] },
          },
        },
      ],
    };
    const issued = await call(facilitatorOrigin, 'POST', '/mpp/challenges', apiKey, terms);
    const challenge = Challenge.deserialize(issued.wwwAuthenticate[0]);
    const credential = Credential.serialize(Credential.from({ challenge, payload: { paymentMethod: 'pm_card_visa', customer: customer.id } }));
    return settle(credential, terms, challenge.id);
  };
  /** POST /mpp/settle as a buyer does: the same credential again while the outcome is unknown (a 5xx, or a settlement still pending). */
  const settle = async (credential, terms, challengeId) => {
    for (let attempt = 1; ; attempt++) {
      const response = await fetch(`${facilitatorOrigin}/mpp/settle`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({ credential, terms }),
      });
      const body = await response.json().catch(() => undefined);
      if (response.ok && body?.receipt?.subscriptionId) return true;
      const unknown = response.status >= 500 || String(body?.type).endsWith('/internal-payment-error');
      if (!unknown || attempt === 30) {
        activationFailures.push({ status: response.status, type: body?.type, detail: body?.detail, challengeId });
        return false;
      }
      await sleep(1000);
    }
  };
  /** A subscription that could not be activated is replaced by a new one (its failure is reported). */
  const activate = async (i) => {
    while (!(await (cfg.rail === 'stripe' ? subscribeStripe() : subscribe(i))))
      if (activationFailures.length > Math.max(10, cfg.subscriptions / 100)) throw new Error('too many activations failed');
  };
  say(
    `activating ${cfg.subscriptions} ${cfg.rail} subscriptions (concurrency ${cfg.setupConcurrency}, ${cfg.rail === 'stripe' ? `test clock ${testClock.id}` : `${payers.length} payers`})`,
  );
  const setupStarted = performance.now();
  await pool(cfg.subscriptions, cfg.setupConcurrency, activate, 'activated');
  const activatedSeconds = (performance.now() - setupStarted) / 1000;
  say(`activated in ${activatedSeconds.toFixed(1)} s; waiting for the ledger to record every period 0 paid`);
  const periodZeroPaid = `SELECT count(*) AS n FROM ledger.subscriptions WHERE merchant_id = $1 AND last_paid_index = 0 AND state = 'active'`;
  for (const deadline = Date.now() + cfg.timeoutSeconds * 1000; ; await sleep(500)) {
    if ((await count(periodZeroPaid, merchantId)) === cfg.subscriptions) break;
    if (Date.now() > deadline) throw new Error('the ledger did not record every period 0 paid in time');
  }
  report.setup = {
    activatedSeconds: +activatedSeconds.toFixed(1),
    totalSeconds: +((performance.now() - setupStarted) / 1000).toFixed(1),
    activationFailures,
  };
  if (activationFailures.length) say(`${activationFailures.length} activation(s) failed and were replaced: ${JSON.stringify(activationFailures)}`);
  say(`setup done in ${report.setup.totalSeconds} s`);

  // ---- the measured part: one step of the chain past every period 1 start
  if (fakeStripe) {
    // The activations' webhooks (about 10 events each with --webhook-events all) drain before the step, so the
    // measured part carries only the renewals' own webhooks.
    const drainStarted = performance.now();
    const received = () => count(`SELECT count(*) AS n FROM facilitator.stripe_events`);
    for (let last = -1, quietSince = performance.now(); ; await sleep(500)) {
      const now = await received();
      if (now !== last) [last, quietSince] = [now, performance.now()];
      else if (performance.now() - quietSince >= 3000) break;
      if (performance.now() - drainStarted > cfg.timeoutSeconds * 1000) throw new Error("the activations' webhooks did not drain in time");
    }
    report.setup.webhooksReceived = await received();
    report.setup.webhookDrainSeconds = +((performance.now() - drainStarted) / 1000).toFixed(1);
    say(`the activations' ${report.setup.webhooksReceived} webhooks delivered (drained in ${report.setup.webhookDrainSeconds} s)`);
  }
  const anchors = (await db.query(`SELECT min(anchor) AS first, max(anchor) AS last FROM ledger.subscriptions WHERE merchant_id = $1`, [merchantId])).rows[0];
  const spreadSeconds = (anchors.last.getTime() - anchors.first.getTime()) / 1000;
  const recipientBefore = await chain.readContract({
    address: usdc.address,
    abi: [parseAbiItem('function balanceOf(address) view returns (uint256)')],
    functionName: 'balanceOf',
    args: [recipient],
  });
  const fromBlock = (await chain.getBlockNumber({ cacheTime: 0 })) + 1n;
  // with stripe, also past the hour Stripe Billing waits before it finalizes and collects a renewal invoice
  const pastPeriodStart = DAY + (cfg.rail === 'stripe' ? STRIPE_FINALIZE_SECONDS : 0);
  const step = Math.ceil((anchors.last.getTime() + pastPeriodStart * 1000 - (await chainNowSeconds()) * 1000) / 1000) + 2;
  const stepAt = new Date();
  const periodOnePaid = `SELECT count(*) AS n FROM ledger.subscription_charges WHERE merchant_id = $1 AND period_index = 1 AND state = 'paid'`;
  const cpuBefore = {
    facilitator: cpuSeconds(facilitator.pid),
    ledger: cpuSeconds(ledger.pid),
    stripe: fakeStripe && cpuSeconds(fakeStripe.pid),
    ...sharedCpu(),
  };
  const machineBefore = machineCpu();
  const loadBefore = os.loadavg();
  await rpc('evm_increaseTime', [step]);
  await rpc('evm_mine');
  const t0 = performance.now();
  // on the monotonic clock the services' CPU profiles are stamped with: --cpu-prof readers cut the measured part out
  const monotonicStart = process.hrtime.bigint();
  say(`chain stepped ${step} s (anchors spread over ${spreadSeconds.toFixed(0)} s): every period 1 is open; measuring`);
  if (testClock) {
    // measured too: the fake renews every subscription on the clock within this request, then delivers the webhooks
    const frozenTime = Number((await chain.getBlock({ blockTag: 'latest' })).timestamp);
    await stripeApi.testHelpers.testClocks.advance(testClock.id, { frozen_time: frozenTime }, { timeout: cfg.timeoutSeconds * 1000 });
    report.renewals.clockAdvanceSeconds = +((performance.now() - t0) / 1000).toFixed(2);
    say(`test clock advanced to the chain's time in ${report.renewals.clockAdvanceSeconds} s`);
  }
  /** The Stripe events the facilitator received (verified and stored) since the step. */
  const webhooksReceived = () => count(`SELECT count(*) AS n FROM facilitator.stripe_events WHERE received_at >= $1`, stepAt);
  const progress = [];
  let paid;
  for (const deadline = t0 + cfg.timeoutSeconds * 1000; ; await sleep(100)) {
    paid = await count(periodOnePaid, merchantId);
    const at = (performance.now() - t0) / 1000;
    if (progress.length === 0 || at - progress.at(-1).seconds >= 5 || paid === cfg.subscriptions) {
      progress.push({ seconds: +at.toFixed(1), paid });
      if (paid !== cfg.subscriptions) say(`  ${at.toFixed(1)} s: ${paid} paid`);
    }
    if (paid >= cfg.subscriptions) break;
    if (performance.now() > deadline) break;
  }
  const seconds = (performance.now() - t0) / 1000;
  const machineAfter = machineCpu();
  const stripeCpu = fakeStripe && cpuSeconds(fakeStripe.pid);
  report.renewals = {
    ...report.renewals,
    paid,
    seconds: +seconds.toFixed(2),
    monotonicMicroseconds: { start: String(monotonicStart / 1000n), end: String(process.hrtime.bigint() / 1000n) },
    renewalsPerSecond: +(paid / seconds).toFixed(1),
    goalSeconds: GOAL_SECONDS,
    ratioToGoal: +(seconds / ((GOAL_SECONDS * cfg.subscriptions) / GOAL_RENEWALS)).toFixed(2),
    cpuSeconds: {
      facilitator: +(cpuSeconds(facilitator.pid) - cpuBefore.facilitator).toFixed(1),
      ledger: +(cpuSeconds(ledger.pid) - cpuBefore.ledger).toFixed(1),
      ...(fakeStripe && { fakeStripe: +(stripeCpu - cpuBefore.stripe).toFixed(1) }),
      // every process of these names on the machine: alone on it, they are this run's
      ...Object.fromEntries(Object.entries(sharedCpu()).map(([name, s]) => [name, s === null ? null : +(s - cpuBefore[name]).toFixed(1)])),
    },
    ...(fakeStripe && { webhooksReceived: await webhooksReceived() }),
    machineBusy: busyFraction(machineBefore, machineAfter),
    loadavgBefore: loadBefore,
    loadavgAfter: os.loadavg(),
    progress,
  };
  say(`${paid} period-1 charges paid in ${seconds.toFixed(1)} s`);
  if (fakeStripe) {
    // the renewals' invoice.paid webhooks may arrive after a charge command's lookup booked the period: timed too
    const invoicesPaid = `SELECT count(*) AS n FROM facilitator.stripe_events WHERE received_at >= $1 AND type = 'invoice.paid'`;
    for (const deadline = t0 + cfg.timeoutSeconds * 1000; ; await sleep(100)) {
      if ((await count(invoicesPaid, stepAt)) >= cfg.subscriptions || performance.now() > deadline) break;
    }
    report.renewals.invoicePaidWebhooks = await count(invoicesPaid, stepAt);
    report.renewals.webhooksSeconds = +((performance.now() - t0) / 1000).toFixed(2);
    say(`${report.renewals.invoicePaidWebhooks} invoice.paid webhooks received ${report.renewals.webhooksSeconds} s after the step`);
  }

  // ---- the books, after the run: let in-flight work settle, then read the ledger, the facilitator and the chain
  await sleep(2000);
  const c = report.checks;
  const n = cfg.subscriptions;
  const ledgerCharges = (
    await db.query(
      `SELECT state, count(*)::int AS n, count(DISTINCT subscription_id)::int AS subscriptions FROM ledger.subscription_charges
        WHERE merchant_id = $1 AND period_index = 1 GROUP BY state`,
      [merchantId],
    )
  ).rows;
  report.ledgerPeriodOneCharges = ledgerCharges;
  const paidRow = ledgerCharges.find((r) => r.state === 'paid');
  c.everyPeriodOnePaidOnce = paidRow?.n === n && paidRow.subscriptions === n;
  c.noOtherPeriodOneCharge = ledgerCharges.every((r) => r.state === 'paid');
  c.noPeriodPaidTwice =
    (await count(
      `SELECT count(*) AS n FROM (SELECT 1 FROM ledger.subscription_charges WHERE merchant_id = $1 AND state = 'paid'
        GROUP BY subscription_id, period_index HAVING count(*) > 1) d`,
      merchantId,
    )) === 0;
  c.everySubscriptionAtPeriodOne =
    (await count(`SELECT count(*) AS n FROM ledger.subscriptions WHERE merchant_id = $1 AND last_paid_index = 1 AND in_flight_index IS NULL`, merchantId)) ===
    n;
  const republished = await count(
    `SELECT count(*) AS n FROM ledger.subscription_charges WHERE merchant_id = $1 AND period_index = 1 AND publish_count > 1`,
    merchantId,
  );
  report.republishedCommands = republished;

  // the facilitator: one command, one payment, confirmed, per subscription
  const commands = (await db.query(`SELECT outcome, count(*)::int AS n FROM facilitator.subscription_charges WHERE period_index = 1 GROUP BY outcome`)).rows;
  report.facilitatorCommands = commands;
  // a stripe renewal needs no command (Stripe Billing charges, its webhook books it), but one the scan sent must not be refused
  if (cfg.rail === 'evm') c.everyCommandCharged = commands.length === 1 && commands[0].outcome === 'charged' && commands[0].n === n;
  else c.noCommandRefused = commands.every((r) => r.outcome === 'charged');
  const payments = (
    await db.query(
      `SELECT state::text, count(*)::int AS n, count(DISTINCT subscription_id)::int AS subscriptions, count(DISTINCT tx_hash)::int AS txs
         FROM facilitator.payments WHERE subscription_period = 1 GROUP BY state`,
    )
  ).rows;
  report.facilitatorPayments = payments;
  c.everyPaymentConfirmedOnce = payments.length === 1 && payments[0].state === 'confirmed' && payments[0].n === n && payments[0].subscriptions === n;

  /** The chain: N distinct authorizations used and N transfers to the merchant since the step, in how many transactions. */
  async function chainChecks() {
    const toBlock = await chain.getBlockNumber({ cacheTime: 0 });
    const logsOf = async (event, args) => {
      const logs = [];
      for (let from = fromBlock; from <= toBlock; from += 500n) {
        const to = from + 499n < toBlock ? from + 499n : toBlock;
        logs.push(...(await chain.getLogs({ address: usdc.address, event: parseAbiItem(event), args, fromBlock: from, toBlock: to })));
      }
      return logs;
    };
    const used = await logsOf('event AuthorizationUsed(address indexed authorizer, bytes32 indexed nonce)');
    const transfers = await logsOf('event Transfer(address indexed from, address indexed to, uint256 value)', { to: recipient });
    const distinctAuthorizations = new Set(used.map((l) => `${l.args.authorizer}:${l.args.nonce}`)).size;
    const transactions = new Set(transfers.map((l) => l.transactionHash)).size;
    const recipientAfter = await chain.readContract({
      address: usdc.address,
      abi: [parseAbiItem('function balanceOf(address) view returns (uint256)')],
      functionName: 'balanceOf',
      args: [recipient],
    });
    report.chain = {
      authorizationsUsed: used.length,
      distinctAuthorizations,
      transfersToMerchant: transfers.length,
      transactions,
      batchingFactor: transactions ? +(transfers.length / transactions).toFixed(1) : null,
      merchantReceived: String(recipientAfter - recipientBefore),
    };
    c.chainDistinctAuthorizations = used.length === n && distinctAuthorizations === n;
    c.chainTransfers = transfers.length === n && transfers.every((l) => l.args.value === cfg.amount);
    c.chainMerchantReceivedExactly = recipientAfter - recipientBefore === cfg.amount * BigInt(n);
  }

  /**
   * Stripe: every paid invoice recorded once (counted, one per subscription and period, its own PaymentIntent), the
   * facilitator's period-1 payments each confirmed once, and the webhooks that carried them.
   */
  async function stripeChecks() {
    const invoices = (
      await db.query(
        `SELECT period_index AS period, outcome, count(*)::int AS n, count(DISTINCT subscription_id)::int AS subscriptions,
                count(DISTINCT payment_intent_id)::int AS "paymentIntents", count(event_id)::int AS "byWebhook", sum(amount)::text AS amount
           FROM facilitator.stripe_subscription_invoices GROUP BY period_index, outcome ORDER BY period_index, outcome`,
      )
    ).rows;
    report.stripeInvoices = invoices;
    const periodOne = invoices.find((r) => r.period === 1 && r.outcome === 'counted');
    // event_id names the webhook that recorded the invoice; null: a charge command's lookup at Stripe did
    report.stripePeriodOne = periodOne && { byWebhook: periodOne.byWebhook, byCommand: periodOne.n - periodOne.byWebhook };
    const counted = (period) => invoices.find((r) => r.period === period && r.outcome === 'counted');
    c.everyStripeInvoiceCountedOnce =
      invoices.length === 2 &&
      [0, 1].every((period) => {
        const row = counted(period);
        return row?.n === n && row.subscriptions === n && row.paymentIntents === n && row.amount === String(BigInt(n) * cfg.amount);
      });
    const types = (
      await db.query(`SELECT type, count(*)::int AS n FROM facilitator.stripe_events WHERE received_at >= $1 GROUP BY type ORDER BY type`, [stepAt])
    ).rows;
    report.webhooks = { receivedUntilLastPaid: report.renewals.webhooksReceived, receivedAfterTheStep: types };
  }

  if (cfg.rail === 'evm') await chainChecks();
  else await stripeChecks();

  // the ledger's books: debits = credits per asset; the merchant's revenue is exactly 2 periods × N × amount
  const sums = (
    await db.query(
      `SELECT asset, sum(debits_posted)::text AS dp, sum(credits_posted)::text AS cp, sum(debits_pending)::text AS dpe, sum(credits_pending)::text AS cpe
         FROM ledger.accounts WHERE merchant_id = $1 GROUP BY asset`,
      [merchantId],
    )
  ).rows;
  c.ledgerDebitsEqualCredits = sums.length > 0 && sums.every((s) => s.dp === s.cp && s.dpe === s.cpe);
  const revenue = (await call(ledgerOrigin, 'GET', `/accounts?asset=${encodeURIComponent(asset)}&code=200`, apiKey)).data.map((a) => a.balances);
  report.ledgerRevenue = revenue;
  // Stripe's fee on each card payment is booked out of revenue (debit revenue, credit processor fees, code 320)
  const posted = async (code) =>
    (
      await db.query(
        `SELECT debits_posted::text AS debits, credits_posted::text AS credits FROM ledger.accounts WHERE merchant_id = $1 AND asset = $2 AND code = $3`,
        [merchantId, asset, code],
      )
    ).rows;
  const [revenueRow] = await posted(200);
  const feeRows = await posted(320);
  const fees = feeRows.reduce((sum, r) => sum + BigInt(r.credits) - BigInt(r.debits), 0n);
  report.ledgerFees = String(fees);
  // `pending` is posted plus what is pending either way: equal to posted when nothing is left pending
  const grossRevenue = 2n * BigInt(n) * cfg.amount;
  const expectedRevenue = String(grossRevenue - fees);
  c.ledgerRevenueExact =
    revenue.length === 1 &&
    revenue[0].posted === expectedRevenue &&
    revenue[0].pending === expectedRevenue &&
    revenueRow?.credits === String(grossRevenue) &&
    revenueRow.debits === String(fees);
  if (cfg.rail === 'stripe') c.stripeFeesBooked = fees > 0n && feeRows.length === 1;
  await db.end();

  const failed = await failedJobs();
  report.failedJobs = failed;
  c.noFailedJobs = Object.values(failed).every((v) => v === 0);

  print();
  const file = path.join(RESULTS_DIR, `${runName}.json`);
  fs.writeFileSync(
    file,
    JSON.stringify(report, (_k, v) => (typeof v === 'bigint' ? String(v) : v), 2),
  );
  say(`results in ${path.relative(process.cwd(), file)}`);
  return Object.values(c).every(Boolean);
}

/** CPU seconds so far of the shared services the run leans on (machine-wide: other users of them count too). */
function sharedCpu() {
  return { postgres: cpuSecondsOf(['postgres']), redis: cpuSecondsOf(['redis-server']), anvil: cpuSecondsOf(['anvil']) };
}

/** Every process's CPU over the renewals paid: what 2 cores can sustain is 2,000 ÷ this per second. */
function cpuPerRenewal(r) {
  const total = Object.values(r.cpuSeconds).reduce((sum, s) => sum + (s ?? 0), 0);
  return r.paid
    ? `${((total * 1000) / r.paid).toFixed(1)} (so at most ${Math.floor((os.cpus().length * r.paid) / total)}/s on ${os.cpus().length} cores)`
    : 'n/a';
}

/** Failed jobs of this run's queues, read from Redis (BullMQ keeps them in `<prefix>:<queue>:failed`). */
async function failedJobs() {
  const { Redis } = await import('ioredis');
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', { lazyConnect: true });
  await redis.connect();
  try {
    const keys = await redis.keys(`${cfg.queuePrefix}:*:failed`);
    const out = {};
    for (const key of keys) out[key.slice(cfg.queuePrefix.length + 1, -':failed'.length)] = await redis.zcard(key);
    return out;
  } finally {
    redis.disconnect();
  }
}

function print() {
  const r = report.renewals;
  const ch = report.chain;
  const rows = [
    [`${cfg.rail} subscriptions renewing at once`, cfg.subscriptions],
    ['period-1 charges paid (ledger)', r.paid],
    ['seconds from the step to the last one paid', r.seconds],
    ['renewals/s', r.renewalsPerSecond],
    [`goal ${GOAL_RENEWALS} in ${GOAL_SECONDS} s: measured time / goal's at this N`, `${r.ratioToGoal}×`],
    ...(cfg.rail === 'evm'
      ? [
          ['on-chain transactions (period 1)', ch.transactions],
          ['transfers per transaction (batching factor)', ch.batchingFactor],
          ['CPU s facilitator / ledger during the run', `${r.cpuSeconds.facilitator} / ${r.cpuSeconds.ledger}`],
          ['CPU s PostgreSQL / Redis / anvil (machine-wide)', `${r.cpuSeconds.postgres} / ${r.cpuSeconds.redis} / ${r.cpuSeconds.anvil}`],
          ['CPU ms per renewal, all of them', cpuPerRenewal(r)],
        ]
      : [
          ['webhook events; deliveries in flight at once', `${cfg.webhookEvents}; ${cfg.webhookConcurrency}`],
          ['test clock advance (renews them all) s', r.clockAdvanceSeconds],
          ['webhooks received until the last one paid', r.webhooksReceived],
          ['s until every invoice.paid webhook received', `${r.webhooksSeconds} (${r.invoicePaidWebhooks} received)`],
          ['period-1 invoices booked by webhook / by command', `${report.stripePeriodOne?.byWebhook} / ${report.stripePeriodOne?.byCommand}`],
          ['webhooks received after the step, by type', report.webhooks.receivedAfterTheStep.map((t) => `${t.type} ${t.n}`).join(', ')],
          ['Stripe fees booked (ledger, cents)', report.ledgerFees],
          ['CPU s facilitator / ledger / fake Stripe', `${r.cpuSeconds.facilitator} / ${r.cpuSeconds.ledger} / ${r.cpuSeconds.fakeStripe}`],
          ['CPU s PostgreSQL / Redis / anvil (machine-wide)', `${r.cpuSeconds.postgres} / ${r.cpuSeconds.redis} / ${r.cpuSeconds.anvil}`],
          ['CPU ms per renewal, all of them', cpuPerRenewal(r)],
        ]),
    ['machine busy during the run', r.machineBusy],
    ['load average before / after', `${r.loadavgBefore.map((l) => l.toFixed(2)).join(' ')} / ${r.loadavgAfter.map((l) => l.toFixed(2)).join(' ')}`],
    ['setup (activations; until period 0 booked) s', `${report.setup.activatedSeconds}; ${report.setup.totalSeconds}`],
    ...(cfg.rail === 'stripe'
      ? [["activations' webhooks (drained before the step in s)", `${report.setup.webhooksReceived} (${report.setup.webhookDrainSeconds})`]]
      : []),
    ['activations that failed (replaced)', report.setup.activationFailures.length],
    ['charge commands published again', report.republishedCommands],
  ];
  console.log('');
  for (const [name, value] of rows) console.log(`${name.padEnd(48)} ${value}`);
  console.log('\nprogress (s: paid): ' + r.progress.map((p) => `${p.seconds}: ${p.paid}`).join(', '));
  console.log('\nbooks after the run:');
  for (const [name, ok] of Object.entries(report.checks)) console.log(`  ${ok ? 'ok  ' : 'FAIL'}  ${name}`);
  console.log('goal:');
  const allowed = +((GOAL_SECONDS * cfg.subscriptions) / GOAL_RENEWALS).toFixed(2);
  const pass = r.paid === cfg.subscriptions && r.seconds <= allowed;
  const scaled = cfg.subscriptions === GOAL_RENEWALS ? '' : ` (the goal's ${GOAL_RENEWALS} in ${GOAL_SECONDS} s, at its rate)`;
  console.log(`  ${pass ? 'PASS' : 'FAIL'}  ${cfg.subscriptions} renewals charged once each in ≤ ${allowed} s${scaled}: ${r.paid} in ${r.seconds} s`);
}

let ok = false;
try {
  ok = await main();
} catch (error) {
  console.error(`[bench] ${error instanceof Error ? error.stack : String(error)}`);
}
await cleanup();
process.exit(ok ? 0 : 1);
