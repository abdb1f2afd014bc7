import { randomUUID } from 'node:crypto';
import { Queue } from 'bullmq';
import fc from 'fast-check';
import { Redis } from 'ioredis';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { periodIndexAt, type PeriodUnit } from '@mp/billing';
import {
  CHARGE_BATCH_JOB_NAME,
  chargeBatchJobId,
  isChargeBatch,
  isMerchantNoticeBatch,
  merchantNoticeBatchJobId,
  NOTICE_BATCH_JOB_NAME,
  subscriptionCommandJobId,
  type MerchantNoticeBatch,
  type SubscriptionCommand,
} from '@mp/clients';
import { RENEWAL_SCHEDULER_ID } from '../src/billing/renewal.scheduler';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import { until } from '../../../test/support/webhook-receiver';
import {
  api,
  chargePayment,
  commandsOf,
  deliver,
  events,
  newSubscriptionId,
  noticesOf,
  startSubscriptionsWorld,
  type SubscriptionsWorld,
  type SubscriptionTerms,
} from './support/subscriptions-world';

const TOKEN = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const NETWORK = 'eip155:8453';
const DAY = 86_400_000;
const START = new Date('2027-03-15T09:00:00Z');

type Charge = Extract<SubscriptionCommand, { type: 'charge' }>;

const termsFor = (merchant: TestMerchant, extra: Partial<SubscriptionTerms> = {}): SubscriptionTerms => ({
  subscriptionId: newSubscriptionId(),
  merchantId: merchant.merchantId,
  payer: privateKeyToAccount(generatePrivateKey()).address,
  payTo: '0x6813eb9362372eef6200f3b1dbc3f819671cba69',
  amount: '2500000',
  asset: TOKEN,
  network: NETWORK,
  periodUnit: 'week',
  periodCount: 1,
  anchor: START,
  authorizedPeriods: null,
  ...extra,
});

async function activate(world: SubscriptionsWorld, terms: SubscriptionTerms, pay = true) {
  const payment = chargePayment(terms, 0, 0);
  const now = world.clock.now();
  await deliver(world, events.activated(terms, payment, now), events.verified(payment, now));
  if (pay) await deliver(world, events.confirmed(payment, now));
  return payment;
}

/** The renewal scan as it runs in production: a BullMQ job scheduler on `subscription-renewals`, every RENEWAL_SCAN_EVERY_MS. */
describe('the renewal scan on its job scheduler', () => {
  let world: SubscriptionsWorld;
  let merchant: TestMerchant;

  beforeAll(async () => {
    world = await startSubscriptionsWorld(START, { RENEWAL_SCAN_EVERY_MS: '200', SUBSCRIPTION_COMMAND_REPUBLISH_AFTER_MS: '60000' });
    merchant = createMerchant('Renewals merchant');
  });
  afterAll(async () => {
    await world?.close();
  });

  it('is registered once with its interval, and charges a due subscription with nobody calling it', async () => {
    const redis = new Redis(world.config.redisUrl, { maxRetriesPerRequest: null });
    const renewals = new Queue('subscription-renewals', { connection: redis, prefix: world.config.queuePrefix });
    try {
      const schedulers = await renewals.getJobSchedulers();
      expect(schedulers).toMatchObject([{ key: RENEWAL_SCHEDULER_ID, every: 200 }]);
    } finally {
      await renewals.close();
      redis.disconnect();
    }
    const terms = termsFor(merchant);
    await activate(world, terms);
    world.clock.set(new Date(START.getTime() + 7 * DAY));
    const charge = await until('the scheduled scan charges period 1', async () =>
      (await commandsOf(world, terms.subscriptionId)).find((c) => c.type === 'charge'),
    );
    expect(charge).toMatchObject({ periodIndex: 1, attempt: 0 });
  });

  it('publishes a charge again, under the same command id, when its outcome has not come after the timeout; and a notice the process never handed over', async () => {
    const terms = termsFor(merchant, { anchor: world.clock.now() });
    await activate(world, terms);
    const boundary = new Date(world.clock.now().getTime() + 7 * DAY);
    world.clock.set(boundary);
    await world.scheduler.runDue(boundary);
    const commandId = `charge-${terms.subscriptionId}-1-0`;
    const job = `subscription-command-${commandId}`;
    // published alone or in a batch with the other subscription due at the same time
    const published = await world.queues.commands.getJobs(['waiting'], 0, -1, true);
    const carrying = published.find((j) => (isChargeBatch(j.data) ? j.data.commands : [j.data]).some((c) => c.commandId === commandId));
    expect(carrying).toBeDefined();
    // Redis loses it
    await carrying!.remove();
    await world.queues.notices.remove(`notice-subscription-${terms.subscriptionId}-1`);
    await world.db.ledgerSubscriptionTransition.updateMany({ where: { subscriptionId: terms.subscriptionId }, data: { notifiedAt: null } });
    // before the timeout nothing is sent again
    await world.scheduler.runDue(new Date(boundary.getTime() + 30_000));
    expect(await world.queues.commands.getJob(job)).toBeUndefined();
    const later = new Date(boundary.getTime() + 61_000);
    await world.scheduler.runDue(later);
    expect((await world.queues.commands.getJob(job))?.data).toMatchObject({ commandId, periodIndex: 1, attempt: 0 });
    const [charge] = await world.db.ledgerSubscriptionCharge.findMany({ where: { subscriptionId: terms.subscriptionId, periodIndex: 1 } });
    expect(charge).toMatchObject({ state: 'requested', publishCount: 2 });
    expect((await noticesOf(world, terms.subscriptionId)).map((n) => n.noticeId)).toEqual([`subscription-${terms.subscriptionId}-1`]);
    // once the outcome is in, nothing more
    await deliver(world, events.confirmed(chargePayment(terms, 1, 0), later));
    await world.queues.commands.remove(job);
    await world.scheduler.runDue(new Date(later.getTime() + 120_000));
    expect(await world.queues.commands.getJob(job)).toBeUndefined();
  });
});

