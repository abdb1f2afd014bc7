#!/usr/bin/env node
// The whole system in one command:
//   npm start            (= node scripts/demo.mjs)        runs until Ctrl-C
//   node scripts/demo.mjs --exit                          stops after the buyer's purchase (used by the tests)
// Builds the apps if their sources changed, migrates the database, starts a local anvil chain with the test USDC,
// creates a merchant account (its API key goes to the merchant agent), starts the local fake Stripe, the
// facilitator, the ledger and the merchant agent. Then buyers pay the merchant: its x402-protected endpoint through
// the official x402 client, its MPP endpoint through the official mppx client (on chain with the evm method, and
// with a test card through Stripe), and a skill of its A2A agent through the A2A SDK's client. The ledger books every
// payment, and a reconciliation run compares the books with the chain and Stripe. Each step is named as it starts;
// a failure names the step and exits 1.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import { createRequire } from 'node:module';
import { Challenge as MppChallenge, Credential as MppCredential, Receipt as MppReceipt } from 'mppx';
import Stripe from 'stripe';
import { createPublicClient, erc20Abi, http } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { x402Client } from '@x402/core/client';
import { toClientEvmSigner } from '@x402/evm';
import { BatchSettlementEvmScheme as BatchClientScheme } from '@x402/evm/batch-settlement/client';
import { decodePaymentResponseHeader, wrapFetchWithPayment } from '@x402/fetch';
import { startAnvil } from './lib/anvil.mjs';
import { appEntry, buildIfStale } from './lib/build.mjs';
import { REPO_ROOT } from './lib/contracts.mjs';
import { deployLocalChain, deriveAccounts, writeManifest } from './lib/deploy.mjs';
import { resetLocalState } from './lib/local-state.mjs';
import { advanceChain, DAY, demoPlans, describeSubscription, merchantApi, until } from './lib/demo-subscriptions.mjs';

