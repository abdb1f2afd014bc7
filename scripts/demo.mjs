#!/usr/bin/env node
// The whole system in one command:
//   npm start            (= node scripts/demo.mjs)        runs until Ctrl-C
//   node scripts/demo.mjs --exit                          stops after the buyer's purchase (used by the tests)
// Builds the apps if their sources changed, migrates the database, starts a local anvil chain with the test USDC,
// the local fake Stripe, the facilitator, the ledger and the merchant agent. Then buyers pay the merchant: its
// x402-protected endpoint through the official x402 client, and its MPP endpoint through the official mppx client
// (on chain with the evm method, and with a test card through Stripe); the demo prints what happened.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createPublicClient, erc20Abi, http } from 'viem';
import { startAnvil } from './lib/anvil.mjs';
import { appEntry, buildIfStale } from './lib/build.mjs';
import { REPO_ROOT } from './lib/contracts.mjs';
import { deployLocalChain, writeManifest } from './lib/deploy.mjs';
import { resetLocalState } from './lib/local-state.mjs';

const { values } = parseArgs({ options: { exit: { type: 'boolean', default: false } } });
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/machine_payments',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  // The demo has no merchant accounts: the facilitator takes /verify and /settle without an API key.
  FACILITATOR_OPEN_MODE: 'true',
};
const ports = {
  chain: Number(process.env.CHAIN_PORT ?? 8545),
  facilitator: Number(process.env.FACILITATOR_PORT ?? 4020),
  ledger: Number(process.env.LEDGER_PORT ?? 4030),
  merchant: Number(process.env.MERCHANT_PORT ?? 4040),
  stripe: Number(process.env.FAKE_STRIPE_PORT ?? 12111),
};
const STRIPE_WEBHOOK_SECRET = 'whsec_local_demo';
const logDir = path.join(REPO_ROOT, '.local', 'logs');
const children = [];
let anvil;

const say = (line) => console.log(`demo: ${line}`);