/**
 * What one scan makes due travels in few jobs: its charges in `charge-batch` jobs and its notices in `notice-batch`
 * jobs of at most 100 (here each scan transaction's RENEWAL_SCAN_BATCH of 5); the sweep publishes a lost charge again
 * as a job of its own.
 */
describe('the scan publishes in batches', () => {
  let world: SubscriptionsWorld;
  let merchant: TestMerchant;

  beforeAll(async () => {
    world = await startSubscriptionsWorld(START, { RENEWAL_SCAN_BATCH: '5', SUBSCRIPTION_COMMAND_REPUBLISH_AFTER_MS: '60000' });
    merchant = createMerchant('Batched renewals merchant');
  });
  afterAll(async () => {
    await world?.close();
  });

  it("publishes a scan's charges in charge-batch jobs and its notices in notice-batch jobs; a lost batch's charges come back one job each", async () => {
    const anchor = new Date(START.getTime() + 5_000);
    world.clock.set(anchor);
    const renewing: SubscriptionTerms[] = [];
    for (let i = 0; i < 7; i++) {
      const terms = termsFor(merchant, { anchor, periodUnit: 'day', periodCount: 1 });
      await activate(world, terms);
      renewing.push(terms);
    }
    const ending: SubscriptionTerms[] = [];
    for (let i = 0; i < 3; i++) {
      const terms = termsFor(merchant, { anchor, periodUnit: 'day', periodCount: 1 });
      await activate(world, terms);
      expect((await api(world, merchant.apiKey).post(`/subscriptions/${terms.subscriptionId}/cancel`, { at: 'period_end' })).status).toBe(200);
      ending.push(terms);
    }
    const boundary = new Date(anchor.getTime() + DAY);
    world.clock.set(boundary);
    const result = await world.scheduler.runDue(boundary);
    expect(result).toMatchObject({ scanned: 10, charged: 7 });

    const jobs = await world.queues.commands.getJobs(['waiting'], 0, -1, true);
    const batches = jobs.filter((j) => j.name === CHARGE_BATCH_JOB_NAME);
    // two scan transactions of five: 7 charges in at most two batch jobs (a lone charge of a scan travels alone)
    const batched = batches.flatMap((j) => (isChargeBatch(j.data) ? j.data.commands : []));
    const alone = jobs.filter((j) => j.name === 'charge').map((j) => j.data as Charge);
    expect([...batched, ...alone].map((c) => c.subscriptionId).sort()).toEqual(renewing.map((t) => t.subscriptionId).sort());
    expect(batches.length).toBeGreaterThanOrEqual(1);
    expect(batches.length + alone.length).toBeLessThanOrEqual(2);
    for (const job of batches) {
      const { commands } = job.data as { commands: Charge[] };
      expect(commands.length).toBeLessThanOrEqual(5);
      expect(job.id).toBe(chargeBatchJobId(commands));
      expect(job.opts).toMatchObject({ attempts: 10, backoff: { type: 'exponential', delay: 1_000 } });
      for (const c of commands) expect(c).toMatchObject({ type: 'charge', periodIndex: 1, attempt: 0, commandId: `charge-${c.subscriptionId}-1-0` });
    }
    for (const c of alone) expect((await world.queues.commands.getJob(subscriptionCommandJobId(c)))?.data).toEqual(c);

    // the three that end at the period's end: subscription.canceled, told in one notice-batch job (they share a scan batch or two)
    const noticeJobs = await world.queues.notices.getJobs(['waiting'], 0, -1, true);
    const canceled = noticeJobs
      .filter((j) => j.name === NOTICE_BATCH_JOB_NAME)
      .flatMap((j) => {
        const { notices } = j.data as MerchantNoticeBatch;
        expect(isMerchantNoticeBatch(j.data)).toBe(true);
        expect(j.id).toBe(merchantNoticeBatchJobId(notices));
        return notices;
      })
      .filter((n) => n.type === 'subscription.canceled');
    const canceledAlone = noticeJobs.filter((j) => j.name === 'subscription.canceled');
    expect(canceled.length + canceledAlone.length).toBe(3);
    expect(canceled.length).toBeGreaterThanOrEqual(2);
    for (const terms of ending) {
      const notices = (await noticesOf(world, terms.subscriptionId)).filter((n) => n.type === 'subscription.canceled');
      expect(notices).toHaveLength(1);
      expect(notices[0]).toMatchObject({ merchantId: merchant.merchantId, data: { subscriptionId: terms.subscriptionId, state: 'canceled' } });
    }

    // Redis loses the batch jobs: after the timeout the sweep publishes each charge again as a job of its own
    for (const job of batches) await job.remove();
    await world.scheduler.runDue(new Date(boundary.getTime() + 61_000));
    for (const c of batched) {
      const job = await world.queues.commands.getJob(subscriptionCommandJobId(c));
      expect(job?.name).toBe('charge');
      expect(job?.data).toMatchObject({ commandId: c.commandId, periodIndex: 1, attempt: 0 });
    }
    expect((await world.queues.commands.getJobs(['waiting'], 0, -1, true)).filter((j) => j.name === CHARGE_BATCH_JOB_NAME)).toEqual([]);
  });
});