const { values } = parseArgs({ options: { exit: { type: 'boolean', default: false } } });
const env = {
  ...process.env,
  DATABASE_URL: process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/machine_payments',
  LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  // everything runs on 127.0.0.1, so a merchant's webhook receiver is a loopback address: allow it
  WEBHOOK_ALLOW_PRIVATE: process.env.WEBHOOK_ALLOW_PRIVATE ?? 'true',
  // the operator API, which the merchants CLI uses to create the demo merchant; fresh on every run
  OPERATOR_TOKEN: process.env.OPERATOR_TOKEN || randomBytes(32).toString('hex'),
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
let current = 'start';

const say = (line) => console.log(`demo: ${line}`);

/** One named step: its name is what a failure reports. */
async function step(name, fn) {
  current = name;
  say(`▶ ${name}`);
  return fn();
}

async function main() {
  fs.mkdirSync(logDir, { recursive: true });
  await step('prepare the database', async () => {
    run('prisma client', ['scripts/prisma-generate.mjs', '--quiet']);
    buildIfStale({ env, log: say });
    run('database migrations', ['scripts/migrate.mjs', 'deploy', '--quiet']);
    // Every start is a fresh chain, so the demo database's earlier payments, books and queued jobs are cleared.
    await resetLocalState({ databaseUrl: env.DATABASE_URL });
  });

  const manifest = await step('start the local chain', async () => {
    anvil = await startAnvil({ port: ports.chain });
    const deployed = await deployLocalChain({ rpcUrl: anvil.rpcUrl });
    say(`anvil on ${anvil.rpcUrl}, test USDC at ${deployed.tokens.usdc.address}`);
    return deployed;
  });
  const manifestPath = writeManifest(path.join(REPO_ROOT, '.local', `chain-${ports.chain}.json`), manifest);
  // the books and the chain are compared from here on
  const periodFrom = new Date();

  // CLOCK_RPC_URL: the facilitator and the ledger keep the chain's time, so the subscriptions below renew when the demo
  // moves the chain a day on
  const common = { ...env, CHAIN_MANIFEST: manifestPath, CLOCK_RPC_URL: anvil.rpcUrl };
  const facilitatorUrl = `http://127.0.0.1:${ports.facilitator}`;
  const ledgerUrl = `http://127.0.0.1:${ports.ledger}`;
  const merchantUrl = `http://127.0.0.1:${ports.merchant}`;
  const stripeUrl = `http://127.0.0.1:${ports.stripe}`;
  const facilitatorEnv = {
    ...common,
    STRIPE_SECRET_KEY: 'sk_test_demo_facilitator',
    STRIPE_API_BASE: stripeUrl,
    STRIPE_WEBHOOK_SECRET,
    FACILITATOR_PORT: String(ports.facilitator),
    // subscriptions on: the key that seals the buyers' pre-signed authorizations at rest (fresh on every run)
    SUBSCRIPTION_SEALING_KEYS: `demo:${randomBytes(32).toString('base64')}`,
    // x402 batch-settlement on: anvil funds 20 accounts, the manifest names 16; the next two send its transactions and
    // sign the merchants' claims (the facilitator as receiverAuthorizer)
    BATCH_SETTLEMENT_SENDER_KEY: deriveAccounts(18)[16].privateKey,
    BATCH_SETTLEMENT_AUTHORIZER_KEY: deriveAccounts(18)[17].privateKey,
  };
  await step('start the fake Stripe and the facilitator', async () => {
    await startApp(
      'fake-stripe',
      {
        ...common,
        FAKE_STRIPE_PORT: String(ports.stripe),
        FAKE_STRIPE_WEBHOOK_URL: `${facilitatorUrl}/stripe/webhooks`,
        FAKE_STRIPE_WEBHOOK_SECRET: STRIPE_WEBHOOK_SECRET,
      },
      `${stripeUrl}/v1/events`,
      { authorization: 'Bearer sk_test_demo' },
    );
    await startApp('facilitator', facilitatorEnv, `${facilitatorUrl}/ready`);
  });

  const merchantAccount = await step('create the merchant account', async () => {
    // Its receiving address: the facilitator settles this merchant's payments to no other. Made through the
    // facilitator's operator API, as an operator would.
    const receiving = `${manifest.network}:${manifest.accounts.merchant.address}`;
    const created = runJson('merchants CLI', ['scripts/merchants.mjs', 'create', '--name', 'Demo forecasts', '--receiving-address', receiving, '--json'], {
      FACILITATOR_URL: facilitatorUrl,
    });
    say(`merchant ${created.merchantId} with API key ${created.apiKey.slice(0, 12)}…, paid at ${receiving}`);
    // Refunds on chain are sent from a wallet the merchant configures; the facilitator reads it at boot, so the operator
    // restarts it. The demo merchant refunds from its receiving account.
    facilitatorEnv.REFUND_WALLET_KEYS = JSON.stringify({ [created.merchantId]: manifest.accounts.merchant.privateKey });
    await restartApp('facilitator', facilitatorEnv, `${facilitatorUrl}/ready`);
    say("facilitator restarted with the merchant's refund wallet (REFUND_WALLET_KEYS)");
    return created;
  });
  const plans = demoPlans(manifest);

  // GET /paid/metered-forecast with x402 batch-settlement: a deposit covers 50 calls; the demo claims and settles itself
  // (batch-settle.main.js), so no timer runs; the vouchers are kept per run (a fresh chain)
  const batchEnv = {
    MERCHANT_BATCH_PRICE: '1000',
    MERCHANT_BATCH_MIN_DEPOSIT: '50000',
    MERCHANT_BATCH_STORAGE_DIR: path.join(REPO_ROOT, '.local', `batch-settlement-${ports.merchant}`),
    MERCHANT_BATCH_SETTLE_EVERY_SECONDS: '0',
  };
  fs.rmSync(batchEnv.MERCHANT_BATCH_STORAGE_DIR, { recursive: true, force: true });

  await step('start the ledger and the merchant agent', async () => {
    await startApp(
      'ledger',
      {
        ...common,
        LEDGER_PORT: String(ports.ledger),
        FACILITATOR_URL: facilitatorUrl,
        STRIPE_SECRET_KEY: 'sk_test_demo_ledger',
        STRIPE_API_BASE: stripeUrl,
        RECON_SCHEDULE: 'off',
        // the renewal scan every second, so a renewal follows the demo's move of the clock at once
        RENEWAL_SCAN_EVERY_MS: '1000',
      },
      `${ledgerUrl}/ready`,
    );
    const ledgerApi = merchantApi(ledgerUrl, merchantAccount.apiKey);
    for (const plan of Object.values(plans)) {
      await ledgerApi('/plans', plan);
      say(`ledger: plan "${plan.name}" (${plan.product}): ${plan.amount} of ${plan.asset} a day; an immediate cancel refunds the unused part`);
    }
    await startApp(
      'merchant-agent',
      {
        ...common,
        MERCHANT_PORT: String(ports.merchant),
        FACILITATOR_URL: facilitatorUrl,
        FACILITATOR_API_KEY: merchantAccount.apiKey,
        MERCHANT_STRIPE_NETWORK_ID: 'profile_demo_merchant',
        LEDGER_URL: ledgerUrl,
        MERCHANT_SUBSCRIPTION_PLAN_ID: plans.evm.id,
        MERCHANT_SUBSCRIPTION_PRODUCT: plans.evm.product,
        MERCHANT_SUBSCRIPTION_AMOUNT: plans.evm.amount,
        MERCHANT_SUBSCRIPTION_PERIOD_UNIT: 'day',
        MERCHANT_SUBSCRIPTION_PERIOD_COUNT: '1',
        MERCHANT_SUBSCRIPTION_TERM_PERIODS: '3',
        ...batchEnv,
      },
      `${merchantUrl}/ready`,
    );
  });

  const client = createPublicClient({ transport: http(manifest.rpcUrl) });
  const usdc = manifest.tokens.usdc.address;
  const buyer = manifest.accounts.payers[0].address;
  const merchant = manifest.accounts.merchant.address;
  const balances = async () =>
    Promise.all([buyer, merchant].map((a) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [a] })));

  let exactGas;
  await step('x402: a buyer pays for an HTTP call', async () => {
    const before = await balances();
    const url = `${merchantUrl}/paid/forecast`;
    say(`buyer ${buyer} asks for ${url}`);
    const purchase = spawnSync(process.execPath, [appEntry('merchant-agent', 'buyer/main.js'), url], { cwd: REPO_ROOT, env: common, encoding: 'utf8' });
    process.stdout.write(purchase.stdout);
    process.stderr.write(purchase.stderr);
    if (purchase.status !== 0) throw new Error('the buyer could not complete the purchase');
    const { transaction } = JSON.parse(purchase.stdout.slice(purchase.stdout.indexOf('{')));
    const receipt = await client.getTransactionReceipt({ hash: transaction });
    exactGas = receipt.gasUsed;
    const after = await balances();
    say(`transaction ${transaction}: ${receipt.status} in block ${receipt.blockNumber}, gas ${receipt.gasUsed}`);
    say(`buyer    USDC ${formatUsdc(before[0])} → ${formatUsdc(after[0])}`);
    say(`merchant USDC ${formatUsdc(before[1])} → ${formatUsdc(after[1])}`);
  });

  await step('x402 batch-settlement: 20 repeated calls on one deposit', () =>
    batchSettlementDemo({
      manifest,
      client,
      merchantUrl,
      facilitatorUrl,
      ledgerUrl,
      apiKey: merchantAccount.apiKey,
      // the agent's own environment for its claim and settle: its facilitator, its key, its channel storage
      env: { ...common, ...batchEnv, FACILITATOR_URL: facilitatorUrl, FACILITATOR_API_KEY: merchantAccount.apiKey },
      exactGas,
    }),
  );

  const mppUrl = `${merchantUrl}/mpp/forecast`;
  for (const method of ['evm', 'stripe']) {
    await step(`MPP: a buyer pays with method ${method}`, async () => {
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
    });
  }

  await step('MPP session: a forecast streamed hour by hour over SSE, paid by vouchers on a payment channel', async () => {
    const url = `${merchantUrl}/mpp/forecast/stream?hours=24&city=Lisbon`;
    say(`MPP session: a buyer streams ${url} (price per hour in the challenge; the channel opened with a relayed deposit)`);
    const session = spawnSync(
      process.execPath,
      [appEntry('merchant-agent', 'mpp/session-buyer.main.js'), url, '--open', 'authorization', '--deposit', '10000'],
      {
        cwd: REPO_ROOT,
        env: { ...common, BUYER_PRIVATE_KEY: manifest.accounts.payers[3].privateKey },
        encoding: 'utf8',
      },
    );
    const events = session.stderr.split('\n').filter((l) => l.startsWith('session: '));
    const vouchers = events.filter((l) => l.startsWith('session: voucher'));
    for (const line of events.filter((l) => !/^session: (receipt|voucher|done)/.test(l))) say(line.replace(/^session: /, 'MPP session: '));
    if (session.status !== 0) throw new Error(`the session stream failed: ${session.stderr.trim().split('\n').at(-1)}`);
    const hours = session.stdout.trim().split('\n').filter(Boolean);
    const done = JSON.parse(events.at(-1).slice('session: done '.length));
    say(
      `MPP session: ${hours.length} hours delivered against ${vouchers.length} vouchers (the last ${vouchers.at(-1)?.replace(/^session: voucher /, '')}), no transaction per hour`,
    );
    say(`MPP session: ${hours.length} hours delivered, spent ${done.spent}, closed on chain in ${done.closeTx}`);
    const channel = await (
      await fetch(`${facilitatorUrl}/mpp/sessions/${done.channelId}`, { headers: { authorization: `Bearer ${merchantAccount.apiKey}` } })
    ).json();
    say(
      `MPP session: the facilitator's channel: ${channel.state}, deposit ${channel.deposit}, accepted ${channel.acceptedCumulative}, spent ${channel.spent}, settled on chain ${channel.settledOnChain}`,
    );
    // the ledger books every voucher, charge, settle and close from the facilitator's channel events
    const ledgerApi = merchantApi(ledgerUrl, merchantAccount.apiKey);
    const books = await until('the ledger to book the closed channel', async () => {
      const found = await ledgerApi(`/channels/${done.channelId}`).catch(() => undefined);
      // the close's events carry the closed snapshot from the first one: done once settled + refunded = deposit
      return found?.state === 'closed' && BigInt(found.settled) + BigInt(found.refunded) === BigInt(found.deposit) ? found : undefined;
    });
    say(`MPP session: the ledger's books of the channel: ${JSON.stringify(books)}`);
  });

  await step('A2A: a buyer agent buys a skill from the merchant agent', async () => {
    say(`A2A: the buyer agent reads ${merchantUrl}/.well-known/agent-card.json and asks for "forecast Lisbon"`);
    const a2a = spawnSync(process.execPath, [appEntry('merchant-agent', 'buyer/a2a-main.js'), 'forecast', 'Lisbon'], {
      cwd: REPO_ROOT,
      env: { ...common, MERCHANT_A2A_URL: merchantUrl, BUYER_PRIVATE_KEY: manifest.accounts.payers[2].privateKey },
      encoding: 'utf8',
    });
    for (const line of a2a.stdout.split('\n').filter((l) => l.startsWith('a2a buyer:'))) console.log(line);
    process.stderr.write(a2a.stderr);
    if (a2a.status !== 0) throw new Error(`the A2A purchase failed: ${(a2a.stderr || a2a.stdout).trim().split('\n').at(-1)}`);
    const purchase = JSON.parse(a2a.stdout.trim().split('\n').at(-1));
    const receipt = purchase.receipt;
    say(`A2A: task ${purchase.taskId} ${purchase.outcome}, paid in ${receipt?.transaction} (${receipt?.network})`);
  });

  await step('ledger: every settled payment booked', async () => {
    const booked = await waitForBooks({ facilitatorUrl, ledgerUrl, apiKey: merchantAccount.apiKey });
    for (const [asset, amount] of booked) say(`ledger: revenue ${amount} atomic units of ${asset}`);
  });

  await step('reconciliation: the books against the chain and Stripe', () =>
    reconcile({
      merchantId: merchantAccount.merchantId,
      apiKey: merchantAccount.apiKey,
      ledgerUrl,
      from: periodFrom,
      to: new Date(Date.now() + 60_000),
      env: common,
    }),
  );

  await subscriptionsDemo({ manifest, client, usdc, merchantUrl, facilitatorUrl, ledgerUrl, stripeUrl, plans, apiKey: merchantAccount.apiKey });

  await step('reconciliation: everything again, subscription charges and refunds included', async () => {
    // up to the chain's time, which the subscriptions moved two days on
    const chainTime = Number((await client.getBlock({ blockTag: 'latest' })).timestamp) * 1000;
    await reconcile({
      merchantId: merchantAccount.merchantId,
      apiKey: merchantAccount.apiKey,
      ledgerUrl,
      from: periodFrom,
      to: new Date(chainTime + 60_000),
      env: common,
    });
  });

  say('all steps passed');
  if (values.exit) return shutdown(0);
  say(
    `running: facilitator ${facilitatorUrl}, ledger ${ledgerUrl}, merchant ${merchantUrl}, chain ${anvil.rpcUrl}, fake Stripe ${stripeUrl}; logs in ${path.relative(process.cwd(), logDir)}; Ctrl-C stops`,
  );
  say(`merchant API key (for the ledger and GET /payments): ${merchantAccount.apiKey}`);
}

