import Stripe from 'stripe';
import { startFixture, type FakeStripeFixture } from '../test/fixture';

describe('refunds and balance transactions', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(() => f.fake.stop());

  const pay = (amount: number) => f.stripe.paymentIntents.create({ amount, currency: 'usd', confirm: true, payment_method: 'pm_card_visa' });

  it('refunds partly, then the rest, with negative refund balance transactions, and refuses more', async () => {
    const intent = await pay(10_000);
    const partial = await f.stripe.refunds.create({ payment_intent: intent.id, amount: 2500, reason: 'requested_by_customer', metadata: { ticket: 't-1' } });
    expect(partial).toMatchObject({
      object: 'refund',
      amount: 2500,
      currency: 'usd',
      payment_intent: intent.id,
      charge: intent.latest_charge,
      status: 'succeeded',
      reason: 'requested_by_customer',
      metadata: { ticket: 't-1' },
    });
    expect(partial.id).toMatch(/^re_/);
    expect(await f.stripe.charges.retrieve(intent.latest_charge as string)).toMatchObject({ amount_refunded: 2500, refunded: false });

    const rest = await f.stripe.refunds.create({ charge: intent.latest_charge as string });
    expect(rest.amount).toBe(7500);
    expect(await f.stripe.charges.retrieve(intent.latest_charge as string)).toMatchObject({ amount_refunded: 10_000, refunded: true });

    const txn = await f.stripe.balanceTransactions.retrieve(rest.balance_transaction as string);
    expect(txn).toMatchObject({ type: 'refund', amount: -7500, fee: 0, net: -7500, source: rest.id, reporting_category: 'refund', currency: 'usd' });

    const again = await f.stripe.refunds.create({ payment_intent: intent.id }).catch((e: unknown) => e);
    expect(again).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(again).toMatchObject({ code: 'charge_already_refunded' });

    const listed = await f.stripe.refunds.list({ payment_intent: intent.id });
    expect(listed.data.map((refund) => refund.id)).toEqual([rest.id, partial.id]);
    expect(await f.stripe.refunds.retrieve(partial.id)).toEqual(expect.objectContaining({ id: partial.id, amount: 2500 }));
  });

  it('refuses a refund above what is left, and one for an unpaid PaymentIntent', async () => {
    const intent = await pay(1000);
    expect(await f.stripe.refunds.create({ payment_intent: intent.id, amount: 1001 }).catch((e: unknown) => e)).toMatchObject({
      code: 'amount_too_large',
      param: 'amount',
    });
    const open = await f.stripe.paymentIntents.create({ amount: 1000, currency: 'usd' });
    expect(await f.stripe.refunds.create({ payment_intent: open.id }).catch((e: unknown) => e)).toMatchObject({ statusCode: 400, param: 'payment_intent' });
    expect(await f.stripe.refunds.create({ payment_intent: 'pi_missing' }).catch((e: unknown) => e)).toMatchObject({
      statusCode: 400,
      code: 'resource_missing',
    });
    expect(await f.stripe.refunds.create({}).catch((e: unknown) => e)).toMatchObject({ statusCode: 400 });
  });

  it('lists balance transactions by type and source', async () => {
    const intent = await pay(2000);
    const refund = await f.stripe.refunds.create({ payment_intent: intent.id, amount: 500 });
    const bySource = await f.stripe.balanceTransactions.list({ source: intent.latest_charge as string });
    expect(bySource.data).toHaveLength(1);
    expect(bySource.data[0]).toMatchObject({ type: 'charge', amount: 2000, fee: 88, net: 1912 });
    const refunds = await f.stripe.balanceTransactions.list({ type: 'refund', limit: 100 });
    expect(refunds.data[0]).toMatchObject({ source: refund.id, amount: -500 });
    expect(refunds.data.every((txn) => txn.type === 'refund')).toBe(true);
  });

  it("a pending refund (pendRefunds) ends succeeded or failed when the test says, with Stripe's events; a failed one is refundable again", async () => {
    const intent = await pay(3000);
    f.fake.pendRefunds(intent.id);
    const first = await f.stripe.refunds.create({ payment_intent: intent.id, amount: 1000, metadata: { refund_id: 'r-1' } });
    const second = await f.stripe.refunds.create({ payment_intent: intent.id, amount: 2000 });
    expect([first.status, second.status]).toEqual(['pending', 'pending']);
    // pending refunds count against what is left
    expect(await f.stripe.refunds.create({ payment_intent: intent.id, amount: 1 }).catch((e: unknown) => e)).toMatchObject({ code: 'charge_already_refunded' });

    f.fake.finishRefund(first.id, 'succeeded');
    f.fake.finishRefund(second.id, 'failed');
    expect(await f.stripe.refunds.retrieve(first.id)).toMatchObject({ status: 'succeeded', metadata: { refund_id: 'r-1' } });
    expect(await f.stripe.refunds.retrieve(second.id)).toMatchObject({ status: 'failed', failure_reason: 'expired_or_canceled_card' });
    expect(await f.stripe.charges.retrieve(intent.latest_charge as string)).toMatchObject({ amount_refunded: 1000, refunded: false });
    const types = f.fake
      .events()
      .filter((e) => [first.id, second.id, intent.latest_charge].includes((e.data.object as { id: string }).id))
      .map((e) => `${e.type}:${(e.data.object as { status?: string }).status ?? ''}`);
    expect(types).toEqual([
      'charge.succeeded:succeeded',
      'refund.created:pending',
      'refund.created:pending',
      'refund.updated:succeeded',
      'charge.refunded:succeeded',
      'refund.updated:failed',
      'refund.failed:failed',
    ]);
    expect(() => f.fake.finishRefund(first.id, 'failed')).toThrow(/not pending/);
  });
});
