import type Stripe from 'stripe';
import { prepareSubscriber, subscribe } from '../test/billing';
import { startFixture, type FakeStripeFixture } from '../test/fixture';

const HOUR = 3600;
const DAY = 86_400;
const SUBSCRIBERS = 25;

/** One advance of a clock that many subscriptions share: each renews once, everything in time order across them. */
describe('a test clock with many subscriptions', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(async () => {
    await f.fake.stop();
  });

  it('renews, finalizes and collects each one at its own time, in time order across all of them', async () => {
    const start = Math.floor(Date.now() / 1000);
    const clock = await f.stripe.testHelpers.testClocks.create({ frozen_time: start });
    const subscriptions: Stripe.Subscription[] = [];
    for (let i = 0; i < SUBSCRIBERS; i++) {
      // anchors a minute apart: each renews, is finalized and collected at its own second
      if (i > 0) await f.stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: start + 60 * i });
      const subscriber = await prepareSubscriber(f.stripe, { testClock: clock.id, interval: 'day' });
      subscriptions.push(await subscribe(f.stripe, subscriber));
      // its renewal is declined
      if (i === 7) f.fake.declineCharges(subscriber.customer.id);
    }
    const before = f.fake.events().length;
    const target = start + DAY + 2 * HOUR;
    expect(await f.stripe.testHelpers.testClocks.advance(clock.id, { frozen_time: target })).toMatchObject({ status: 'ready', frozen_time: target });

    const events = f.fake.events().slice(before);
    const created = events.map((event) => event.created);
    expect(created).toEqual([...created].sort((a, b) => a - b));
    for (const [i, subscription] of subscriptions.entries()) {
      const anchor = subscription.billing_cycle_anchor;
      const cycle = (await f.stripe.invoices.list({ subscription: subscription.id })).data.filter((invoice) => invoice.billing_reason === 'subscription_cycle');
      expect(cycle).toHaveLength(1);
      expect(cycle[0]!.lines.data[0]!.period.start).toBe(anchor + DAY);
      expect(cycle[0]!.status_transitions.finalized_at).toBe(anchor + DAY + HOUR);
      expect(cycle[0]!.status).toBe(i === 7 ? 'open' : 'paid');
      expect((await f.stripe.subscriptions.retrieve(subscription.id)).status).toBe(i === 7 ? 'past_due' : 'active');
      const own = events
        .filter((event) => {
          const object = event.data.object as { id?: string; parent?: { subscription_details?: { subscription?: string } } };
          return object.id === subscription.id || object.parent?.subscription_details?.subscription === subscription.id;
        })
        .map((event) => event.type);
      expect(own.slice(0, 3)).toEqual(['customer.subscription.updated', 'invoice.created', 'invoice.finalized']);
      expect(own).toContain(i === 7 ? 'invoice.payment_failed' : 'invoice.paid');
    }
  });
});