/**
 * x402 batch-settlement with the official client (@x402/fetch, @x402/evm): 20 calls to GET /paid/metered-forecast,
 * the first depositing into the payer's channel, the rest signing vouchers; then the merchant claims and settles
 * (batch-settle.main.js, the agent's own channel manager), and the payer takes back the unused rest. The gas of the
 * transactions the calls needed, per call, against one `exact` settlement per call.
 */
async function batchSettlementDemo({ manifest, client, merchantUrl, facilitatorUrl, ledgerUrl, apiKey, env: merchantEnv, exactGas }) {
  const CALLS = 20;
  const url = `${merchantUrl}/paid/metered-forecast`;
  const network = manifest.network;
  const usdc = manifest.tokens.usdc.address;
  const merchant = manifest.accounts.merchant.address;
  const payer = privateKeyToAccount(manifest.accounts.payers[5].privateKey);
  const balanceOf = (a) => client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [a] });
  const scheme = new BatchClientScheme(toClientEvmSigner(payer, client), { salt: `0x${randomBytes(32).toString('hex')}` });
  const paying = new x402Client().register(network, scheme).setSpendControls({ allowedAssets: [{ network, asset: usdc, maxAmountPerPayment: '100000' }] });
  const pay = wrapFetchWithPayment(fetch, paying);
  const [payerBefore, merchantBefore] = [await balanceOf(payer.address), await balanceOf(merchant)];

  const onChain = [];
  let channelId;
  say(`payer ${payer.address} calls ${url} ${CALLS} times`);
  for (let call = 1; call <= CALLS; call++) {
    const response = await pay(url);
    if (response.status !== 200) throw new Error(`call ${call} answered ${response.status}: ${await response.text()}`);
    const { transaction, extra } = decodePaymentResponseHeader(response.headers.get('PAYMENT-RESPONSE'));
    channelId ??= extra?.channelState?.channelId;
    if (transaction) onChain.push({ what: `deposit (call ${call})`, hash: transaction });
  }
  say(
    `${CALLS} calls served: ${onChain.length} deposit transaction (${onChain.map((t) => t.hash).join(', ')}), ${CALLS - onChain.length} vouchers signed off chain`,
  );

  const settled = spawnSync(process.execPath, [appEntry('merchant-agent', 'paid-http/batch-settle.main.js')], {
    cwd: REPO_ROOT,
    env: merchantEnv,
    encoding: 'utf8',
  });
  process.stderr.write(settled.stderr);
  if (settled.status !== 0) throw new Error('the merchant could not claim and settle');
  const { claims, settle } = JSON.parse(settled.stdout.trim().split('\n').at(-1));
  for (const c of claims) onChain.push({ what: `claim of ${c.vouchers} voucher(s)`, hash: c.transaction });
  if (!settle) throw new Error('nothing was settled to the merchant');
  onChain.push({ what: 'settle to the merchant', hash: settle.transaction });
  let gas = 0n;
  for (const t of onChain) {
    const receipt = await client.getTransactionReceipt({ hash: t.hash });
    if (receipt.status !== 'success') throw new Error(`the ${t.what} transaction ${t.hash} reverted`);
    gas += receipt.gasUsed;
    say(`  ${t.what}: ${t.hash}, gas ${receipt.gasUsed}`);
  }
  const merchantAfter = await balanceOf(merchant);
  say(`merchant USDC ${formatUsdc(merchantBefore)} → ${formatUsdc(merchantAfter)} (${CALLS} × 0.001000)`);
  if (merchantAfter - merchantBefore !== 1000n * BigInt(CALLS)) throw new Error(`the merchant received ${merchantAfter - merchantBefore}, not ${1000 * CALLS}`);
  say(
    `gas per paid call: ${gas / BigInt(CALLS)} with batch-settlement (${onChain.length} transactions for ${CALLS} calls) vs ${exactGas} with exact (${CALLS} transactions)`,
  );

  const refund = await scheme.refund(url);
  if (!refund?.success) throw new Error(`the refund failed: ${JSON.stringify(refund)}`);
  say(`the payer takes back the unused rest of its deposit: USDC ${formatUsdc(payerBefore)} → ${formatUsdc(await balanceOf(payer.address))}`);
  // the ledger books the channel's deposit, claims, settle and refund from the facilitator's channel events
  const books = await until('the ledger to book the batch channel', async () => {
    const found = await merchantApi(ledgerUrl, apiKey)(`/channels/${channelId}`).catch(() => undefined);
    return found && found.refunded !== '0' && found.settled === String(1000 * CALLS) ? found : undefined;
  });
  say(
    `the ledger's books of the batch channel: deposit ${books.deposit}, claimed ${books.spent}, settled ${books.settled}, refunded ${books.refunded}, held ${books.held}`,
  );

  // the settle is the merchant's payment in the facilitator, for the books (the ledger step below)
  const payments = await fetch(`${facilitatorUrl}/payments?state=confirmed&limit=100`, { headers: { authorization: `Bearer ${apiKey}` } }).then((r) =>
    r.json(),
  );
  const booked = payments.data.find((p) => p.txHash === settle.transaction);
  if (!booked) throw new Error(`the facilitator has no confirmed payment for the settle ${settle.transaction}`);
  say(`facilitator: payment ${booked.id} (${booked.scheme}, ${booked.amount} atomic units) for the ledger to book`);
}

