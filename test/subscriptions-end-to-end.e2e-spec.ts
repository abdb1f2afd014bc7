import { randomBytes, randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { Challenge as MppxChallenge, Credential as MppxCredential } from 'mppx';
import { getAddress, type Address } from 'viem';
import { ManualClock, periodAt, unusedPeriodRefund } from '@mp/billing';
import { SUBSCRIPTION_COMMANDS_QUEUE, subscriptionCommandJobId, type SubscriptionCommand } from '@mp/clients';
import { PrismaService } from '@mp/db';
import { signEvmSubscription } from '@mp/mpp';
import { configureHttpApp } from '@mp/platform';
import { AppModule as LedgerModule } from '../apps/ledger/src/app.module';
import { BILLING_CLOCK } from '../apps/ledger/src/billing/billing.clock';
import { RenewalScheduler } from '../apps/ledger/src/billing/renewal.scheduler';
import { loadLedgerConfig } from '../apps/ledger/src/ledger.config';
import { Clock } from '../apps/facilitator/src/x402/clock';
import { balanceOf, payerAccount } from './support/chain';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';
import { call } from './support/http';
import { TEST_DATABASE_URL } from './support/ledger-app';
import { createMerchant } from './support/merchants';
import { startOwnChain, type OwnChain } from './support/own-chain';

const DAY = 86_400;
const AMOUNT = 50_000n;

/**
 * Subscriptions across the split (docs/architecture.md "Subscriptions: who owns what"), nothing stood in for: a buyer
 * subscribes over MPP at the facilitator on a chain of the spec's own; the ledger learns of it from the facilitator's
 * outbox, decides when period 1 is due by its clock, asks the facilitator on `subscription-commands`, and books what
 * the chain settled; a cancel at period end goes the same way and nothing more is charged; an immediate cancel's unused
 * part goes back to the payer from the merchant's refund wallet (REFUND_WALLET_KEYS).
 */
describe('subscriptions end to end: facilitator, ledger, queues and chain', () => {
  let chain: OwnChain;
  let facilitator: RunningFacilitator;
  let ledger: INestApplication;
  let ledgerUrl: string;
  let clock: ManualClock;
  let merchant: { merchantId: string; apiKey: string };
  let recipient: Address;
  let prefix: string;
  let redisUrl: string;
  const planId = randomUUID();

  /** Both services read the chain's time: the facilitator through its Clock, the ledger through its ManualClock. */
  const syncClocks = async () => {
    const chainMs = (await chain.now()) * 1000;
    const offset = chainMs - Date.now();
    facilitator.app.get(Clock, { strict: false }).nowMs = () => Date.now() + offset;
    clock.set(new Date(chainMs));
  };

  const until = async <T>(what: string, probe: () => Promise<T | undefined>, timeoutMs = 30_000): Promise<T> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const value = await probe();
      if (value !== undefined) return value;
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };

  const fromLedger = (path: string, body?: unknown) => call(`${ledgerUrl}${path}`, { key: merchant.apiKey, ...(body !== undefined && { body }) });
  const subscriptionOf = (id: string) => fromLedger(`/subscriptions/${id}`).then((r) => r.body);

  /** The buyer subscribes over MPP to `plan`: three days of daily periods, one authorization each, the plan bound into the challenge. */
  const subscribeOverMpp = async (plan: string, payer: ReturnType<typeof payerAccount>): Promise<string> => {
    const usdc = chain.manifest.tokens.usdc;
    const expires = new Date(((await chain.now()) + 2.5 * DAY) * 1000).toISOString().replace('.000Z', 'Z');
    const terms = {
      realm: 'news.example',
      opaque: { plan },
      offers: [
        {
          method: 'evm',
          intent: 'subscription',
          request: {
            amount: String(AMOUNT),
            currency: usdc.address,
            periodUnit: 'day',
            periodCount: '1',
            recipient,
            subscriptionExpires: expires,
            methodDetails: { chainId: chain.manifest.chainId },
          },
        },
      ],
    };
    const asMerchant = (path: string, body: unknown) => call(`${facilitator.url}${path}`, { key: merchant.apiKey, body });
    const issued = await asMerchant('/mpp/challenges', terms);
    expect(issued.status).toBe(201);
    const challenge = MppxChallenge.deserialize(issued.body.wwwAuthenticate[0]);
    const payload = await signEvmSubscription(challenge as never, {
      from: payer.address,
      signTypedData: (typed) => payer.signTypedData(typed as never),
      anchorSeconds: facilitator.app.get(Clock, { strict: false }).nowSeconds() - 2n,
    });
    expect(payload.authorizations).toHaveLength(3);
    const credential = MppxCredential.serialize(
      MppxCredential.from({ challenge, payload, source: `did:pkh:eip155:${chain.manifest.chainId}:${payer.address}` }),
    );
    const settled = await asMerchant('/mpp/settle', { credential, terms });
    expect(settled.status, JSON.stringify(settled.body)).toBe(200);
    return settled.body.receipt.subscriptionId as string;
  };

  beforeAll(async () => {
    chain = await startOwnChain(31_339);
    recipient = getAddress(chain.manifest.accounts.merchant.address) as Address;
    prefix = `mp:test-subs-e2e-${randomUUID().slice(0, 8)}`;
    // made before the facilitator starts, which reads the merchant's refund wallet (its payTo account here) at boot
    merchant = createMerchant('Subscriptions end to end', undefined, { receivingAddresses: [`${chain.manifest.network}:${recipient}`] });
    facilitator = await startFacilitator({
      REFUND_WALLET_KEYS: JSON.stringify({ [merchant.merchantId]: chain.manifest.accounts.merchant.privateKey }),
      REFUND_WAIT_MS: '5000',
      CHAIN_MANIFEST: chain.manifestPath,
      QUEUE_PREFIX: prefix,
      FACILITATOR_OPEN_MODE: 'false',
      SUBSCRIPTION_SEALING_KEYS: `k1:${randomBytes(32).toString('base64')}`,
      OUTBOX_POLL_MS: '20',
      REVOCATION_POLL_MS: '600000',
      API_KEY_CACHE_MS: '0',
    });
    const config = loadLedgerConfig({
      ...process.env,
      CHAIN_MANIFEST: chain.manifestPath,
      DATABASE_URL: TEST_DATABASE_URL,
      LOG_LEVEL: 'error',
      DATABASE_POOL_SIZE: '4',
      LEDGER_INGEST: 'true',
      RECON_SCHEDULE: 'off',
      RENEWAL_SCAN_EVERY_MS: '0',
      FACILITATOR_URL: facilitator.url,
      QUEUE_PREFIX: prefix,
    });
    redisUrl = config.redisUrl;
    clock = new ManualClock(new Date());
    const moduleRef = await Test.createTestingModule({ imports: [LedgerModule.forConfig(config)] })
      .overrideProvider(BILLING_CLOCK)
      .useValue(clock)
      .compile();
    ledger = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
    configureHttpApp(ledger, { bodyLimitBytes: config.bodyLimitBytes, trustProxy: config.trustProxy });
    await ledger.listen(0, '127.0.0.1');
    ledgerUrl = `http://127.0.0.1:${(ledger.getHttpServer().address() as { port: number }).port}`;

    await syncClocks();
  });

  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
    await chain?.stop();
  });

  it('subscribes over MPP, renews when the ledger says so, cancels at period end, and charges each period once', async () => {
    const usdc = chain.manifest.tokens.usdc;
    const payer = payerAccount(chain.manifest, 3);
    const plan = await fromLedger('/plans', {
      id: planId,
      name: 'Daily news',
      product: 'news',
      amount: String(AMOUNT),
      asset: `${chain.manifest.network}/${usdc.address.toLowerCase()}`,
      periodUnit: 'day',
      periodCount: 1,
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);
    const before = await balanceOf(chain.client, usdc, recipient);

    // 1. The buyer subscribes: three days of daily periods, one authorization each, the plan bound into the challenge.
    const subscriptionId = await subscribeOverMpp(planId, payer);

    // 2. The ledger has it from the outbox: active, period 0 paid, bound to the plan, and the payer entitled.
    const active = await until('the ledger to record period 0 paid', async () => {
      const s = await subscriptionOf(subscriptionId);
      return s?.lastPaidIndex === 0 ? s : undefined;
    });
    expect(active).toMatchObject({ state: 'active', planId, product: 'news', method: 'evm', authorizedPeriods: 3 });
    const entitled = () => fromLedger(`/entitlements?payer=${payer.address.toLowerCase()}&product=news`).then((r) => r.body);
    expect(await entitled()).toMatchObject({ entitled: true, subscriptionId });

    // 3. A day later by the chain, the ledger's scan finds period 1 due and asks; the facilitator settles it once.
    await chain.increaseTime(DAY);
    await syncClocks();
    const app = ledger.get(RenewalScheduler);
    await app.runDue(clock.now());
    await app.runDue(clock.now()); // a second scan while the first charge is in flight asks nothing more
    const renewed = await until('the ledger to record period 1 paid', async () => {
      const s = await subscriptionOf(subscriptionId);
      return s?.lastPaidIndex === 1 ? s : undefined;
    });
    expect(renewed.charges.filter((c: any) => c.state === 'paid').map((c: any) => c.periodIndex)).toEqual([0, 1]);
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 2n * AMOUNT);

    // 4. The merchant cancels at period end: the facilitator confirms, period 1 is still served, nothing more is charged.
    const canceled = await fromLedger(`/subscriptions/${subscriptionId}/cancel`, { at: 'period_end' });
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    await until('the facilitator to confirm the cancel', async () => ((await subscriptionOf(subscriptionId)).cancel?.confirmedAt ? true : undefined));
    expect(await entitled()).toMatchObject({ entitled: true });
    await chain.increaseTime(DAY);
    await syncClocks();
    await app.runDue(clock.now());
    const ended = await subscriptionOf(subscriptionId);
    expect(ended).toMatchObject({ state: 'canceled', lastPaidIndex: 1 });
    expect(await entitled()).toMatchObject({ entitled: false });

    // On the facilitator: two payments of this subscription, both confirmed, and no charge asked for period 2.
    const db = facilitator.app.get(PrismaService);
    const payments = await db.$queryRawUnsafe<{ period_index: number; state: string }[]>(
      `SELECT subscription_period AS period_index, state::text FROM facilitator.payments WHERE subscription_id = $1 ORDER BY subscription_period`,
      subscriptionId,
    );
    expect(payments).toEqual([
      { period_index: 0, state: 'confirmed' },
      { period_index: 1, state: 'confirmed' },
    ]);
    expect(await balanceOf(chain.client, usdc, recipient)).toBe(before + 2n * AMOUNT);

    // The books: both periods booked as revenue for the merchant.
    const balances = await fromLedger(`/accounts?asset=${encodeURIComponent(`${chain.manifest.network}/${usdc.address.toLowerCase()}`)}&code=200`);
    expect(balances.body.data.map((a: any) => a.balances.posted)).toEqual([String(2n * AMOUNT)]);
  });

  it("refunds an immediate cancel's unused part to the payer from the merchant's refund wallet, once however often it is asked", async () => {
    const usdc = chain.manifest.tokens.usdc;
    const refundablePlan = randomUUID();
    const plan = await fromLedger('/plans', {
      id: refundablePlan,
      name: 'Daily news, refundable',
      product: 'news-refundable',
      amount: String(AMOUNT),
      asset: `${chain.manifest.network}/${usdc.address.toLowerCase()}`,
      periodUnit: 'day',
      periodCount: 1,
      cancelRefund: 'unused_part',
    });
    expect(plan.status, JSON.stringify(plan.body)).toBe(201);
    const payer = payerAccount(chain.manifest, 4);
    const subscriptionId = await subscribeOverMpp(refundablePlan, payer);
    const active = await until('the ledger to record period 0 paid', async () => {
      const s = await subscriptionOf(subscriptionId);
      return s?.lastPaidIndex === 0 ? s : undefined;
    });
    const paid = await balanceOf(chain.client, usdc, payer.address);
    const refundsBooked = async () => {
      const transfers = await ledger.get(PrismaService).ledgerTransfer.findMany({ where: { merchantId: merchant.merchantId, code: 2 } });
      return transfers.map((t) => t.amount.toString());
    };
    expect(await refundsBooked()).toEqual([]);

    // A quarter of the period later by the chain, the merchant cancels at once: the unused part is asked of the facilitator.
    await chain.increaseTime(DAY / 4);
    await syncClocks();
    const canceled = await fromLedger(`/subscriptions/${subscriptionId}/cancel`, { at: 'immediately' });
    expect(canceled.status, JSON.stringify(canceled.body)).toBe(200);
    const unused = unusedPeriodRefund(AMOUNT, periodAt(new Date(active.anchor), { unit: 'day', count: 1 }, 0), new Date(canceled.body.cancel.requestedAt));
    expect(unused > 0n && unused < AMOUNT).toBe(true);
    expect(canceled.body).toMatchObject({ state: 'canceled', cancel: { refund: { amount: String(unused), state: 'refund_requested' } } });

    // The facilitator refunds it on chain; the ledger books it and marks it refunded.
    const refunded = await until('the ledger to record the refund', async () => {
      const s = await subscriptionOf(subscriptionId);
      return s?.cancel?.refund?.state === 'refunded' ? s : undefined;
    });
    expect(refunded.transitions.at(-1)).toMatchObject({ event: 'refunded', cause: { amount: String(unused), periodIndex: 0 } });
    expect(await balanceOf(chain.client, usdc, payer.address)).toBe(paid + unused);
    expect(await refundsBooked()).toEqual([String(unused)]);

    // The same command published again (its job lost, say) answers the same refund: nothing more moves or is booked.
    const redis = new Redis(redisUrl, { maxRetriesPerRequest: null });
    const commands = new Queue<SubscriptionCommand>(SUBSCRIPTION_COMMANDS_QUEUE, { connection: redis, prefix });
    try {
      const jobId = subscriptionCommandJobId({ commandId: `refund-${subscriptionId}-0` });
      const first = (await commands.getJob(jobId))!;
      expect(first.data).toMatchObject({ type: 'refund', periodIndex: 0, amount: String(unused) });
      expect(first.returnvalue).toBe('refund:executed');
      await first.remove();
      await commands.add('refund', first.data, { jobId });
      const again = await until('the facilitator to take the command again', async () => {
        const job = await commands.getJob(jobId);
        return job && (await job.isCompleted()) ? job : undefined;
      });
      expect(again.returnvalue).toBe('refund:executed');
    } finally {
      await commands.close();
      redis.disconnect();
    }
    const db = facilitator.app.get(PrismaService);
    expect(await db.refund.count({ where: { merchantId: merchant.merchantId, idempotencyKey: `refund-${subscriptionId}-0` } })).toBe(1);
    expect(await balanceOf(chain.client, usdc, payer.address)).toBe(paid + unused);
    expect(await refundsBooked()).toEqual([String(unused)]);
  });
});
