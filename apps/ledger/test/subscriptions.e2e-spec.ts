import { randomUUID } from 'node:crypto';
import { privateKeyToAccount, generatePrivateKey } from 'viem/accounts';
import { periodBoundary } from '@mp/billing';
import type { SubscriptionCommand } from '@mp/clients';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { MERCHANT_NOTICES_QUEUE, verifyWebhookSignature } from '@mp/clients';
import { createMerchant, setWebhook, type TestMerchant } from '../../../test/support/merchants';
import { startWebhookReceiver, until } from '../../../test/support/webhook-receiver';
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
const ASSET = `${NETWORK}/${TOKEN}`;
const PAY_TO = '0x6813eb9362372eef6200f3b1dbc3f819671cba69';
const DAY = 86_400_000;
const START = new Date('2027-01-31T12:00:00Z');

type Charge = Extract<SubscriptionCommand, { type: 'charge' }>;

/**
 * The ledger's half of subscriptions (issue 13), driven through the contract exactly as the facilitator drives it:
 * payment events in, commands and merchant notices out, the clock a ManualClock the spec moves.
 */
describe('subscriptions in the ledger', () => {
  let world: SubscriptionsWorld;
  let merchant: TestMerchant;
  let other: TestMerchant;

  beforeAll(async () => {
    world = await startSubscriptionsWorld(START);
    merchant = createMerchant('Subscriptions merchant');
    other = createMerchant('Subscriptions merchant B');
  });
  afterAll(async () => {
    await world?.close();
  });

  const merchantApi = () => api(world, merchant.apiKey);

  const plan = async (extra: Record<string, unknown> = {}) => {
    const body = {
      id: randomUUID(),
      name: `Pro ${randomUUID().slice(0, 8)}`,
      product: `pro-${randomUUID().slice(0, 8)}`,
      amount: '10000000',
      asset: ASSET,
      periodUnit: 'month',
      periodCount: 1,
      ...extra,
    };
    const created = await merchantApi().post('/plans', body);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    return body;
  };

  /** Moves the clock to t and runs the renewal scan there. */
  const scanAt = async (t: Date) => {
    world.clock.set(t);
    return world.scheduler.runDue(t);
  };

  const charges = async (s: SubscriptionTerms) => (await commandsOf(world, s.subscriptionId)).filter((c): c is Charge => c.type === 'charge');
  const view = async (s: SubscriptionTerms) => (await merchantApi().get(`/subscriptions/${s.subscriptionId}`)).body;
  const entitled = async (s: SubscriptionTerms, product: string, at?: Date) =>
    (await merchantApi().get(`/entitlements?payer=${s.payer}&product=${product}${at ? `&at=${at.toISOString()}` : ''}`)).body;

  /** Activates a subscription at the clock's time and, unless told otherwise, confirms its period 0 payment. */
  const subscribe = async (extra: Partial<SubscriptionTerms> = {}, { pay = true } = {}) => {
    const now = world.clock.now();
    const terms: SubscriptionTerms = {
      subscriptionId: newSubscriptionId(),
      merchantId: merchant.merchantId,
      payer: privateKeyToAccount(generatePrivateKey()).address,
      payTo: PAY_TO,
      amount: '10000000',
      asset: TOKEN,
      network: NETWORK,
      periodUnit: 'month',
      periodCount: 1,
      anchor: now,
      ...extra,
    };
    const payment = chargePayment(terms, 0, 0);
    await deliver(world, events.activated(terms, payment, now), events.verified(payment, now));
    if (pay) await deliver(world, events.confirmed(payment, now));
    return { terms, payment };
  };

  /** Pays the charge commands just published, each once. */
  const pay = async (terms: SubscriptionTerms, commands: Charge[]) => {
    for (const c of commands) {
      const payment = chargePayment(terms, c.periodIndex, c.attempt);
      await deliver(world, events.verified(payment, world.clock.now()), events.confirmed(payment, world.clock.now()));
    }
  };

  it('charges 13 monthly periods from a Jan 31 anchor, each once, at dates clamped to the month end', async () => {
    world.clock.set(START);
    const { terms } = await subscribe({ authorizedPeriods: null });
    expect(await view(terms)).toMatchObject({
      state: 'active',
      lastPaidIndex: 0,
      paidThrough: '2027-02-28T12:00:00.000Z',
      nextActionAt: '2027-02-28T12:00:00.000Z',
    });
    let seen = 0;
    for (let n = 1; n <= 12; n++) {
      const start = periodBoundary(START, { unit: 'month', count: 1 }, n);
      // just before the boundary: nothing; at it, the one charge; later in the period: nothing more
      await scanAt(new Date(start.getTime() - 1));
      await scanAt(start);
      await scanAt(new Date(start.getTime() + 3 * DAY));
      const now = await charges(terms);
      expect(now.length).toBe(seen + 1);
      const fresh = now.slice(seen);
      expect(fresh).toMatchObject([{ periodIndex: n, attempt: 0, periodStart: start.toISOString(), commandId: `charge-${terms.subscriptionId}-${n}-0` }]);
      await pay(terms, fresh);
      seen = now.length;
    }
    const all = await charges(terms);
    expect(all.map((c) => c.periodStart.slice(0, 10))).toEqual([
      '2027-02-28',
      '2027-03-31',
      '2027-04-30',
      '2027-05-31',
      '2027-06-30',
      '2027-07-31',
      '2027-08-31',
      '2027-09-30',
      '2027-10-31',
      '2027-11-30',
      '2027-12-31',
      '2028-01-31',
    ]);
    const detail = await view(terms);
    expect(detail).toMatchObject({ state: 'active', lastPaidIndex: 12 });
    expect(detail.charges.filter((c: any) => c.state === 'paid').map((c: any) => c.periodIndex)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    // period 0 and each renewal told the merchant once, in order
    const notices = await noticesOf(world, terms.subscriptionId);
    expect(notices.map((n) => n.type)).toEqual(['subscription.activated', ...Array(12).fill('subscription.renewed')]);
    expect(new Set(notices.map((n) => n.noticeId)).size).toBe(13);
  });

  it('bills a weekly plan every 2 weeks, and after a skipped period charges the current one exactly once', async () => {
    world.clock.set(START);
    const { terms } = await subscribe({ periodUnit: 'week', periodCount: 2 });
    await scanAt(new Date(START.getTime() + 14 * DAY));
    const first = await charges(terms);
    expect(first).toMatchObject([{ periodIndex: 1, periodStart: new Date(START.getTime() + 14 * DAY).toISOString() }]);
    await pay(terms, first);
    // nothing runs through period 2 (the ledger was down): at period 3 only period 3 is charged
    const period3 = new Date(START.getTime() + 42 * DAY + 3_600_000);
    await scanAt(period3);
    await scanAt(new Date(period3.getTime() + 1_000));
    const after = await charges(terms);
    expect(after.slice(1)).toMatchObject([{ periodIndex: 3, attempt: 0, periodStart: new Date(START.getTime() + 42 * DAY).toISOString() }]);
    await pay(terms, after.slice(1));
    expect(await view(terms)).toMatchObject({ state: 'active', lastPaidIndex: 3 });
  });

  it("starts a plan's trial at activation and charges period 0 at the anchor, where the trial ends", async () => {
    world.clock.set(START);
    const { product, id: planId } = await plan({ trialDays: 7, periodUnit: 'week', periodCount: 1 });
    const anchor = new Date(START.getTime() + 7 * DAY);
    const { terms } = await subscribe({ planId, anchor, periodUnit: 'week', periodCount: 1 }, { pay: false });
    expect(await view(terms)).toMatchObject({ state: 'trialing', trialDays: 7, product, nextActionAt: anchor.toISOString() });
    expect(await entitled(terms, product)).toMatchObject({ entitled: true, reason: 'trial', paidThrough: anchor.toISOString() });
    await scanAt(new Date(anchor.getTime() - 1));
    expect(await charges(terms)).toEqual([]);
    await scanAt(anchor);
    const first = await charges(terms);
    expect(first).toMatchObject([{ periodIndex: 0, attempt: 0, periodStart: anchor.toISOString() }]);
    // the trial is over and period 0 is not paid yet: no entitlement until it is
    expect(await entitled(terms, product)).toMatchObject({ entitled: false, reason: 'not_paid' });
    await pay(terms, first);
    expect(await view(terms)).toMatchObject({ state: 'active', lastPaidIndex: 0 });
    expect(await entitled(terms, product)).toMatchObject({ entitled: true, reason: 'paid_period' });
    expect((await noticesOf(world, terms.subscriptionId)).map((n) => n.type)).toEqual(['subscription.activated', 'subscription.renewed']);
  });

  it('takes duplicate and out-of-order events: an outcome before its activation waits for it, a redelivery changes nothing', async () => {
    world.clock.set(START);
    const { product, id: planId } = await plan();
    const terms: SubscriptionTerms = {
      subscriptionId: newSubscriptionId(),
      merchantId: merchant.merchantId,
      payer: privateKeyToAccount(generatePrivateKey()).address,
      payTo: PAY_TO,
      amount: '10000000',
      asset: TOKEN,
      network: NETWORK,
      periodUnit: 'month',
      periodCount: 1,
      anchor: START,
      planId,
    };
    const payment = chargePayment(terms, 0, 0);
    const activated = events.activated(terms, payment, START);
    const confirmed = events.confirmed(payment, START);
    // the confirmation first: retried until the activation is in
    await deliver(world, confirmed, events.verified(payment, START), activated);
    // the same events again (the relay publishes again what it did not see acknowledged), under new job ids
    const again = (m: typeof confirmed) => ({ ...m });
    await world.queues.events.add(confirmed.type, again(confirmed), { jobId: `again-${confirmed.eventId}` });
    await world.queues.events.add(activated.type, again(activated), { jobId: `again-${activated.eventId}` });
    await new Promise((r) => setTimeout(r, 500));
    const detail = await view(terms);
    expect(detail).toMatchObject({ state: 'active', lastPaidIndex: 0, product, planId, planNote: null });
    expect(detail.transitions.map((t: any) => t.event)).toEqual(['activated']);
    expect(detail.charges).toMatchObject([{ periodIndex: 0, attempt: 0, state: 'paid', paymentId: payment.id }]);
  });

  it('takes back a period whose payment left the chain in a reorg, until it is confirmed anew', async () => {
    world.clock.set(START);
    const { id: planId, product } = await plan();
    const { terms } = await subscribe({ planId });
    const period1 = periodBoundary(START, { unit: 'month', count: 1 }, 1);
    await scanAt(period1);
    const payment = chargePayment(terms, 1, 0);
    const mined = events.confirmed(payment, period1);
    await deliver(world, events.verified(payment, period1), mined);
    expect(await entitled(terms, product, period1)).toMatchObject({ entitled: true });
    await deliver(world, events.reorged(payment, period1));
    expect(await view(terms)).toMatchObject({ lastPaidIndex: 0, inFlight: { periodIndex: 1, attempt: 0 } });
    expect(await entitled(terms, product, period1)).toMatchObject({ entitled: false, reason: 'not_paid' });
    await deliver(world, events.confirmed(payment, period1, mined.payment.txHash!));
    expect(await view(terms)).toMatchObject({ state: 'active', lastPaidIndex: 1, inFlight: null });
    expect(await entitled(terms, product, period1)).toMatchObject({ entitled: true });
    expect((await charges(terms)).length).toBe(1);
  });

  it('binds a plan only when its terms are the signed ones', async () => {
    world.clock.set(START);
    const { id: planId } = await plan({ amount: '5000000' });
    const { terms } = await subscribe({ planId });
    expect(await view(terms)).toMatchObject({ planId, planNote: 'plan_mismatch', product: null, state: 'active' });
    const unknown = await subscribe({ planId: randomUUID() });
    expect(await view(unknown.terms)).toMatchObject({ planNote: 'plan_not_found', product: null });
  });

  it('retries a failed renewal inside its period (past_due), then cancels it at the boundary as the plan says, voiding the open attempt', async () => {
    world.clock.set(START);
    const { id: planId, product } = await plan();
    const { terms } = await subscribe({ planId });
    const period1 = periodBoundary(START, { unit: 'month', count: 1 }, 1);
    await scanAt(period1);
    const [renewal] = await charges(terms);
    const failedPayment = chargePayment(terms, 1, 0);
    await deliver(world, events.verified(failedPayment, period1), events.failed(failedPayment, period1));
    let detail = await view(terms);
    expect(detail).toMatchObject({ state: 'past_due', dunning: { periodIndex: 1, nextAttempt: 1 } });
    expect(renewal.attempt).toBe(0);
    // retries at the plan's dunning times, each a new command, each failing
    for (let attempt = 1; attempt <= 4; attempt++) {
      const retryAt = new Date(detail.nextActionAt);
      expect(retryAt.getTime()).toBeLessThan(periodBoundary(START, { unit: 'month', count: 1 }, 2).getTime());
      await scanAt(new Date(retryAt.getTime() - 1));
      expect((await charges(terms)).length).toBe(attempt);
      await scanAt(retryAt);
      const all = await charges(terms);
      expect(all.at(-1)).toMatchObject({ periodIndex: 1, attempt });
      if (attempt < 4) {
        const retry = chargePayment(terms, 1, attempt);
        await deliver(world, events.failed(retry, retryAt));
      }
      detail = await view(terms);
    }
    // no entitlement for the unpaid period, even while past_due
    expect(await entitled(terms, product)).toMatchObject({ entitled: false, state: 'past_due', reason: 'not_paid' });
    // the fourth retry is still open when the period ends: voided, and dunning is exhausted
    const period2 = periodBoundary(START, { unit: 'month', count: 1 }, 2);
    await scanAt(period2);
    detail = await view(terms);
    expect(detail).toMatchObject({ state: 'canceled', endedReason: 'dunning_exhausted', inFlight: null, nextActionAt: null });
    expect(detail.charges.find((c: any) => c.attempt === 4)).toMatchObject({ state: 'voided', outcomeReason: 'period_ended' });
    expect((await charges(terms)).length).toBe(5);
    // the voided attempt confirms late: booked by the facilitator's events, flagged, never counted
    const late = chargePayment(terms, 1, 4);
    await deliver(world, events.verified(late, period2), events.confirmed(late, period2));
    detail = await view(terms);
    expect(detail).toMatchObject({ state: 'canceled', lastPaidIndex: 0 });
    expect(detail.charges.find((c: any) => c.attempt === 4)).toMatchObject({ state: 'voided', latePaidAt: period2.toISOString(), paymentId: late.id });
    expect((await noticesOf(world, terms.subscriptionId)).map((n) => n.type)).toEqual([
      'subscription.activated',
      'subscription.past_due',
      'subscription.payment_failed',
      'subscription.payment_failed',
      'subscription.payment_failed',
      'subscription.canceled',
    ]);
    await scanAt(new Date(period2.getTime() + 40 * DAY));
    expect((await charges(terms)).length).toBe(5);
  });

  it('keeps a subscription unpaid when its plan says so, and a retry that succeeds makes it active again', async () => {
    world.clock.set(START);
    const { id: planId } = await plan({ onDunningExhausted: 'unpaid' });
    const unpaid = await subscribe({ planId });
    const recovered = await subscribe({ planId });
    const period1 = periodBoundary(START, { unit: 'month', count: 1 }, 1);
    await scanAt(period1);
    for (const { terms } of [unpaid, recovered]) await deliver(world, events.failed(chargePayment(terms, 1, 0), period1));
    const retryAt = new Date((await view(recovered.terms)).nextActionAt);
    await scanAt(retryAt);
    const [, retry] = await charges(recovered.terms);
    await pay(recovered.terms, [retry]);
    expect(await view(recovered.terms)).toMatchObject({ state: 'active', lastPaidIndex: 1, dunning: null });
    await deliver(world, events.failed(chargePayment(unpaid.terms, 1, 1), retryAt));
    await scanAt(periodBoundary(START, { unit: 'month', count: 1 }, 2));
    expect(await view(unpaid.terms)).toMatchObject({ state: 'unpaid', nextActionAt: null });
    expect((await noticesOf(world, unpaid.terms.subscriptionId)).at(-1)?.type).toBe('subscription.unpaid');
  });

  it('cancels at period end: served to the end of the paid period, then canceled, nothing more charged', async () => {
    world.clock.set(START);
    const { id: planId, product } = await plan();
    const { terms } = await subscribe({ planId });
    world.clock.set(new Date(START.getTime() + 10 * DAY));
    const answer = await merchantApi().post(`/subscriptions/${terms.subscriptionId}/cancel`, { reason: 'customer asked' });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    expect(answer.body).toMatchObject({ state: 'active', cancel: { at: 'period_end', by: 'merchant', reason: 'customer asked', refund: null } });
    // asked again: the first outcome
    expect((await merchantApi().post(`/subscriptions/${terms.subscriptionId}/cancel`, { at: 'period_end' })).body.cancel).toEqual(answer.body.cancel);
    const cancels = (await commandsOf(world, terms.subscriptionId)).filter((c) => c.type === 'cancel');
    expect(cancels).toMatchObject([{ commandId: `cancel-${terms.subscriptionId}-period_end`, at: 'period_end', effectiveAt: '2027-02-28T12:00:00.000Z' }]);
    const end = periodBoundary(START, { unit: 'month', count: 1 }, 1);
    expect(await entitled(terms, product, new Date(end.getTime() - 1))).toMatchObject({ entitled: true });
    await scanAt(end);
    expect(await view(terms)).toMatchObject({ state: 'canceled', endedReason: 'period_ended_after_cancel' });
    expect(await charges(terms)).toEqual([]);
    expect(await entitled(terms, product, end)).toMatchObject({ entitled: false, reason: 'ended' });
    await deliver(world, events.canceled(terms, chargePayment(terms, 0, 0), 'period_end', end));
    expect((await view(terms)).cancel.confirmedAt).toBe(end.toISOString());
  });

  it('cancels immediately: entitlement ends now, the unused part of the paid period is refunded through the facilitator, once', async () => {
    world.clock.set(START);
    const { id: planId, product } = await plan({ cancelRefund: 'unused_part' });
    const { terms, payment } = await subscribe({ planId });
    // first at period end, then upgraded to immediately, 7 of 28 days into the period
    world.clock.set(new Date(START.getTime() + 3 * DAY));
    await merchantApi().post(`/subscriptions/${terms.subscriptionId}/cancel`, {});
    const cancelAt = new Date(START.getTime() + 7 * DAY);
    world.clock.set(cancelAt);
    const unused = (10_000_000n * 21n) / 28n;
    const answer = await merchantApi().post(`/subscriptions/${terms.subscriptionId}/cancel`, { at: 'immediately' });
    expect(answer.body).toMatchObject({
      state: 'canceled',
      endedAt: cancelAt.toISOString(),
      cancel: { at: 'immediately', refund: { amount: String(unused), state: 'refund_requested' } },
    });
    expect(await entitled(terms, product, new Date(cancelAt.getTime() - 1))).toMatchObject({ entitled: true });
    expect(await entitled(terms, product, cancelAt)).toMatchObject({ entitled: false, reason: 'canceled' });
    const refundCommandId = `refund-${terms.subscriptionId}-0`;
    expect(await commandsOf(world, terms.subscriptionId)).toEqual([
      expect.objectContaining({ commandId: `cancel-${terms.subscriptionId}-period_end` }),
      expect.objectContaining({ commandId: `cancel-${terms.subscriptionId}-immediately` }),
      {
        type: 'refund',
        commandId: refundCommandId,
        subscriptionId: terms.subscriptionId,
        merchantId: merchant.merchantId,
        requestedAt: cancelAt.toISOString(),
        periodIndex: 0,
        amount: String(unused),
        reason: 'unused_part',
      },
    ]);
    // asking again answers the first cancel and asks for nothing more
    await merchantApi().post(`/subscriptions/${terms.subscriptionId}/cancel`, { at: 'immediately' });
    expect((await commandsOf(world, terms.subscriptionId)).filter((c) => c.type === 'refund')).toHaveLength(1);

    // a command lost on its way is published again by the sweep while no outcome has come, under the same id
    const later = new Date(cancelAt.getTime() + world.config.billing.commandRepublishAfterMs + 1);
    await world.queues.commands.remove(`subscription-command-${refundCommandId}`);
    await world.scheduler.sweep(later);
    expect((await commandsOf(world, terms.subscriptionId)).filter((c) => c.type === 'refund')).toEqual([
      expect.objectContaining({ commandId: refundCommandId, periodIndex: 0, amount: String(unused) }),
    ]);

    // a refund of the charge the merchant made on its own (another key) is booked but is not this refund
    world.clock.set(new Date(cancelAt.getTime() + 60_000));
    await deliver(world, events.refunded(payment, 1n, 'merchant-own-key', world.clock.now()));
    expect((await view(terms)).cancel.refund).toEqual({ amount: String(unused), state: 'refund_requested' });

    // the facilitator's outcome: refunded, told to the merchant; a redelivery or another outcome changes nothing
    const refunded = events.refunded(payment, unused, refundCommandId, world.clock.now());
    await deliver(world, refunded);
    await deliver(world, { ...refunded, eventId: String(BigInt(refunded.eventId) + 1_000_000n) });
    await deliver(world, events.refundFailed(payment, unused, refundCommandId, world.clock.now()));
    const detail = await view(terms);
    expect(detail).toMatchObject({ state: 'canceled', cancel: { refund: { amount: String(unused), state: 'refunded' } } });
    expect(detail.transitions.at(-1)).toMatchObject({ event: 'refunded', from: 'canceled', to: 'canceled', cause: { periodIndex: 0, amount: String(unused) } });
    expect((await noticesOf(world, terms.subscriptionId)).map((n) => n.type).filter((t) => t.includes('refund'))).toEqual(['subscription.refunded']);
    // booked as any refund: one transfer of its amount, however often its event came
    const reference = (refunded.data as { reference: string }).reference;
    const booked = await world.db.ledgerTransfer.findMany({ where: { merchantId: merchant.merchantId, code: 2, reference } });
    expect(booked.map((t) => t.amount.toString())).toEqual([String(unused)]);

    // once refunded, the sweep asks for nothing
    await world.queues.commands.remove(`subscription-command-${refundCommandId}`);
    await world.scheduler.sweep(new Date(later.getTime() + 60_000));
    expect((await commandsOf(world, terms.subscriptionId)).filter((c) => c.type === 'refund')).toEqual([]);
  });

  it('has one outcome for a cancel racing a renewal, in both orders', async () => {
    world.clock.set(START);
    const { id: planId, product } = await plan({ cancelRefund: 'unused_part' });
    const renewalFirst = await subscribe({ planId });
    const cancelFirst = await subscribe({ planId });
    const period1 = periodBoundary(START, { unit: 'month', count: 1 }, 1);
    // cancel first: the scan at the boundary charges nothing
    world.clock.set(new Date(period1.getTime() - 1));
    await merchantApi().post(`/subscriptions/${cancelFirst.terms.subscriptionId}/cancel`, { at: 'immediately' });
    await scanAt(period1);
    expect(await charges(cancelFirst.terms)).toEqual([]);
    // a millisecond left of the period rounds to a zero refund: nothing is asked of the facilitator
    expect((await view(cancelFirst.terms)).cancel.refund).toBeNull();
    expect((await commandsOf(world, cancelFirst.terms.subscriptionId)).map((c) => c.type)).toEqual(['cancel']);
    // renewal first: it is in flight when the cancel arrives; it completes and counts, and the refund covers its unused part
    const [renewal] = await charges(renewalFirst.terms);
    expect(renewal).toMatchObject({ periodIndex: 1 });
    const cancelAt = new Date(period1.getTime() + 7 * DAY);
    world.clock.set(cancelAt);
    const canceled = await merchantApi().post(`/subscriptions/${renewalFirst.terms.subscriptionId}/cancel`, { at: 'immediately' });
    expect(canceled.body).toMatchObject({ state: 'canceled', inFlight: { periodIndex: 1 }, cancel: { refund: null } });
    await pay(renewalFirst.terms, [renewal]);
    const detail = await view(renewalFirst.terms);
    expect(detail).toMatchObject({
      state: 'canceled',
      lastPaidIndex: 1,
      cancel: { refund: { amount: String((10_000_000n * 24n) / 31n), state: 'refund_requested' } },
    });
    // the refund is of the period the renewal paid; a refund that failed on its rail is recorded and told
    const refunds = (await commandsOf(world, renewalFirst.terms.subscriptionId)).filter((c) => c.type === 'refund');
    expect(refunds).toEqual([expect.objectContaining({ commandId: `refund-${renewalFirst.terms.subscriptionId}-1`, periodIndex: 1 })]);
    const renewalPayment = {
      ...chargePayment(renewalFirst.terms, 1, 0),
      id: detail.charges.find((c: { periodIndex: number }) => c.periodIndex === 1).paymentId,
    };
    await deliver(world, events.refundFailed(renewalPayment, (10_000_000n * 24n) / 31n, refunds[0]!.commandId, world.clock.now()));
    expect((await view(renewalFirst.terms)).cancel.refund.state).toBe('refund_failed');
    expect((await noticesOf(world, renewalFirst.terms.subscriptionId)).at(-1)).toMatchObject({ type: 'subscription.refund_failed' });
    expect(await entitled(renewalFirst.terms, product, cancelAt)).toMatchObject({ entitled: false, reason: 'canceled' });
    await scanAt(periodBoundary(START, { unit: 'month', count: 1 }, 3));
    expect((await charges(renewalFirst.terms)).length).toBe(1);
  });

  it("revokes on the payer's on-chain cancelAuthorization: served to the end of the paid period, with its reason", async () => {
    world.clock.set(START);
    const { id: planId, product } = await plan();
    const { terms, payment } = await subscribe({ planId });
    const at = new Date(START.getTime() + 5 * DAY);
    world.clock.set(at);
    await deliver(world, events.revoked(terms, payment, at));
    expect(await view(terms)).toMatchObject({ state: 'active', cancel: { at: 'period_end', by: 'rail', reason: 'authorization_canceled' } });
    expect(await entitled(terms, product, new Date(at.getTime() + DAY))).toMatchObject({ entitled: true });
    await scanAt(periodBoundary(START, { unit: 'month', count: 1 }, 1));
    expect(await view(terms)).toMatchObject({ state: 'canceled' });
    expect(await charges(terms)).toEqual([]);
    expect((await noticesOf(world, terms.subscriptionId)).map((n) => n.type)).toEqual([
      'subscription.activated',
      'subscription.revoked',
      'subscription.canceled',
    ]);
  });

  it('cancels a renewal the facilitator refused as revoked; refusals for other reasons go through dunning', async () => {
    world.clock.set(START);
    const revoked = await subscribe();
    const windowClosed = await subscribe();
    const period1 = periodBoundary(START, { unit: 'month', count: 1 }, 1);
    await scanAt(period1);
    await deliver(world, events.refused(revoked.terms, revoked.payment, 1, 0, 'revoked', period1));
    await deliver(world, events.refused(windowClosed.terms, windowClosed.payment, 1, 0, 'rail_error', period1));
    expect(await view(revoked.terms)).toMatchObject({ cancel: { by: 'rail', reason: 'charge_refused:revoked' }, inFlight: null });
    expect(await view(windowClosed.terms)).toMatchObject({ state: 'past_due', dunning: { periodIndex: 1, nextAttempt: 1 } });
  });

  it('lets the payer cancel with a signature; a wrong signer or a stale deadline is a 401 that changes nothing', async () => {
    world.clock.set(START);
    const key = generatePrivateKey();
    const payer = privateKeyToAccount(key);
    const { terms } = await subscribe({ payer: payer.address });
    const path = `/subscriptions/${terms.subscriptionId}/cancel`;
    const nowS = Math.floor(START.getTime() / 1000);
    const sign = (account: typeof payer, at: string, deadline: number) =>
      account.signMessage({ message: `mp-subscription:cancel:${at}:${terms.subscriptionId}:${deadline}` });
    const stranger = privateKeyToAccount(generatePrivateKey());
    const refusals = [
      { signature: await sign(stranger, 'period_end', nowS + 60), deadline: String(nowS + 60) },
      { signature: await sign(payer, 'period_end', nowS - 1), deadline: String(nowS - 1) },
      { signature: await sign(payer, 'period_end', nowS + 3600), deadline: String(nowS + 3600) },
      // signed for period_end, sent as immediately
      { signature: await sign(payer, 'period_end', nowS + 60), deadline: String(nowS + 60), at: 'immediately' },
    ];
    for (const body of refusals) {
      const answer = await api(world).post(path, body);
      expect(answer.status, JSON.stringify(answer.body)).toBe(401);
      expect(answer.body.code).toBe('payer_proof_invalid');
    }
    expect((await view(terms)).cancel).toBeNull();
    // no key and no proof at all
    expect((await api(world).post(path, {})).status).toBe(401);
    const ok = await api(world).post(path, { signature: await sign(payer, 'period_end', nowS + 60), deadline: String(nowS + 60), reason: 'too pricey' });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.cancel).toMatchObject({ at: 'period_end', by: 'payer', reason: 'too pricey' });
    // the subscriber's status, with its own proof
    const statusSig = await payer.signMessage({ message: `mp-subscription:status:${terms.subscriptionId}:${nowS + 60}` });
    const status = await api(world).get(`/subscriptions/${terms.subscriptionId}/status?signature=${statusSig}&deadline=${nowS + 60}`);
    expect(status.status, JSON.stringify(status.body)).toBe(200);
    expect(status.body).toMatchObject({ id: terms.subscriptionId, state: 'active', entitled: true, cancel: { by: 'payer' } });
    const wrongStatus = await api(world).get(
      `/subscriptions/${terms.subscriptionId}/status?signature=${await sign(payer, 'period_end', nowS + 60)}&deadline=${nowS + 60}`,
    );
    expect(wrongStatus.status).toBe(401);
  });

  it('gives no entitlement without a paid period: unknown payer, unpaid activation, another product', async () => {
    world.clock.set(START);
    const { id: planId, product } = await plan();
    const { terms } = await subscribe({ planId }, { pay: false });
    expect(await view(terms)).toMatchObject({ state: 'incomplete' });
    expect(await entitled(terms, product)).toMatchObject({ entitled: false, subscriptionId: terms.subscriptionId, state: 'incomplete', reason: 'not_paid' });
    expect(await entitled({ ...terms, payer: '0x0000000000000000000000000000000000000001' }, product)).toEqual({
      entitled: false,
      subscriptionId: null,
      state: null,
      paidThrough: null,
      reason: 'no_subscription',
    });
    // period 0 never paid: the activation expires when it ends
    await scanAt(periodBoundary(START, { unit: 'month', count: 1 }, 1));
    expect(await view(terms)).toMatchObject({ state: 'incomplete_expired', endedReason: 'activation_expired' });
    expect((await merchantApi().post(`/subscriptions/${terms.subscriptionId}/cancel`, {})).body).toMatchObject({ status: 409, code: 'subscription_ended' });
  });

  it('answers 400 on bad input and changes nothing; another merchant gets 404', async () => {
    world.clock.set(START);
    const { terms } = await subscribe();
    const before = await view(terms);
    const path = `/subscriptions/${terms.subscriptionId}/cancel`;
    for (const body of [{ at: 'tomorrow' }, { reason: '' }, { signature: '0x12', deadline: '1' }, { extra: 1 }, { signature: `0x${'11'.repeat(65)}` }]) {
      const answer = await merchantApi().post(path, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.code).toBe('validation_failed');
    }
    expect((await merchantApi().post('/subscriptions/short/cancel', {})).status).toBe(400);
    expect((await merchantApi().get('/subscriptions?state=sleeping')).status).toBe(400);
    expect((await merchantApi().get('/entitlements?payer=0xabc')).status).toBe(400);
    expect((await merchantApi().get('/entitlements?payer=0xabc&product=pro&at=yesterday')).status).toBe(400);
    expect(await view(terms)).toEqual(before);
    const otherApi = api(world, other.apiKey);
    expect((await otherApi.get(`/subscriptions/${terms.subscriptionId}`)).status).toBe(404);
    expect((await otherApi.post(path, { at: 'immediately' })).status).toBe(404);
    expect((await otherApi.get(`/subscriptions?payer=${terms.payer}`)).body.data).toEqual([]);
    expect(await view(terms)).toEqual(before);
  });

  it("is told to the merchant: the facilitator takes the ledger's subscription notices as they are and delivers them signed", async () => {
    world.clock.set(START);
    const receiver = await startWebhookReceiver();
    const seller = createMerchant('Subscription notices merchant');
    setWebhook(seller.merchantId, receiver.url);
    receiver.verifyWith(seller.webhookSecret);
    const { terms } = await subscribe({ merchantId: seller.merchantId });
    const [notice] = await noticesOf(world, terms.subscriptionId);
    expect(notice).toMatchObject({ type: 'subscription.activated', merchantId: seller.merchantId, data: { state: 'active', event: 'activated' } });
    // the ledger's job, as it published it, on the facilitator's own queue
    const redis = new Redis(world.facilitator.config.redisUrl, { maxRetriesPerRequest: null });
    const facilitatorNotices = new Queue(MERCHANT_NOTICES_QUEUE, { connection: redis, prefix: world.facilitator.config.queuePrefix });
    try {
      await facilitatorNotices.add(notice.type, notice, { jobId: `notice-${notice.noticeId}` });
      const got = await until('the subscription webhook', () => receiver.received[0]);
      expect(verifyWebhookSignature({ secret: seller.webhookSecret, headers: got.headers, body: got.body })).toMatchObject({ ok: true });
      expect(JSON.parse(got.body)).toMatchObject({
        type: 'subscription.activated',
        data: { subscriptionId: terms.subscriptionId, state: 'active', version: 1 },
      });
    } finally {
      await facilitatorNotices.close();
      redis.disconnect();
      receiver.close();
    }
  });

  it('lists subscriptions newest first in pages, filtered by payer, state and plan', async () => {
    world.clock.set(START);
    const { id: planId } = await plan();
    const payer = privateKeyToAccount(generatePrivateKey()).address;
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await subscribe({ planId, payer })).terms.subscriptionId);
    const first = await merchantApi().get(`/subscriptions?payer=${payer.toUpperCase().replace('0X', '0x')}&limit=2`);
    expect(first.body.data.map((s: any) => s.id)).toEqual([made[2], made[1]]);
    const second = await merchantApi().get(`/subscriptions?payer=${payer}&limit=2&cursor=${first.body.nextCursor}`);
    expect(second.body).toMatchObject({ data: [{ id: made[0] }], nextCursor: null });
    expect((await merchantApi().get(`/subscriptions?plan=${planId}&state=active`)).body.data.length).toBe(3);
  });
});