/** A reconciliation run (scripts/recon.mjs) over [from, to]: its summary printed, and its HTML report's link. */
async function reconcile({ merchantId, apiKey, ledgerUrl, from, to, env: reconEnv }) {
  const recon = spawnSync(
    process.execPath,
    ['scripts/recon.mjs', '--merchant', merchantId, '--from', from.toISOString(), '--to', to.toISOString(), '--ledger-url', ledgerUrl],
    // the key through the environment, never on a command line
    { cwd: REPO_ROOT, env: { ...reconEnv, LEDGER_API_KEY: apiKey }, encoding: 'utf8' },
  );
  process.stdout.write(
    recon.stdout
      .split('\n')
      .map((l) => (l ? `recon: ${l}` : l))
      .join('\n'),
  );
  if (recon.status === 1) throw new Error('reconciliation found breaks (see the report above)');
  if (recon.status !== 0) throw new Error(`reconciliation did not run: ${recon.stderr.trim().split('\n').at(-1)}`);
  const report = /Report\s+(\S+)/.exec(recon.stdout)?.[1];
  say(`open the HTML report in a browser: ${report}`);
}

/**
 * Subscriptions (issue 13): two buyers subscribe over MPP with evm at the merchant agent's GET /mpp/briefing, one over
 * MPP with stripe at the facilitator (Stripe Billing, on a test clock); a day later (the chain and the test clock moved
 * on) every subscription renews; one is canceled at period end, two immediately with a refund of the unused part (on
 * chain from the merchant's refund wallet, and through Stripe); another day on, the first has ended uncharged. Then the
 * books.
 */