/** Two replicas' scans and the merchant's cancels at the same instant: the row locks decide, one outcome each. */
describe('concurrent scans and cancels', () => {
  let world: SubscriptionsWorld;
  let merchant: TestMerchant;

  beforeAll(async () => {
    world = await startSubscriptionsWorld(START, { RENEWAL_SCAN_BATCH: '7' });
    merchant = createMerchant('Concurrency merchant');
  });
  afterAll(async () => {
    await world?.close();
  });

  it('charges each due subscription once across parallel scans, and a cancel racing them either stops the charge or lets it count', async () => {
    const anchor = new Date(START.getTime() + 1_000);
    world.clock.set(anchor);
    const all: SubscriptionTerms[] = [];
    for (let i = 0; i < 24; i++) {
      const terms = termsFor(merchant, { anchor, periodUnit: 'day', periodCount: 1 });
      await activate(world, terms);
      all.push(terms);
    }
    const boundary = new Date(anchor.getTime() + DAY);
    world.clock.set(boundary);
    const merchantApi = api(world, merchant.apiKey);
    const canceled = all.filter((_, i) => i % 2 === 0);
    await Promise.all([
      world.scheduler.runDue(boundary),
      world.scheduler.runDue(boundary),
      world.scheduler.runDue(boundary),
      ...canceled.map((t) => merchantApi.post(`/subscriptions/${t.subscriptionId}/cancel`, { at: 'immediately' })),
    ]);
    await world.scheduler.runDue(new Date(boundary.getTime() + 1_000));
    for (const terms of all) {
      const commands = (await commandsOf(world, terms.subscriptionId)).filter((c): c is Charge => c.type === 'charge');
      const detail = (await merchantApi.get(`/subscriptions/${terms.subscriptionId}`)).body;
      if (!canceled.includes(terms)) {
        expect(commands.map((c) => c.commandId)).toEqual([`charge-${terms.subscriptionId}-1-0`]);
        continue;
      }
      expect(detail.state).toBe('canceled');
      // charged before the cancel took the row (in flight, it counts), or not at all
      expect(commands.length).toBeLessThanOrEqual(1);
      if (commands.length) expect(detail.inFlight).toMatchObject({ periodIndex: 1, attempt: 0 });
      else expect(detail.inFlight).toBeNull();
    }
  });
});