async function main() {
  fs.mkdirSync(logDir, { recursive: true });
  run('prisma client', ['scripts/prisma-generate.mjs', '--quiet']);
  buildIfStale({ env, log: say });
  run('database migrations', ['scripts/migrate.mjs', 'deploy', '--quiet']);
  // Every start is a fresh chain, so the demo database's earlier payments and queued jobs are cleared.
  await resetLocalState({ databaseUrl: env.DATABASE_URL });

  anvil = await startAnvil({ port: ports.chain });
  const manifest = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
  const manifestPath = writeManifest(path.join(REPO_ROOT, '.local', `chain-${ports.chain}.json`), manifest);
  say(`anvil on ${anvil.rpcUrl}, test USDC at ${manifest.tokens.usdc.address}`);

  const common = { ...env, CHAIN_MANIFEST: manifestPath };
  const facilitatorUrl = `http://127.0.0.1:${ports.facilitator}`;
  const stripeUrl = `http://127.0.0.1:${ports.stripe}`;
  await startApp(
    'fake-stripe',
    { ...common, FAKE_STRIPE_PORT: String(ports.stripe), FAKE_STRIPE_WEBHOOK_URL: `${facilitatorUrl}/stripe/webhooks`, FAKE_STRIPE_WEBHOOK_SECRET: STRIPE_WEBHOOK_SECRET },
    `${stripeUrl}/v1/events`,
    { authorization: 'Bearer sk_test_demo' },
  );
  const stripeEnv = { STRIPE_SECRET_KEY: 'sk_test_demo_facilitator', STRIPE_API_BASE: stripeUrl, STRIPE_WEBHOOK_SECRET };
  await startApp('facilitator', { ...common, ...stripeEnv, FACILITATOR_PORT: String(ports.facilitator) }, `${facilitatorUrl}/ready`);
  await startApp('ledger', { ...common, LEDGER_PORT: String(ports.ledger) }, `http://127.0.0.1:${ports.ledger}/ready`);
  await startApp(
    'merchant-agent',
    { ...common, MERCHANT_PORT: String(ports.merchant), FACILITATOR_URL: facilitatorUrl, MERCHANT_STRIPE_NETWORK_ID: 'profile_demo_merchant' },
    `http://127.0.0.1:${ports.merchant}/ready`,
  );

  const client = createPublicClient({ transport: http(manifest.rpcUrl) });
  const usdc = manifest.tokens.usdc.address;
  const buyer = manifest.accounts.payers[0].address;
  const merchant = manifest.accounts.merchant.address;
  const balances = async () => Promise.all([buyer, merchant].map((a) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [a] })));
  const before = await balances();

  const url = `http://127.0.0.1:${ports.merchant}/paid/forecast`;
  say(`buyer ${buyer} asks for ${url}`);
  const purchase = spawnSync(process.execPath, [appEntry('merchant-agent', 'buyer/main.js'), url], { cwd: REPO_ROOT, env: common, encoding: 'utf8' });
  process.stdout.write(purchase.stdout);
  process.stderr.write(purchase.stderr);
  if (purchase.status !== 0) throw new Error('the buyer could not complete the purchase');

  const { transaction } = JSON.parse(purchase.stdout.slice(purchase.stdout.indexOf('{')));
  const receipt = await client.getTransactionReceipt({ hash: transaction });
  const after = await balances();
  say(`transaction ${transaction}: ${receipt.status} in block ${receipt.blockNumber}, gas ${receipt.gasUsed}`);
  say(`buyer    USDC ${formatUsdc(before[0])} → ${formatUsdc(after[0])}`);
  say(`merchant USDC ${formatUsdc(before[1])} → ${formatUsdc(after[1])}`);

  const mppUrl = `http://127.0.0.1:${ports.merchant}/mpp/forecast`;
  for (const method of ['evm', 'stripe']) {
    say(`MPP: a buyer pays ${mppUrl} with method ${method}`);
    const mpp = spawnSync(process.execPath, [appEntry('merchant-agent', 'mpp/mpp-buyer.main.js'), method, mppUrl], {
      cwd: REPO_ROOT,
      env: { ...common, BUYER_PRIVATE_KEY: manifest.accounts.payers[1].privateKey, BUYER_STRIPE_API_BASE: stripeUrl },
      encoding: 'utf8',
    });
    process.stderr.write(mpp.stderr);
    if (mpp.status !== 0) throw new Error(`the MPP ${method} purchase failed: ${mpp.stdout.trim().split('\n').at(-1)}`);
    const { receipt } = JSON.parse(mpp.stdout.slice(mpp.stdout.indexOf('{')));
    say(`MPP ${method}: paid, Payment-Receipt reference ${receipt.reference} (challenge ${receipt.challengeId})`);
  }

  if (values.exit) return shutdown(0);
  say(`running: facilitator ${facilitatorUrl}, ledger :${ports.ledger}, merchant :${ports.merchant}, chain ${anvil.rpcUrl}, fake Stripe ${stripeUrl}; logs in ${path.relative(process.cwd(), logDir)}; Ctrl-C stops`);
}

function run(title, args) {
  const result = spawnSync(process.execPath, args, { cwd: REPO_ROOT, env, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`${title} failed`);
}

async function startApp(name, appEnv, readyUrl, headers = {}) {
  const log = fs.openSync(path.join(logDir, `${name}.log`), 'w');
  const child = spawn(process.execPath, [appEntry(name)], { cwd: REPO_ROOT, env: appEnv, stdio: ['ignore', log, log] });
  children.push(child);
  let exited;
  child.on('exit', (code) => (exited = code));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`${name} exited with code ${exited}; see .local/logs/${name}.log`);
    const ok = await fetch(readyUrl, { headers }).then((r) => r.ok, () => false);
    if (ok) return say(`${name} ready on ${new URL(readyUrl).origin}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${name} did not become ready within 30 s; see .local/logs/${name}.log`);
}

function formatUsdc(atomic) {
  const digits = atomic.toString().padStart(7, '0');
  return `${digits.slice(0, -6)}.${digits.slice(-6)}`;
}

async function shutdown(code) {
  for (const child of children) child.kill('SIGTERM');
  await anvil?.stop().catch(() => undefined);
  process.exit(code);
}

process.on('SIGINT', () => shutdown(0));
process.on('SIGTERM', () => shutdown(0));
main().catch((error) => {
  console.error(`demo: ${error.message}`);
  return shutdown(1);
});