async function subscriptionsDemo({ manifest, client, usdc, merchantUrl, facilitatorUrl, ledgerUrl, stripeUrl, plans, apiKey }) {
  const buyerHelpers = createRequire(import.meta.url)(appEntry('merchant-agent', 'buyer/subscription-buyer.js'));
  const ledgerApi = merchantApi(ledgerUrl, apiKey);
  const facilitatorApi = merchantApi(facilitatorUrl, apiKey);
  const subscription = (id) => ledgerApi(`/subscriptions/${id}`);
  /** The ledger's view once it has the subscription (it learns of it from the facilitator's outbox, a moment later). */
  const recorded = (id) => subscription(id).catch((error) => (/: 404 /.test(error.message) ? { charges: [] } : Promise.reject(error)));
  const chainNow = async () => Number((await client.getBlock({ blockTag: 'latest' })).timestamp);
  const briefing = (headers = {}) => fetch(`${merchantUrl}/mpp/briefing`, { headers });
  const payers = [3, 4].map((i) => privateKeyToAccount(manifest.accounts.payers[i].privateKey));
  const subscriptions = {};

  for (const [name, payer] of [
    ['evm-1', payers[0]],
    ['evm-2', payers[1]],
  ]) {
    await step(`subscription: buyer ${name} subscribes to the daily briefing over MPP (evm)`, async () => {
      const offered = await briefing();
      if (offered.status !== 402) throw new Error(`GET /mpp/briefing without a credential answered ${offered.status}, not 402`);
      const challenge = buyerHelpers.evmSubscriptionChallenge([offered.headers.get('www-authenticate')]);
      const { amount, periodUnit, subscriptionExpires } = challenge.request;
      say(`${name}: 402 with a subscription challenge: ${amount} a ${periodUnit} until ${subscriptionExpires}; signing one EIP-3009 authorization per period`);
      const credential = await buyerHelpers.subscribeCredential(challenge, payer, { anchorSeconds: BigInt((await chainNow()) - 2) });
      const subscribed = await briefing({ authorization: credential });
      if (subscribed.status !== 200) throw new Error(`the subscription was refused: ${subscribed.status} ${await subscribed.text()}`);
      const receipt = MppReceipt.fromResponse(subscribed);
      subscriptions[name] = receipt.subscriptionId;
      say(`${name}: 200, Payment-Receipt subscriptionId ${receipt.subscriptionId}, period 0 paid in ${receipt.reference}`);
      await until('the ledger to record period 0 paid', async () => ((await recorded(receipt.subscriptionId)).lastPaidIndex === 0 ? true : undefined));
      const proof = await buyerHelpers.payerProofHeaderValue(payer, plans.evm.product, 'GET /mpp/briefing');
      const served = await briefing({ 'payer-proof': proof });
      if (served.status !== 200) throw new Error(`the subscriber was not served on its proof: ${served.status} ${await served.text()}`);
      say(`${name}: a later call with only the payer's signed proof: ${served.status}, served without paying (the ledger's entitlement)`);
    });
  }

  const stripeApi = new Stripe('sk_test_demo_facilitator', { host: '127.0.0.1', port: new URL(stripeUrl).port, protocol: 'http', maxNetworkRetries: 0 });
  let testClock;
  await step('subscription: a buyer subscribes over MPP with stripe (Stripe Billing)', async () => {
    // the customer lives on a Stripe test clock at the chain's time, so the demo moves both together
    testClock = await stripeApi.testHelpers.testClocks.create({ frozen_time: await chainNow() });
    const customer = await stripeApi.customers.create({ test_clock: testClock.id });
    const terms = {
      realm: 'demo.merchant',
      opaque: { plan: plans.stripe.id },
      offers: [
        {
          method: 'stripe',
          intent: 'subscription',
          request: {
            amount: plans.stripe.amount,
            currency: 'usd',
            periodUnit: 'day',
            periodCount: '1',
            methodDetails: { networkId: 'profile_demo_merchant', paymentMethodTypes: ['card'] },
          },
        },
      ],
    };
    const issued = await facilitatorApi('/mpp/challenges', terms);
    const challenge = MppChallenge.deserialize(issued.wwwAuthenticate[0]);
    const credential = MppCredential.serialize(MppCredential.from({ challenge, payload: { paymentMethod: 'pm_card_visa', customer: customer.id } }));
    const settled = await facilitatorApi('/mpp/settle', { credential, terms });
    subscriptions.stripe = settled.receipt.subscriptionId;
    say(
      `stripe: subscriptionId ${settled.receipt.subscriptionId}, Stripe subscription ${settled.receipt.stripeSubscription}, first invoice ${settled.receipt.reference} paid`,
    );
    await until('the ledger to record period 0 paid', async () => ((await recorded(subscriptions.stripe)).lastPaidIndex === 0 ? true : undefined));
  });

  /** The chain, and so the facilitator and the ledger, and Stripe's test clock, `seconds` later. */
  const later = async (seconds) => {
    await advanceChain(manifest.rpcUrl, seconds);
    await stripeApi.testHelpers.testClocks.advance(testClock.id, { frozen_time: await chainNow() });
  };

  await step('renewal: a day later every subscription is charged once for period 1', async () => {
    const merchant = manifest.accounts.merchant.address;
    const before = await client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [merchant] });
    // past the period boundary, and past the hour Stripe Billing waits before it finalizes and collects a renewal invoice
    await later(DAY + 3_700);
    for (const id of Object.values(subscriptions)) {
      const renewed = await until(`subscription ${id} to renew`, async () => {
        const s = await subscription(id);
        return s.lastPaidIndex === 1 ? s : undefined;
      });
      say(`renewed: ${describeSubscription(renewed)}`);
    }
    const after = await client.readContract({ address: usdc, abi: erc20Abi, functionName: 'balanceOf', args: [merchant] });
    say(`merchant USDC ${formatUsdc(before)} → ${formatUsdc(after)} (two renewals on chain)`);
  });

  await step('cancel: evm-1 at period end, evm-2 and stripe immediately with a refund of the unused part', async () => {
    const atEnd = await ledgerApi(`/subscriptions/${subscriptions['evm-1']}/cancel`, { at: 'period_end', reason: 'demo: stops at period end' });
    say(`evm-1: cancel at period end: served until ${atEnd.paidThrough}, charged nothing after`);
    for (const name of ['evm-2', 'stripe']) {
      const canceled = await ledgerApi(`/subscriptions/${subscriptions[name]}/cancel`, { at: 'immediately', reason: 'demo: stops now' });
      say(`${name}: canceled at once; refund of the unused part ${canceled.cancel.refund?.amount} requested`);
      const refunded = await until(`the refund of ${name}`, async () => {
        const s = await subscription(subscriptions[name]);
        return ['refunded', 'refund_failed'].includes(s.cancel?.refund?.state) ? s : undefined;
      });
      if (refunded.cancel.refund.state !== 'refunded') throw new Error(`the refund of ${name} failed: ${JSON.stringify(refunded.transitions.at(-1))}`);
      say(`${name}: ${describeSubscription(refunded)}`);
    }
  });

  await step('another day: evm-1 ends at its period end, charged nothing more', async () => {
    await later(DAY);
    const ended = await until('evm-1 to end', async () => {
      const s = await subscription(subscriptions['evm-1']);
      return s.state === 'canceled' ? s : undefined;
    });
    say(`evm-1: ${describeSubscription(ended)}`);
  });

  await step('the books: subscriptions, revenue and refunds', async () => {
    for (const id of Object.values(subscriptions)) say(`books: ${describeSubscription(await subscription(id))}`);
    const accounts = (await ledgerApi('/accounts?limit=1000')).data;
    for (const a of accounts.filter((x) => x.code === 200))
      say(`books: revenue ${a.asset}: ${a.balances.posted} (charges in ${a.creditsPosted}, refunds and fees out ${a.debitsPosted})`);
  });
}

