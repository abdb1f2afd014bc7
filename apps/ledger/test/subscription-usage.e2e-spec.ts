import { randomUUID } from 'node:crypto';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { prepaidAccountId, TransferCode } from '@mp/ledger';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';
import {
  api,
  chargePayment,
  deliver,
  events,
  newSubscriptionId,
  startSubscriptionsWorld,
  type SubscriptionsWorld,
  type SubscriptionTerms,
} from './support/subscriptions-world';

const TOKEN = '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913';
const NETWORK = 'eip155:8453';
const ASSET = `${NETWORK}/${TOKEN}`;
const DAY = 86_400_000;
const WEEK = 7 * DAY;
const START = new Date('2027-05-03T09:00:00Z');
const at = (ms: number) => new Date(START.getTime() + ms);
const txHash = () => `0x${randomUUID().replaceAll('-', '')}${randomUUID().replaceAll('-', '')}`;

/**
 * A plan's usage-priced components billed by the subscription engine (issue 14): the real ledger (PostgreSQL, Redis)
 * on a ManualClock; usage events in through POST /usage/events, periods closed by the renewal scan, usage charges
 * drawn from the payer's prepaid balance (POST /balances/top-ups funds it).
 */
describe('usage components of a plan, billed at period end', () => {
  let world: SubscriptionsWorld;
  let merchant: TestMerchant;
  let planId: string;
  const http = () => api(world, merchant.apiKey);

  const termsFor = (extra: Partial<SubscriptionTerms> = {}): SubscriptionTerms => ({
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
    planId,
    ...extra,
  });

  async function activate(terms: SubscriptionTerms) {
    const payment = chargePayment(terms, 0, 0);
    const now = world.clock.now();
    await deliver(world, events.activated(terms, payment, now), events.verified(payment, now), events.confirmed(payment, now));
  }

  /** Usage events of the subscription (subject = its id), at exact times. */
  async function sendUsage(subject: string, ...usage: { time: Date; tokens?: number | string; ms?: number; type?: string }[]) {
    const body = usage.map((u) => ({
      specversion: '1.0',
      id: randomUUID(),
      source: 'test/llm',
      type: u.type ?? 'llm.call',
      subject,
      time: u.time.toISOString(),
      data: { ...(u.tokens !== undefined && { tokens: u.tokens }), ...(u.ms !== undefined && { ms: u.ms }) },
    }));
    const sent = await http().post('/usage/events', body);
    expect(sent.body).toEqual({ accepted: usage.length, duplicates: 0 });
  }

  const detail = async (id: string) => (await http().get(`/subscriptions/${id}`)).body;
  const balance = async (payer: string) => (await http().get(`/balances/${payer}?asset=${ASSET}`)).body;
  const topUp = (payer: string, amount: string) => http().post('/balances/top-ups', { payer, asset: ASSET, amount, paymentReference: txHash() });
  const usageRows = (subscriptionId: string) =>
    world.db.subscriptionUsageCharge.findMany({ where: { subscriptionId }, orderBy: [{ periodIndex: 'asc' }, { componentKey: 'asc' }] });

  beforeAll(async () => {
    world = await startSubscriptionsWorld(at(-DAY));
    merchant = createMerchant('Usage plan merchant');
    for (const meter of [
      { id: 'tokens', eventType: 'llm.call', aggregation: 'sum', valueProperty: '$.tokens' },
      { id: 'calls', eventType: 'llm.call', aggregation: 'count' },
      { id: 'latency', eventType: 'llm.call', aggregation: 'avg', valueProperty: '$.ms' },
    ])
      expect((await http().post('/usage/meters', meter)).status).toBe(201);
    planId = randomUUID();
    const plan = await http().post('/plans', {
      id: planId,
      name: 'Pro weekly + usage',
      product: 'pro-usage',
      amount: '2500000',
      asset: ASSET,
      periodUnit: 'week',
      periodCount: 1,
      usage: [
        { key: 'tokens', meterKey: 'tokens', unitAmount: '0.5', description: 'per token' },
        { key: 'calls', meterKey: 'calls', unitAmount: '1000' },
        { key: 'latency', meterKey: 'latency', unitAmount: '3' },
      ],
    });
    expect(plan.status).toBe(201);
    expect(plan.body.usage).toEqual([
      { key: 'tokens', meterKey: 'tokens', unitAmount: '0.5', description: 'per token' },
      { key: 'calls', meterKey: 'calls', unitAmount: '1000', description: null },
      { key: 'latency', meterKey: 'latency', unitAmount: '3', description: null },
    ]);
  });
  afterAll(async () => {
    await world?.close();
  });

  it('bills exactly the events of [start, end) at the renewal, rounds up, stays unpaid while the balance is short and is paid after a top-up', async () => {
    world.clock.set(at(-DAY));
    const terms = termsFor();
    await activate(terms);
    const id = terms.subscriptionId;
    const payer = terms.payer.toLowerCase();
    world.clock.set(at(WEEK));
    await sendUsage(
      id,
      { time: at(-1), tokens: 100, ms: 1000 }, // before period 0: not billed
      { time: at(0), tokens: 1.5, ms: 1 }, // the first millisecond of period 0
      { time: at(WEEK - 1), tokens: '2', ms: 2 }, // its last
      { time: at(3 * DAY), ms: 2 }, // counted, no tokens
      { time: at(WEEK), tokens: 1000, ms: 9 }, // the first of period 1
    );
    await sendUsage('someone-else', { time: at(DAY), tokens: 7 });

    // before the boundary: shown so far, nothing recorded
    const before = await detail(id);
    expect(before.usageCharges).toEqual([]);
    expect(before.currentUsage).toMatchObject({ periodIndex: 0, periodStart: at(0).toISOString(), periodEnd: at(WEEK).toISOString() });

    const result = await world.scheduler.runDue(at(WEEK));
    // the scan's totals count every subscription due then, other specs' on the shared database included: this one's
    // charges are checked below
    expect(result.charged).toBeGreaterThanOrEqual(1);
    expect(result.usageUnpaid).toBeGreaterThanOrEqual(3);
    // tokens 1.5 + 2 = 3.5 × 0.5 = 1.75 → 2; calls 3 × 1000; latency avg (1 + 2 + 2) / 3 × 3 = 5 exactly (not 5.000…01 → 6)
    const unpaid = await detail(id);
    expect(unpaid.usageCharges).toEqual([
      expect.objectContaining({ periodIndex: 0, componentKey: 'calls', quantity: '3', amount: '3000', state: 'unpaid', topUpNeeded: '3000' }),
      expect.objectContaining({ periodIndex: 0, componentKey: 'latency', quantity: '1.666666666666666667', amount: '5', state: 'unpaid', topUpNeeded: '5' }),
      expect.objectContaining({
        periodIndex: 0,
        componentKey: 'tokens',
        meterKey: 'tokens',
        unitAmount: '0.5',
        quantity: '3.5',
        amount: '2',
        periodStart: at(0).toISOString(),
        periodEnd: at(WEEK).toISOString(),
        state: 'unpaid',
        topUpNeeded: '2',
        transferId: null,
      }),
    ]);
    // the base renewal went ahead regardless
    expect(unpaid.state).toBe('active');
    expect(unpaid.currentUsage).toEqual({
      periodIndex: 1,
      periodStart: at(WEEK).toISOString(),
      periodEnd: at(2 * WEEK).toISOString(),
      components: [
        { componentKey: 'tokens', meterKey: 'tokens', unitAmount: '0.5', quantity: '1000', amount: '500' },
        { componentKey: 'calls', meterKey: 'calls', unitAmount: '1000', quantity: '1', amount: '1000' },
        { componentKey: 'latency', meterKey: 'latency', unitAmount: '3', quantity: '9', amount: '27' },
      ],
    });

    // a top-up that covers part: the short ones stay unpaid, with what is lacking now
    expect((await topUp(payer, '2500')).status).toBe(201);
    await world.scheduler.runDue(at(WEEK + 60_000));
    let rows = await usageRows(id);
    expect(rows.filter((r) => r.state === 'paid').length).toBeGreaterThanOrEqual(1);
    expect((await balance(payer)).spent).toBe(String(rows.filter((r) => r.state === 'paid').reduce((n, r) => n + BigInt(r.amount.toFixed()), 0n)));

    expect((await topUp(payer, '5000')).status).toBe(201);
    const paid = await world.scheduler.runDue(at(WEEK + 120_000));
    expect(paid.usageUnpaid).toBe(0);
    rows = await usageRows(id);
    expect(rows.map((r) => [r.componentKey, r.state])).toEqual([
      ['calls', 'paid'],
      ['latency', 'paid'],
      ['tokens', 'paid'],
    ]);
    expect(await balance(payer)).toMatchObject({ deposited: '7500', spent: '3007', available: '4493' });
    // booked as usage: prepaid → revenue, code 6, one transfer per charge
    for (const row of rows) {
      const transfer = await http().get(`/transfers/${row.transferId}`);
      expect(transfer.status).toBe(200);
      expect(transfer.body).toMatchObject({ amount: row.amount.toFixed(), code: TransferCode.usage, debitAccountId: prepaidAccountId(payer, ASSET) });
    }
  });

  it('records each period once under two concurrent scans, and draws once after a lost outcome and a restart', async () => {
    world.clock.set(at(-DAY));
    const terms = termsFor();
    await activate(terms);
    const id = terms.subscriptionId;
    const payer = terms.payer.toLowerCase();
    expect((await topUp(payer, '100000')).status).toBe(201);
    world.clock.set(at(WEEK));
    await sendUsage(id, { time: at(DAY), tokens: 41, ms: 4 }, { time: at(2 * DAY), tokens: 1, ms: 4 });

    const [a, b] = await Promise.all([world.scheduler.runDue(at(WEEK)), world.scheduler.runDue(at(WEEK))]);
    expect(a.charged + b.charged).toBe(1);
    let rows = await usageRows(id);
    expect(rows.map((r) => [r.periodIndex, r.componentKey, r.amount.toFixed(), r.state])).toEqual([
      [0, 'calls', '2000', 'paid'],
      [0, 'latency', '12', 'paid'],
      [0, 'tokens', '21', 'paid'],
    ]);
    expect(await balance(payer)).toMatchObject({ spent: '2033' });

    // the process stopped between the draw and recording it: the next scan makes the same draw, which the core answers `exists`
    await world.db.subscriptionUsageCharge.updateMany({ where: { subscriptionId: id }, data: { state: 'due', transferId: null, paidAt: null } });
    const startedAt = world.clock.now();
    await world.close();
    world = await startSubscriptionsWorld(startedAt);
    await world.scheduler.runDue(at(WEEK + 1000));
    rows = await usageRows(id);
    expect(rows.map((r) => r.state)).toEqual(['paid', 'paid', 'paid']);
    expect(await balance(payer)).toMatchObject({ spent: '2033' });
    // and the period is never recorded again
    await world.scheduler.runDue(at(WEEK + 2000));
    expect(await usageRows(id)).toHaveLength(3);
  });

  it('records a zero row and draws nothing for a period without usage; bills the last period at its end after a cancel at period end', async () => {
    world.clock.set(at(-DAY));
    const terms = termsFor();
    await activate(terms);
    const id = terms.subscriptionId;
    world.clock.set(at(WEEK));
    await world.scheduler.runDue(at(WEEK));
    const zero = await usageRows(id);
    expect(zero.map((r) => [r.componentKey, r.quantity?.toFixed(), r.amount.toFixed(), r.state, r.transferId])).toEqual([
      ['calls', '0', '0', 'nothing_due', null],
      ['latency', '0', '0', 'nothing_due', null],
      ['tokens', '0', '0', 'nothing_due', null],
    ]);
    await deliver(world, events.confirmed(chargePayment(terms, 1, 0), at(WEEK)));

    const canceled = await http().post(`/subscriptions/${id}/cancel`, { at: 'period_end' });
    expect(canceled.status).toBe(200);
    world.clock.set(at(2 * WEEK - 60_000));
    await sendUsage(id, { time: at(2 * WEEK - 1), tokens: 10 }, { time: at(2 * WEEK), tokens: 99 });
    // the scan comes a little after the boundary: the last period still ends at it
    await world.scheduler.runDue(at(2 * WEEK + 5_000));
    const ended = await detail(id);
    expect(ended.state).toBe('canceled');
    expect(ended.currentUsage).toBeNull();
    expect(ended.usageCharges.filter((c: { periodIndex: number }) => c.periodIndex === 1)).toEqual([
      expect.objectContaining({ componentKey: 'calls', quantity: '1', amount: '1000', periodEnd: at(2 * WEEK).toISOString(), state: 'unpaid' }),
      expect.objectContaining({ componentKey: 'latency', quantity: '0', amount: '0', state: 'nothing_due' }),
      expect.objectContaining({ componentKey: 'tokens', quantity: '10', amount: '5', state: 'unpaid' }),
    ]);
    await world.scheduler.runDue(at(3 * WEEK));
    expect((await usageRows(id)).map((r) => r.periodIndex)).toEqual([0, 0, 0, 1, 1, 1]);
  });

  it('records an amount beyond 2^256 − 1 as too_large, never drawn, without stopping the scan', async () => {
    expect((await http().post('/usage/meters', { id: 'huge', eventType: 'huge.call', aggregation: 'sum', valueProperty: '$.n' })).status).toBe(201);
    const hugePlan = randomUUID();
    const unitAmount = `1${'0'.repeat(59)}`;
    const created = await http().post('/plans', {
      id: hugePlan,
      name: 'Huge usage',
      product: 'huge',
      amount: '2500000',
      asset: ASSET,
      periodUnit: 'week',
      periodCount: 1,
      usage: [{ key: 'n', meterKey: 'huge', unitAmount }],
    });
    expect(created.status).toBe(201);
    world.clock.set(at(-DAY));
    const huge = termsFor({ planId: hugePlan });
    const plain = termsFor();
    await activate(huge);
    await activate(plain);
    world.clock.set(at(WEEK));
    const sent = await http().post('/usage/events', {
      id: randomUUID(),
      source: 'test/huge',
      type: 'huge.call',
      subject: huge.subscriptionId,
      time: at(DAY).toISOString(),
      data: { n: `1${'0'.repeat(30)}` },
    });
    expect(sent.body).toEqual({ accepted: 1, duplicates: 0 });
    const result = await world.scheduler.runDue(at(WEEK));
    expect(result.charged).toBeGreaterThanOrEqual(2);
    expect((await usageRows(huge.subscriptionId)).map((r) => [r.state, r.quantity, r.amount.toFixed()])).toEqual([['too_large', null, '0']]);
    // the other subscription of the batch was renewed and its period closed
    expect((await usageRows(plain.subscriptionId)).map((r) => r.state)).toEqual(['nothing_due', 'nothing_due', 'nothing_due']);
    expect((await detail(huge.subscriptionId)).usageCharges).toEqual([expect.objectContaining({ state: 'too_large', quantity: null, amount: '0' })]);
  });

  it('refuses usage components a plan cannot bill: 400 with a reason code per component', async () => {
    const base = { name: 'Bad usage', product: 'bad', amount: '100', asset: ASSET, periodUnit: 'month', periodCount: 1 };
    const missing = await http().post('/plans', {
      ...base,
      id: randomUUID(),
      usage: [
        { key: 'a', meterKey: 'tokens', unitAmount: '1' },
        { key: 'a', meterKey: 'no-such-meter', unitAmount: '1' },
      ],
    });
    expect(missing.status).toBe(400);
    expect(missing.body).toMatchObject({
      code: 'validation_failed',
      invalidParams: [
        { name: 'usage.1.key', reasonCode: 'duplicate_component_key' },
        { name: 'usage.1.meterKey', reasonCode: 'meter_not_found' },
      ],
    });
    // another merchant's meter is as absent as none
    const other = createMerchant('Usage plan merchant B');
    const foreign = await api(world, other.apiKey).post('/plans', { ...base, id: randomUUID(), usage: [{ key: 'a', meterKey: 'tokens', unitAmount: '1' }] });
    expect(foreign.body).toMatchObject({ code: 'validation_failed', invalidParams: [{ name: 'usage.0.meterKey', reasonCode: 'meter_not_found' }] });
    const stripe = await http().post('/plans', { ...base, id: randomUUID(), asset: 'stripe/usd', usage: [{ key: 'a', meterKey: 'tokens', unitAmount: '1' }] });
    expect(stripe.status).toBe(400);
    expect(stripe.body).toMatchObject({ code: 'validation_failed', invalidParams: [{ name: 'usage', reasonCode: 'usage_not_supported_on_stripe' }] });
    const price = await http().post('/plans', { ...base, id: randomUUID(), usage: [{ key: 'a', meterKey: 'tokens', unitAmount: '0' }] });
    expect(price.body).toMatchObject({ code: 'validation_failed', invalidParams: [{ name: 'usage.0.unitAmount', reason: 'must be greater than 0' }] });
    expect(await world.db.plan.count({ where: { merchantId: merchant.merchantId, product: 'bad' } })).toBe(0);
  });

  it('answers a retried create with the same components (200) and refuses other components under the id (409)', async () => {
    const body = {
      id: randomUUID(),
      name: 'Retry usage',
      product: 'retry',
      amount: '100',
      asset: ASSET,
      periodUnit: 'month',
      periodCount: 1,
      usage: [{ key: 'tokens', meterKey: 'tokens', unitAmount: '0.50' }],
    };
    expect((await http().post('/plans', body)).status).toBe(201);
    const again = await http().post('/plans', { ...body, usage: [{ key: 'tokens', meterKey: 'tokens', unitAmount: '0.5' }] });
    expect(again.status).toBe(200);
    const other = await http().post('/plans', { ...body, usage: [{ key: 'tokens', meterKey: 'tokens', unitAmount: '0.6' }] });
    expect(other.status).toBe(409);
    expect(other.body).toMatchObject({ code: 'plan_conflict', conflictingFields: ['usage'] });
  });
});