/**
 * Random clocks and outcomes: whatever the facilitator answers (paid, failed, refused, nothing) and however the clock
 * jumps, no (subscription, period) is paid twice or asked for twice at the same attempt, and the ledger never
 * entitles a payer at a time whose period is not paid.
 */
describe('subscriptions under random clocks and failures (property)', () => {
  let world: SubscriptionsWorld;
  let merchant: TestMerchant;

  beforeAll(async () => {
    world = await startSubscriptionsWorld(START);
    merchant = createMerchant('Property merchant');
  });
  afterAll(async () => {
    await world?.close();
  });

  const outcome = fc.constantFrom('pay', 'pay', 'fail', 'refuse', 'none', 'cancel_now', 'cancel_end');
  const step = fc.record({ advanceMs: fc.integer({ min: 3_600_000, max: 20 * DAY }), outcome });
  const unit = fc.constantFrom<PeriodUnit>('day', 'week', 'month');

  it('charges each (subscription, period) at most once and entitles only in paid periods', async () => {
    await fc.assert(
      fc.asyncProperty(
        unit,
        fc.integer({ min: 1, max: 2 }),
        fc.integer({ min: 0, max: DAY - 1 }),
        fc.array(step, { minLength: 3, maxLength: 10 }),
        async (periodUnit, periodCount, startOffset, steps) => {
          const product = `p-${newSubscriptionId().slice(0, 10)}`;
          const planId = (
            await api(world, merchant.apiKey).post('/plans', {
              id: randomUUID(),
              name: product,
              product,
              amount: '2500000',
              asset: `${NETWORK}/${TOKEN}`,
              periodUnit,
              periodCount,
              cancelRefund: 'unused_part',
            })
          ).body.id as string;
          let now = new Date(START.getTime() + startOffset);
          world.clock.set(now);
          const terms = termsFor(merchant, { periodUnit, periodCount, anchor: now, planId });
          await activate(world, terms, true);
          let handled = 0;
          for (const { advanceMs, outcome: answer } of steps) {
            now = new Date(now.getTime() + advanceMs);
            world.clock.set(now);
            await world.scheduler.runDue(now);
            const commands = (await commandsOf(world, terms.subscriptionId)).filter((c): c is Charge => c.type === 'charge');
            for (const c of commands.slice(handled)) {
              const payment = chargePayment(terms, c.periodIndex, c.attempt);
              if (answer === 'pay') await deliver(world, events.verified(payment, now), events.confirmed(payment, now));
              else if (answer === 'fail') await deliver(world, events.failed(payment, now));
              else if (answer === 'refuse') await deliver(world, events.refused(terms, payment, c.periodIndex, c.attempt, 'rail_error', now));
            }
            handled = commands.length;
            if (answer === 'cancel_now' || answer === 'cancel_end') {
              await api(world, merchant.apiKey).post(`/subscriptions/${terms.subscriptionId}/cancel`, {
                at: answer === 'cancel_now' ? 'immediately' : 'period_end',
              });
            }
            // the invariants, from the ledger's own tables and API
            // one command per (period, attempt): a command published again is the same command (commandsOf checks it)
            const attempts = commands.map((c) => `${c.periodIndex}:${c.attempt}`);
            expect(new Set(attempts).size).toBe(attempts.length);
            const paid = await world.db.ledgerSubscriptionCharge.findMany({ where: { subscriptionId: terms.subscriptionId, state: 'paid' } });
            const paidPeriods = paid.map((c) => c.periodIndex);
            expect(new Set(paidPeriods).size).toBe(paidPeriods.length);
            for (const c of commands) {
              const periodStart = new Date(c.periodStart).getTime();
              expect(new Date(c.requestedAt).getTime()).toBeGreaterThanOrEqual(periodStart);
              expect(new Date(c.requestedAt).getTime()).toBeLessThan(new Date(c.periodEnd).getTime());
            }
            for (const probe of [now, new Date(now.getTime() - 1_000)]) {
              const answerNow = (await api(world, merchant.apiKey).get(`/entitlements?payer=${terms.payer}&product=${product}&at=${probe.toISOString()}`)).body;
              if (answerNow.entitled) {
                const index = periodIndexAt(terms.anchor, { unit: periodUnit, count: periodCount }, probe);
                expect(paidPeriods, `entitled at ${probe.toISOString()} in period ${index}`).toContain(index);
              }
            }
          }
        },
      ),
      { numRuns: 12 },
    );
  });
});