/**
 * Waits until the ledger's revenue accounts hold every payment the facilitator confirmed for the merchant (the
 * ledger books them from the outbox, a moment later); returns the revenue per asset.
 */
async function waitForBooks({ facilitatorUrl, ledgerUrl, apiKey }) {
  const headers = { authorization: `Bearer ${apiKey}` };
  const getJson = async (url) => {
    // A read: asked once more if the connection broke on the way (a kept-alive socket the server closed meanwhile).
    const response = await fetch(url, { headers }).catch(() => fetch(url, { headers }));
    if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
    return response.json();
  };
  const payments = (await getJson(`${facilitatorUrl}/payments?state=confirmed&limit=100`)).data;
  const expected = new Map();
  for (const p of payments) {
    const asset = p.rail === 'stripe' ? `stripe/${p.asset.toLowerCase()}` : `${p.network}/${p.asset.toLowerCase()}`;
    expected.set(asset, (expected.get(asset) ?? 0n) + BigInt(p.amount));
  }
  say(`facilitator: ${payments.length} confirmed payments of this merchant`);
  const deadline = Date.now() + 30_000;
  for (;;) {
    const accounts = (await getJson(`${ledgerUrl}/accounts?code=200&limit=1000`)).data;
    const booked = new Map(accounts.map((a) => [a.asset, BigInt(a.creditsPosted)]));
    if ([...expected].every(([asset, amount]) => booked.get(asset) === amount)) return booked;
    if (Date.now() > deadline)
      throw new Error(`the ledger did not book every payment within 30 s: expected ${[...expected].join('; ')}, booked ${[...booked].join('; ')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function runJson(title, args, extraEnv = {}) {
  const result = spawnSync(process.execPath, args, { cwd: REPO_ROOT, env: { ...env, ...extraEnv }, encoding: 'utf8' });
  if (result.status !== 0) throw new Error(`${title} failed: ${result.stderr.trim()}`);
  return JSON.parse(result.stdout);
}

function run(title, args) {
  const result = spawnSync(process.execPath, args, { cwd: REPO_ROOT, env, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`${title} failed`);
}

/** Stops an app started by startApp (SIGTERM, waiting for its exit) and starts it again with appEnv. */
async function restartApp(name, appEnv, readyUrl) {
  const child = children.find((c) => c.appName === name && c.exitCode === null);
  if (child) {
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await exited;
  }
  await startApp(name, appEnv, readyUrl, {}, 'a');
}

async function startApp(name, appEnv, readyUrl, headers = {}, logMode = 'w') {
  const log = fs.openSync(path.join(logDir, `${name}.log`), logMode);
  const child = spawn(process.execPath, [appEntry(name)], { cwd: REPO_ROOT, env: appEnv, stdio: ['ignore', log, log] });
  child.appName = name;
  children.push(child);
  let exited;
  child.on('exit', (code) => (exited = code));
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (exited !== undefined) throw new Error(`${name} exited with code ${exited}; see .local/logs/${name}.log`);
    const ok = await fetch(readyUrl, { headers }).then(
      (r) => r.ok,
      () => false,
    );
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
  // fetch's own message is only "fetch failed": its cause says what (a refused connection, a reset socket)
  const cause = error.cause instanceof Error ? ` (${error.cause.code ?? error.cause.name}: ${error.cause.message})` : '';
  console.error(`demo: ✖ step "${current}" failed: ${error.message}${cause}`);
  return shutdown(1);
});
