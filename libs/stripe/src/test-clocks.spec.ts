import Stripe from 'stripe';
import { prepareSubscriber, startWebhookReceiver, subscribe } from '../test/billing';
import { startFixture, type FakeStripeFixture } from '../test/fixture';
import type { StripeEvent } from './store';

const SECRET = 'whsec_billing_secret';
const HOUR = 3600;
const at = (iso: string) => Date.parse(iso) / 1000;
const iso = (seconds: number) => new Date(seconds * 1000).toISOString();

describe('Billing on test clocks', () => {
  let f: FakeStripeFixture;
  let receiver: Awaited<ReturnType<typeof startWebhookReceiver>>;
  beforeAll(async () => {
    receiver = await startWebhookReceiver();
    f = await startFixture({ webhooks: [{ url: receiver.url, secret: SECRET }] });
  });
  afterAll(async () => {
    await f.fake.stop();
    await receiver.close();
  });

  const failure = (promise: Promise<unknown>) => promise.then(() => undefined).catch((error: unknown) => error);
  const clockAt = (frozenTime: string, name = 'billing') => f.stripe.testHelpers.testClocks.create({ frozen_time: at(frozenTime), name });
  const advance = (clock: string, to: number) => f.stripe.testHelpers.testClocks.advance(clock, { frozen_time: to });
  const typesSince = (index: number) =>
    f.fake
      .events()
      .slice(index)
      .map((event) => event.type);
  const cycleInvoices = async (subscription: string) =>
    (await f.stripe.invoices.list({ subscription, limit: 100 })).data.filter((invoice) => invoice.billing_reason === 'subscription_cycle').reverse();

  /** Every event the fake recorded, as the endpoint received it: signed, and verified by the SDK. */
  async function deliveredEvents(): Promise<Stripe.Event[]> {
    await f.fake.drainWebhooks();
    return receiver.received.map(({ body, signature }) => f.stripe.webhooks.constructEvent(body, signature, SECRET));
  }

  it('renews monthly from a Jan 31 anchor for 13 periods: 13 paid invoices with clamped periods, signed events', async () => {
    const clock = await clockAt('2027-01-31T10:00:00Z', 'thirteen months');
    expect(clock).toMatchObject({ object: 'test_helpers.test_clock', status: 'ready', frozen_time: at('2027-01-31T10:00:00Z'), name: 'thirteen months' });
    expect(clock.id).toMatch(/^clock_/);
    expect(clock.deletes_after - clock.created).toBe(7 * 86_400);
    const subscriber = await prepareSubscriber(f.stripe, { testClock: clock.id });
    expect(subscriber.customer).toMatchObject({ test_clock: clock.id, created: clock.frozen_time });
    const subscription = await subscribe(f.stripe, subscriber);
    expect(subscription).toMatchObject({ test_clock: clock.id, billing_cycle_anchor: clock.frozen_time, start_date: clock.frozen_time });
    expect(iso(subscription.items.data[0].current_period_end)).toBe('2027-02-28T10:00:00.000Z');

    // Stripe lets one advance go at most two intervals ahead, so the clock moves a month (and two hours) at a time.
    expect(await failure(advance(clock.id, at('2027-04-01T10:00:00Z')))).toMatchObject({ statusCode: 400, param: 'frozen_time' });
    expect(await failure(advance(clock.id, clock.frozen_time - 1))).toMatchObject({ statusCode: 400, param: 'frozen_time' });

    const boundaries = [
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
      '2028-02-29',
      '2028-03-31',
    ].map((day) => at(`${day}T10:00:00Z`));
    const firstRenewalEvents = f.fake.events().length;
    for (const boundary of boundaries.slice(0, 13)) {
      const advanced = await advance(clock.id, boundary + 2 * HOUR);
      expect(advanced).toMatchObject({ status: 'ready', frozen_time: boundary + 2 * HOUR });
    }
    expect(await f.stripe.testHelpers.testClocks.retrieve(clock.id)).toMatchObject({ frozen_time: boundaries[12] + 2 * HOUR, status: 'ready' });

    const renewals = await cycleInvoices(subscription.id);
    expect(renewals).toHaveLength(13);
    expect(renewals.map((invoice) => invoice.status)).toEqual(Array(13).fill('paid'));
    expect(renewals.map((invoice) => [iso(invoice.lines.data[0].period.start), iso(invoice.lines.data[0].period.end)])).toEqual(
      boundaries.slice(0, 13).map((start, index) => [iso(start), iso(boundaries[index + 1])]),
    );
    expect(renewals.map((invoice) => invoice.created)).toEqual(boundaries.slice(0, 13));
    expect(renewals.map((invoice) => invoice.status_transitions.paid_at)).toEqual(boundaries.slice(0, 13).map((boundary) => boundary + HOUR));
    expect(renewals[1]).toMatchObject({ period_start: boundaries[0], period_end: boundaries[1], amount_paid: 1500, attempt_count: 1 });
    expect(new Set(renewals.map((invoice) => invoice.number)).size).toBe(13);

    const current = await f.stripe.subscriptions.retrieve(subscription.id);
    expect(current).toMatchObject({ status: 'active', latest_invoice: renewals[12].id, billing_cycle_anchor: clock.frozen_time });
    expect([iso(current.items.data[0].current_period_start), iso(current.items.data[0].current_period_end)]).toEqual([
      '2028-02-29T10:00:00.000Z',
      '2028-03-31T10:00:00.000Z',
    ]);

    // one renewal, as Stripe sends it; the automatic ones carry no request
    const renewal = f.fake.events().slice(firstRenewalEvents);
    const firstReady = renewal.findIndex((event) => event.type === 'test_helpers.test_clock.ready');
    expect(renewal.slice(0, firstReady + 1).map((event) => event.type)).toEqual([
      'test_helpers.test_clock.advancing',
      'customer.subscription.updated',
      'invoice.created',
      'invoice.finalized',
      'payment_intent.created',
      'charge.succeeded',
      'payment_intent.succeeded',
      'invoice.paid',
      'invoice.payment_succeeded',
      'test_helpers.test_clock.ready',
    ]);
    expect(renewal[1]).toMatchObject({
      request: { id: null, idempotency_key: null },
      data: { previous_attributes: { latest_invoice: (subscription.latest_invoice as Stripe.Invoice).id } },
    });
    const previousItems = renewal[1].data.previous_attributes!.items as Stripe.ApiList<Stripe.SubscriptionItem>;
    expect(previousItems.data[0]).toMatchObject({ current_period_start: clock.frozen_time, current_period_end: boundaries[0] });
    expect(renewal[2].data.object).toMatchObject({ status: 'draft', automatically_finalizes_at: boundaries[0] + HOUR });

    const delivered = await deliveredEvents();
    expect(delivered.map((event) => event.id)).toEqual(f.fake.events().map((event) => event.id));
    expect(delivered.filter((event) => event.type === 'invoice.paid')).toHaveLength(14);
    expect(() => f.stripe.webhooks.constructEvent(receiver.received[0].body, receiver.received[0].signature, 'whsec_wrong')).toThrow(
      Stripe.errors.StripeSignatureVerificationError,
    );
  });

  it('runs every renewal due within one advance, in time order, for each subscription on the clock', async () => {
    const clock = await clockAt('2027-07-01T00:00:00Z');
    const daily = await subscribe(f.stripe, await prepareSubscriber(f.stripe, { testClock: clock.id, interval: 'day', unitAmount: 100 }));
    const monthly = await subscribe(f.stripe, await prepareSubscriber(f.stripe, { testClock: clock.id, unitAmount: 900 }));
    const day = 86_400;
    // the shortest subscription (daily) bounds one advance to two days
    expect(await failure(advance(clock.id, clock.frozen_time + 2 * day + 1))).toMatchObject({ statusCode: 400, param: 'frozen_time' });
    await advance(clock.id, clock.frozen_time + 2 * day);
    const renewals = await cycleInvoices(daily.id);
    expect(renewals.map((invoice) => [invoice.created, invoice.status])).toEqual([
      [clock.frozen_time + day, 'paid'],
      [clock.frozen_time + 2 * day, 'draft'],
    ]);
    expect(renewals[0].status_transitions.paid_at).toBe(clock.frozen_time + day + HOUR);
    expect(await cycleInvoices(monthly.id)).toEqual([]);
    const paidOnClock = f.fake
      .events()
      .filter((event) => event.type === 'invoice.paid' && (event.data.object as Stripe.Invoice).test_clock === clock.id)
      .map((event) => (event.data.object as Stripe.Invoice).status_transitions.paid_at!);
    expect(paidOnClock).toEqual([clock.frozen_time, clock.frozen_time, clock.frozen_time + day + HOUR]);
  });

  it('leaves a renewal draft for an hour before collecting it', async () => {
    const clock = await clockAt('2027-03-10T00:00:00Z');
    const subscription = await subscribe(f.stripe, await prepareSubscriber(f.stripe, { testClock: clock.id, interval: 'week', intervalCount: 2 }));
    const boundary = subscription.items.data[0].current_period_end;
    expect(boundary - subscription.start_date).toBe(14 * 86_400);
    await advance(clock.id, boundary + 30 * 60);
    const [draft] = await cycleInvoices(subscription.id);
    expect(draft).toMatchObject({ status: 'draft', number: null, automatically_finalizes_at: boundary + HOUR, next_payment_attempt: boundary + HOUR });
    await advance(clock.id, boundary + HOUR);
    expect(await f.stripe.invoices.retrieve(draft.id)).toMatchObject({ status: 'paid', automatically_finalizes_at: null });
  });

  it('fails a declined renewal once (no Stripe retries), goes past_due, and recovers when a later renewal is paid', async () => {
    const clock = await clockAt('2027-05-15T12:00:00Z');
    const subscriber = await prepareSubscriber(f.stripe, { testClock: clock.id });
    const subscription = await subscribe(f.stripe, subscriber);
    const first = subscription.items.data[0].current_period_end;
    f.fake.declineCharges(subscriber.customer.id, { times: 1 });

    const before = f.fake.events().length;
    await advance(clock.id, first + 2 * HOUR);
    expect(typesSince(before)).toEqual([
      'test_helpers.test_clock.advancing',
      'customer.subscription.updated',
      'invoice.created',
      'invoice.finalized',
      'payment_intent.created',
      'charge.failed',
      'payment_intent.payment_failed',
      'invoice.payment_failed',
      'invoice.updated',
      'customer.subscription.updated',
      'test_helpers.test_clock.ready',
    ]);
    const events = f.fake.events().slice(before);
    expect(events[9]).toMatchObject({ data: { object: { status: 'past_due' }, previous_attributes: { status: 'active' } } });
    expect(events[8].data.previous_attributes).toMatchObject({ attempt_count: 0, attempted: false, next_payment_attempt: first + HOUR });
    const [failed] = await cycleInvoices(subscription.id);
    expect(failed).toMatchObject({ status: 'open', attempt_count: 1, attempted: true, next_payment_attempt: null, amount_paid: 0, amount_remaining: 1500 });
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'past_due' });

    // days later nothing was retried: the facilitator runs its own dunning
    await advance(clock.id, first + 10 * 86_400);
    expect(await f.stripe.invoices.retrieve(failed.id)).toMatchObject({ status: 'open', attempt_count: 1 });

    // the next period starts; the stale invoice is voided, and the new one is paid
    const second = (await f.stripe.subscriptions.retrieve(subscription.id)).items.data[0].current_period_end;
    await advance(clock.id, second + 2 * HOUR);
    const voided = await f.stripe.invoices.voidInvoice(failed.id);
    expect(voided).toMatchObject({ status: 'void', amount_paid: 0 });
    expect(voided.status_transitions.voided_at).toBe(second + 2 * HOUR);
    expect(f.fake.events().at(-1)).toMatchObject({ type: 'invoice.voided', data: { object: { id: failed.id, status: 'void' } } });
    const withPayments = await f.stripe.invoices.retrieve(failed.id, { expand: ['payments'] });
    expect(withPayments.payments!.data[0]).toMatchObject({ status: 'canceled' });
    expect(await f.stripe.paymentIntents.retrieve(withPayments.payments!.data[0].payment.payment_intent as string)).toMatchObject({
      status: 'canceled',
      cancellation_reason: 'void_invoice',
    });
    expect(await failure(f.stripe.invoices.pay(failed.id))).toMatchObject({ statusCode: 400 });
    expect(await failure(f.stripe.invoices.voidInvoice(failed.id))).toMatchObject({ statusCode: 400 });

    const renewals = await cycleInvoices(subscription.id);
    expect(renewals.map((invoice) => invoice.status)).toEqual(['void', 'paid']);
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'active', latest_invoice: renewals[1].id });
  });

  it("fails renewals Stripe's own way too: a customer whose default payment method is pm_card_chargeCustomerFail", async () => {
    const clock = await clockAt('2027-06-01T00:00:00Z');
    const subscriber = await prepareSubscriber(f.stripe, { testClock: clock.id });
    const subscription = await subscribe(f.stripe, subscriber);
    const failing = await f.stripe.paymentMethods.attach('pm_card_chargeCustomerFail', { customer: subscriber.customer.id });
    await f.stripe.subscriptions.update(subscription.id, { default_payment_method: failing.id });
    await advance(clock.id, subscription.items.data[0].current_period_end + 2 * HOUR);
    const [renewal] = await cycleInvoices(subscription.id);
    expect(renewal).toMatchObject({ status: 'open', attempt_count: 1 });
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'past_due' });

    // paying by hand with a working card: 402 with the failing one, then paid
    expect(await failure(f.stripe.invoices.pay(renewal.id))).toBeInstanceOf(Stripe.errors.StripeCardError);
    const paid = await f.stripe.invoices.pay(renewal.id, { payment_method: subscriber.paymentMethod.id });
    expect(paid).toMatchObject({ status: 'paid', attempt_count: 3 });
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'active' });
  });

  it('ends a subscription set to cancel at period end exactly at the boundary, with no further invoice', async () => {
    const clock = await clockAt('2027-08-31T09:00:00Z');
    const subscription = await subscribe(f.stripe, await prepareSubscriber(f.stripe, { testClock: clock.id }));
    const end = subscription.items.data[0].current_period_end;
    expect(iso(end)).toBe('2027-09-30T09:00:00.000Z');
    const scheduled = await f.stripe.subscriptions.update(subscription.id, { cancel_at_period_end: true });
    expect(scheduled).toMatchObject({ cancel_at_period_end: true, cancel_at: end, canceled_at: clock.frozen_time });

    await advance(clock.id, end - 1);
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'active' });
    const before = f.fake.events().length;
    await advance(clock.id, end + 5 * HOUR);
    expect(typesSince(before)).toEqual(['test_helpers.test_clock.advancing', 'customer.subscription.deleted', 'test_helpers.test_clock.ready']);
    const deleted = f.fake.events().at(-2) as StripeEvent;
    expect(deleted.data.object).toMatchObject({ id: subscription.id, status: 'canceled', ended_at: end, canceled_at: clock.frozen_time });
    expect(await cycleInvoices(subscription.id)).toEqual([]);
    const ended = await f.stripe.subscriptions.retrieve(subscription.id);
    expect(ended).toMatchObject({ status: 'canceled', ended_at: end, cancellation_details: { reason: 'cancellation_requested' } });

    // with nothing left to bill, the clock may go up to two years ahead
    expect(await advance(clock.id, end + 400 * 86_400)).toMatchObject({ status: 'ready' });
    expect(await cycleInvoices(subscription.id)).toEqual([]);
  });

  it('expires an incomplete subscription 23 hours after it was made, voiding its first invoice', async () => {
    const clock = await clockAt('2027-02-01T00:00:00Z');
    const subscriber = await prepareSubscriber(f.stripe, { testClock: clock.id, card: 'pm_card_chargeCustomerFail' });
    const subscription = await f.stripe.subscriptions.create({
      customer: subscriber.customer.id,
      items: [{ price: subscriber.price.id }],
      default_payment_method: subscriber.paymentMethod.id,
    });
    expect(subscription.status).toBe('incomplete');
    await advance(clock.id, clock.frozen_time + 22 * HOUR);
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'incomplete' });
    await advance(clock.id, clock.frozen_time + 24 * HOUR);
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'incomplete_expired', ended_at: clock.frozen_time + 23 * HOUR });
    expect(await f.stripe.invoices.retrieve(subscription.latest_invoice as string)).toMatchObject({ status: 'void' });
  });

  it('marks an open invoice uncollectible', async () => {
    const clock = await clockAt('2027-04-01T00:00:00Z');
    const subscriber = await prepareSubscriber(f.stripe, { testClock: clock.id, interval: 'day' });
    const subscription = await subscribe(f.stripe, subscriber);
    f.fake.declineCharges(subscriber.paymentMethod.id);
    await advance(clock.id, subscription.items.data[0].current_period_end + 2 * HOUR);
    f.fake.clearDeclines(subscriber.paymentMethod.id);
    const [open] = await cycleInvoices(subscription.id);
    const uncollectible = await f.stripe.invoices.markUncollectible(open.id);
    expect(uncollectible).toMatchObject({ status: 'uncollectible' });
    expect(f.fake.events().at(-1)).toMatchObject({ type: 'invoice.marked_uncollectible' });
    expect(await failure(f.stripe.invoices.markUncollectible(open.id))).toMatchObject({ statusCode: 400 });
    expect(await f.stripe.invoices.voidInvoice(open.id)).toMatchObject({ status: 'void' });
  });
});
