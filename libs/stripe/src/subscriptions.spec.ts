import Stripe from 'stripe';
import { prepareSubscriber, subscribe } from '../test/billing';
import { startFixture, type FakeStripeFixture } from '../test/fixture';

describe('Billing: customers, payment methods, prices and subscriptions', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(() => f.fake.stop());

  const failure = (promise: Promise<unknown>) => promise.then(() => undefined).catch((error: unknown) => error);
  const eventsFrom = (index: number) => f.fake.events().slice(index);

  it('creates a customer, attaches a test card as a new PaymentMethod, and sets it as the invoice default', async () => {
    const customer = await f.stripe.customers.create({ email: 'a@example.com', name: 'Agent A', metadata: { payer: 'p-1' } });
    expect(customer).toMatchObject({
      object: 'customer',
      email: 'a@example.com',
      metadata: { payer: 'p-1' },
      invoice_settings: { default_payment_method: null },
      test_clock: null,
    });
    expect(customer.id).toMatch(/^cus_[0-9A-Za-z]{24}$/);

    const card = await f.stripe.paymentMethods.retrieve('pm_card_visa');
    expect(card).toMatchObject({ id: 'pm_card_visa', object: 'payment_method', type: 'card', customer: null, card: { brand: 'visa', last4: '4242' } });
    const attached = await f.stripe.paymentMethods.attach('pm_card_visa', { customer: customer.id });
    expect(attached.id).toMatch(/^pm_[0-9A-Za-z]{24}$/);
    expect(attached).toMatchObject({ type: 'card', customer: customer.id, card: { last4: '4242' } });
    expect(await f.stripe.paymentMethods.retrieve(attached.id)).toMatchObject({ customer: customer.id });
    expect((await f.stripe.paymentMethods.list({ customer: customer.id, type: 'card' })).data.map((pm) => pm.id)).toEqual([attached.id]);

    const updated = await f.stripe.customers.update(customer.id, { invoice_settings: { default_payment_method: attached.id }, metadata: { payer: '' } });
    expect(updated).toMatchObject({ invoice_settings: { default_payment_method: attached.id }, metadata: {} });
    const event = f.fake.events().at(-1)!;
    expect(event).toMatchObject({ type: 'customer.updated', data: { previous_attributes: { invoice_settings: { default_payment_method: null } } } });
    expect(await f.stripe.customers.retrieve(customer.id)).toEqual(expect.objectContaining({ invoice_settings: updated.invoice_settings }));

    const other = await f.stripe.customers.create({});
    expect(await failure(f.stripe.paymentMethods.attach(attached.id, { customer: other.id }))).toMatchObject({ statusCode: 400 });
    expect(await failure(f.stripe.customers.update(other.id, { invoice_settings: { default_payment_method: attached.id } }))).toMatchObject({
      statusCode: 400,
      param: 'invoice_settings[default_payment_method]',
    });
    expect(await failure(f.stripe.paymentMethods.retrieve('pm_unknown'))).toMatchObject({ statusCode: 404, code: 'resource_missing' });

    // a test card given at creation is attached, and naming it as the default names the PaymentMethod it became
    const withCard = await f.stripe.customers.create({
      payment_method: 'pm_card_mastercard',
      invoice_settings: { default_payment_method: 'pm_card_mastercard' },
    });
    const [own] = (await f.stripe.paymentMethods.list({ customer: withCard.id })).data;
    expect(own).toMatchObject({ customer: withCard.id, card: { brand: 'mastercard', last4: '4444' } });
    expect(withCard.invoice_settings.default_payment_method).toBe(own.id);
    expect(await failure(f.stripe.customers.retrieve('cus_missing'))).toMatchObject({ statusCode: 404 });
  });

  it('creates products and recurring prices, finds prices by lookup_key and caps intervals at 3 years', async () => {
    const product = await f.stripe.products.create({ name: 'Weather API' });
    expect(product).toMatchObject({ object: 'product', name: 'Weather API', active: true });
    expect(await f.stripe.products.retrieve(product.id)).toMatchObject({ id: product.id });
    const price = await f.stripe.prices.create({
      currency: 'USD',
      unit_amount: 2000,
      recurring: { interval: 'week', interval_count: 2 },
      product: product.id,
      lookup_key: 'weather_biweekly',
    });
    expect(price).toMatchObject({
      object: 'price',
      active: true,
      currency: 'usd',
      unit_amount: 2000,
      type: 'recurring',
      recurring: { interval: 'week', interval_count: 2, usage_type: 'licensed', meter: null },
      product: product.id,
      lookup_key: 'weather_biweekly',
    });
    expect((await f.stripe.prices.list({ lookup_keys: ['weather_biweekly'] })).data.map((p) => p.id)).toEqual([price.id]);
    expect(await f.stripe.prices.retrieve(price.id, { expand: ['product'] })).toMatchObject({ product: { id: product.id, name: 'Weather API' } });

    const taken = await failure(f.stripe.prices.create({ currency: 'usd', unit_amount: 1, product: product.id, lookup_key: 'weather_biweekly' }));
    expect(taken).toMatchObject({ statusCode: 400, param: 'lookup_key' });
    const moved = await f.stripe.prices.create({
      currency: 'usd',
      unit_amount: 2500,
      product: product.id,
      lookup_key: 'weather_biweekly',
      transfer_lookup_key: true,
    });
    expect((await f.stripe.prices.list({ lookup_keys: ['weather_biweekly'] })).data.map((p) => p.id)).toEqual([moved.id]);

    const create = (interval: 'day' | 'week' | 'month' | 'year', count: number) =>
      f.stripe.prices.create({ currency: 'usd', unit_amount: 100, recurring: { interval, interval_count: count }, product: product.id });
    expect((await create('month', 36)).recurring).toMatchObject({ interval: 'month', interval_count: 36 });
    expect((await create('week', 156)).recurring).toMatchObject({ interval_count: 156 });
    expect((await create('year', 3)).recurring).toMatchObject({ interval: 'year', interval_count: 3 });
    for (const [interval, count] of [
      ['month', 37],
      ['week', 157],
      ['year', 4],
      ['day', 1096],
    ] as const) {
      expect(await failure(create(interval, count))).toMatchObject({ statusCode: 400, param: 'recurring[interval_count]' });
    }
    const metered = failure(
      f.stripe.prices.create({ currency: 'usd', unit_amount: 1, product: product.id, recurring: { interval: 'month', usage_type: 'metered' } }),
    );
    expect(await metered).toMatchObject({ statusCode: 400, param: 'recurring[usage_type]' });
  });

  it('activates a subscription as the MPP profile does: one paid invoice through a PaymentIntent, with fee and events', async () => {
    const subscriber = await prepareSubscriber(f.stripe);
    const before = f.fake.events().length;
    const subscription = await subscribe(f.stripe, subscriber);
    expect(subscription).toMatchObject({
      object: 'subscription',
      status: 'active',
      customer: subscriber.customer.id,
      collection_method: 'charge_automatically',
      default_payment_method: subscriber.paymentMethod.id,
      cancel_at_period_end: false,
      cancel_at: null,
      canceled_at: null,
      ended_at: null,
      currency: 'usd',
    });
    expect(subscription.billing_cycle_anchor).toBe(subscription.start_date);
    const [item] = subscription.items.data;
    expect(item).toMatchObject({ object: 'subscription_item', quantity: 1, price: { id: subscriber.price.id }, current_period_start: subscription.start_date });
    const start = new Date(item.current_period_start * 1000);
    const expectedEnd = new Date(start);
    expectedEnd.setUTCMonth(start.getUTCMonth() + 1);
    if (expectedEnd.getUTCDate() !== start.getUTCDate()) expectedEnd.setUTCDate(0); // clamp like Stripe
    expect(item.current_period_end).toBe(expectedEnd.getTime() / 1000);

    const invoice = subscription.latest_invoice as Stripe.Invoice;
    expect(invoice).toMatchObject({
      object: 'invoice',
      status: 'paid',
      billing_reason: 'subscription_create',
      customer: subscriber.customer.id,
      currency: 'usd',
      amount_due: 1500,
      amount_paid: 1500,
      amount_remaining: 0,
      total: 1500,
      attempt_count: 1,
      attempted: true,
      next_payment_attempt: null,
      discounts: [],
      total_taxes: [],
      parent: { type: 'subscription_details', subscription_details: { subscription: subscription.id } },
      period_start: subscription.start_date,
      period_end: subscription.start_date,
    });
    expect(invoice.status_transitions.paid_at).toBe(subscription.start_date);
    expect(invoice.lines.data).toHaveLength(1);
    expect(invoice.lines.data[0]).toMatchObject({
      amount: 1500,
      quantity: 1,
      period: { start: item.current_period_start, end: item.current_period_end },
      parent: {
        type: 'subscription_item_details',
        subscription_item_details: { subscription: subscription.id, subscription_item: item.id, proration: false },
      },
      pricing: { price_details: { price: subscriber.price.id, product: subscriber.price.product } },
    });
    expect(invoice.payments?.data).toHaveLength(1);
    const payment = invoice.payments!.data[0];
    expect(payment).toMatchObject({ object: 'invoice_payment', status: 'paid', amount_paid: 1500, payment: { type: 'payment_intent' } });

    const paymentIntent = await f.stripe.paymentIntents.retrieve(payment.payment.payment_intent as string, { expand: ['latest_charge.balance_transaction'] });
    expect(paymentIntent).toMatchObject({ status: 'succeeded', amount: 1500, customer: subscriber.customer.id, payment_method: subscriber.paymentMethod.id });
    expect((paymentIntent.latest_charge as Stripe.Charge).balance_transaction).toMatchObject({ type: 'charge', amount: 1500, fee: 74, net: 1426 });

    // payments are only there when asked for, as at Stripe
    expect((await f.stripe.invoices.retrieve(invoice.id)).payments).toBeUndefined();
    expect((await f.stripe.invoices.retrieve(invoice.id, { expand: ['payments'] })).payments?.data.map((entry) => entry.id)).toEqual([payment.id]);
    expect((await f.stripe.invoices.list({ subscription: subscription.id })).data.map((entry) => entry.id)).toEqual([invoice.id]);
    expect((await f.stripe.invoices.list({ subscription: subscription.id, collection_method: 'send_invoice' })).data).toEqual([]);
    const lineFacts = (line: Stripe.InvoiceLineItem) => [line.id, line.amount, line.period, line.parent];
    expect((await f.stripe.invoices.listLineItems(invoice.id)).data.map(lineFacts)).toEqual(invoice.lines.data.map(lineFacts));
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ latest_invoice: invoice.id, status: 'active' });

    expect(eventsFrom(before).map((event) => event.type)).toEqual([
      'customer.subscription.created',
      'invoice.created',
      'invoice.finalized',
      'payment_intent.created',
      'charge.succeeded',
      'payment_intent.succeeded',
      'invoice.paid',
      'invoice.payment_succeeded',
    ]);
    expect(eventsFrom(before)[0].data.object).toMatchObject({ id: subscription.id, status: 'active', latest_invoice: invoice.id });
    expect(eventsFrom(before)[1].data.object).toMatchObject({ id: invoice.id, status: 'draft' });
  });

  it('answers 402 with error_if_incomplete when the first invoice cannot be paid, and creates nothing', async () => {
    for (const [card, arm] of [
      ['pm_card_chargeCustomerFail', false],
      ['pm_card_visa', true],
      ['pm_card_authenticationRequired', false],
    ] as const) {
      const subscriber = await prepareSubscriber(f.stripe, { card });
      if (arm) f.fake.declineCharges(subscriber.customer.id, { declineCode: 'insufficient_funds' });
      const before = f.fake.events().length;
      const error = await failure(subscribe(f.stripe, subscriber));
      expect(error).toBeInstanceOf(Stripe.errors.StripeCardError);
      expect(error).toMatchObject({ statusCode: 402, type: 'StripeCardError' });
      expect((error as Stripe.errors.StripeCardError).code).toBe(card === 'pm_card_authenticationRequired' ? 'authentication_required' : 'card_declined');
      if (arm) expect(error).toMatchObject({ decline_code: 'insufficient_funds' });
      expect(f.fake.events().length).toBe(before);
      expect((await f.stripe.subscriptions.list({ customer: subscriber.customer.id, status: 'all' })).data).toEqual([]);
      expect((await f.stripe.invoices.list({ customer: subscriber.customer.id })).data).toEqual([]);
      f.fake.clearDeclines(subscriber.customer.id);
    }
  });

  it('leaves an allow_incomplete subscription incomplete until its open invoice is paid', async () => {
    const subscriber = await prepareSubscriber(f.stripe);
    f.fake.declineCharges(subscriber.paymentMethod.id, { times: 1 });
    const subscription = await f.stripe.subscriptions.create({
      customer: subscriber.customer.id,
      items: [{ price: subscriber.price.id }],
      default_payment_method: subscriber.paymentMethod.id,
      payment_behavior: 'allow_incomplete',
      expand: ['latest_invoice'],
    });
    expect(subscription.status).toBe('incomplete');
    const invoice = subscription.latest_invoice as Stripe.Invoice;
    expect(invoice).toMatchObject({ status: 'open', attempt_count: 1, amount_paid: 0, amount_remaining: 1500, next_payment_attempt: null });

    const paid = await f.stripe.invoices.pay(invoice.id);
    expect(paid).toMatchObject({ status: 'paid', attempt_count: 2, amount_paid: 1500 });
    expect(await f.stripe.subscriptions.retrieve(subscription.id)).toMatchObject({ status: 'active' });
    const payments = await f.stripe.invoicePayments.list({ invoice: invoice.id });
    expect(payments.data).toHaveLength(1); // the PaymentIntent of the failed attempt was reused
    expect(await failure(f.stripe.invoices.pay(invoice.id))).toMatchObject({ statusCode: 400 });

    // a card that asks for authentication leaves the first invoice waiting for the customer
    const strict = await prepareSubscriber(f.stripe, { card: 'pm_card_authenticationRequired' });
    const before = f.fake.events().length;
    const waiting = await f.stripe.subscriptions.create({
      customer: strict.customer.id,
      items: [{ price: strict.price.id }],
      default_payment_method: strict.paymentMethod.id,
      expand: ['latest_invoice.payments'],
    });
    expect(waiting.status).toBe('incomplete');
    const pending = (waiting.latest_invoice as Stripe.Invoice).payments!.data[0].payment.payment_intent as string;
    expect(await f.stripe.paymentIntents.retrieve(pending)).toMatchObject({ status: 'requires_action', next_action: { type: 'use_stripe_sdk' } });
    expect(
      f.fake
        .events()
        .slice(before)
        .map((event) => event.type),
    ).toContain('invoice.payment_action_required');
  });

  it('refuses what the profile never sends or the fake does not model, naming the parameter', async () => {
    const subscriber = await prepareSubscriber(f.stripe);
    const base = { customer: subscriber.customer.id, items: [{ price: subscriber.price.id }], default_payment_method: subscriber.paymentMethod.id };
    expect(await failure(f.stripe.subscriptions.create({ ...base, trial_period_days: 7 }))).toMatchObject({ statusCode: 400, param: 'trial_period_days' });
    expect(await failure(f.stripe.subscriptions.create({ ...base, payment_behavior: 'default_incomplete' }))).toMatchObject({ param: 'payment_behavior' });
    expect(await failure(f.stripe.subscriptions.create({ ...base, items: [] }))).toMatchObject({ statusCode: 400 });
    expect(await failure(f.stripe.subscriptions.create({ ...base, default_payment_method: 'pm_card_visa' }))).toMatchObject({
      param: 'default_payment_method',
    });
    const bare = await f.stripe.customers.create({});
    expect(await failure(f.stripe.subscriptions.create({ customer: bare.id, items: [{ price: subscriber.price.id }] }))).toMatchObject({
      statusCode: 400,
      message: expect.stringMatching(/no attached payment source or default payment method/),
    });
    const oneOff = await f.stripe.prices.create({ currency: 'usd', unit_amount: 100, product: subscriber.price.product as string });
    expect(await failure(f.stripe.subscriptions.create({ ...base, items: [{ price: oneOff.id }] }))).toMatchObject({ param: 'items[0][price]' });
  });

  it('sets cancel_at_period_end with previous_attributes, cancels at once with DELETE, then refuses changes', async () => {
    const subscriber = await prepareSubscriber(f.stripe);
    const subscription = await subscribe(f.stripe, subscriber);
    const periodEnd = subscription.items.data[0].current_period_end;

    const scheduled = await f.stripe.subscriptions.update(subscription.id, { cancel_at_period_end: true });
    expect(scheduled).toMatchObject({ status: 'active', cancel_at_period_end: true, cancel_at: periodEnd });
    expect(scheduled.canceled_at).toBeGreaterThan(0);
    const updated = f.fake.events().at(-1)!;
    expect(updated).toMatchObject({
      type: 'customer.subscription.updated',
      data: {
        object: { id: subscription.id, cancel_at_period_end: true },
        previous_attributes: { cancel_at_period_end: false, cancel_at: null, canceled_at: null },
      },
    });

    const undone = await f.stripe.subscriptions.update(subscription.id, { cancel_at_period_end: false });
    expect(undone).toMatchObject({ cancel_at_period_end: false, cancel_at: null, canceled_at: null });
    const at = await f.stripe.subscriptions.update(subscription.id, { cancel_at: 'min_period_end' as unknown as number });
    expect(at).toMatchObject({ cancel_at: periodEnd, cancel_at_period_end: false });
    expect(await failure(f.stripe.subscriptions.update(subscription.id, { cancel_at: 1 }))).toMatchObject({ param: 'cancel_at' });
    const both = f.stripe.subscriptions.update(subscription.id, { cancel_at: periodEnd, cancel_at_period_end: true });
    expect(await failure(both)).toMatchObject({ statusCode: 400, param: 'cancel_at' });
    const replaced = await f.stripe.subscriptions.update(subscription.id, { cancel_at: '' as unknown as number, cancel_at_period_end: true });
    expect(replaced).toMatchObject({ cancel_at: periodEnd, cancel_at_period_end: true });

    const canceled = await f.stripe.subscriptions.cancel(subscription.id, { cancellation_details: { comment: 'agent left' } });
    expect(canceled).toMatchObject({ status: 'canceled', cancellation_details: { comment: 'agent left', reason: 'cancellation_requested' } });
    expect(canceled.ended_at).toBe(canceled.canceled_at);
    expect(f.fake.events().at(-1)).toMatchObject({ type: 'customer.subscription.deleted', data: { object: { id: subscription.id, status: 'canceled' } } });
    expect(await failure(f.stripe.subscriptions.update(subscription.id, { cancel_at_period_end: true }))).toMatchObject({ statusCode: 400 });
    expect(await f.stripe.subscriptions.update(subscription.id, { metadata: { note: 'kept' } })).toMatchObject({ metadata: { note: 'kept' } });
    expect(await failure(f.stripe.subscriptions.cancel(subscription.id))).toMatchObject({ statusCode: 400 });
    expect((await f.stripe.subscriptions.list({ customer: subscriber.customer.id })).data).toEqual([]);
    expect((await f.stripe.subscriptions.list({ customer: subscriber.customer.id, status: 'canceled' })).data.map((s) => s.id)).toEqual([subscription.id]);
  });

  it('refunds an invoice payment partly, in parts that add up, never above the charge', async () => {
    const subscription = await subscribe(f.stripe, await prepareSubscriber(f.stripe, { unitAmount: 1000 }));
    const invoice = subscription.latest_invoice as Stripe.Invoice;
    const paymentIntent = invoice.payments!.data[0].payment.payment_intent as string;
    const first = await f.stripe.refunds.create({ payment_intent: paymentIntent, amount: 300, reason: 'requested_by_customer' });
    const second = await f.stripe.refunds.create({ payment_intent: paymentIntent, amount: 450 });
    expect([first.amount, second.amount]).toEqual([300, 450]);
    expect(await failure(f.stripe.refunds.create({ payment_intent: paymentIntent, amount: 251 }))).toMatchObject({ code: 'amount_too_large' });
    const rest = await f.stripe.refunds.create({ payment_intent: paymentIntent });
    expect(rest.amount).toBe(250);
    const charge = await f.stripe.charges.retrieve((await f.stripe.paymentIntents.retrieve(paymentIntent)).latest_charge as string);
    expect(charge).toMatchObject({ amount: 1000, amount_refunded: 1000, refunded: true });
    const refunds = await f.stripe.refunds.list({ payment_intent: paymentIntent });
    expect(refunds.data.reduce((sum, refund) => sum + refund.amount, 0)).toBe(1000);
    expect(await failure(f.stripe.refunds.create({ payment_intent: paymentIntent, amount: 1 }))).toMatchObject({ code: 'charge_already_refunded' });
    // the invoice stays paid: a refund is not a change of the invoice
    expect(await f.stripe.invoices.retrieve(invoice.id)).toMatchObject({ status: 'paid', amount_paid: 1000 });
  });
});
