import Stripe from 'stripe';
import { startFixture, untyped, type FakeStripeFixture } from '../test/fixture';
import { SPT_ERROR_CODES } from './errors';

describe('payment intents', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(() => f.fake.stop());

  /** What mppx sends to settle a Stripe charge (mpp.md §2.2), with the token top level or in payment_method_data. */
  const payWithToken = (token: string, placement: 'top' | 'payment_method_data' = 'top', amount = 5000) =>
    f.stripe.paymentIntents.create(
      untyped<Stripe.PaymentIntentCreateParams>({
        amount,
        currency: 'usd',
        confirm: true,
        automatic_payment_methods: { enabled: true, allow_redirects: 'never' },
        metadata: { challenge_id: 'ch-1' },
        ...(placement === 'top' ? { shared_payment_granted_token: token } : { payment_method_data: { shared_payment_granted_token: token } }),
      }),
    );

  it('settles with a top-level token: succeeded, one charge, a balance transaction with fee and net', async () => {
    const token = await f.grantToken();
    const intent = await payWithToken(token.id);
    expect(intent).toMatchObject({
      object: 'payment_intent',
      status: 'succeeded',
      amount: 5000,
      amount_received: 5000,
      currency: 'usd',
      metadata: { challenge_id: 'ch-1' },
    });
    expect(intent.id).toMatch(/^pi_[0-9A-Za-z]{24}$/);
    expect(intent.client_secret).toMatch(new RegExp(`^${intent.id}_secret_`));
    expect(intent.latest_charge).toMatch(/^ch_/);

    const charge = await f.stripe.charges.retrieve(intent.latest_charge as string);
    expect(charge).toMatchObject({ amount: 5000, amount_refunded: 0, currency: 'usd', payment_intent: intent.id, refunded: false, status: 'succeeded' });
    const txn = await f.stripe.balanceTransactions.retrieve(charge.balance_transaction as string);
    expect(txn).toMatchObject({
      type: 'charge',
      amount: 5000,
      fee: 175,
      net: 4825,
      currency: 'usd',
      source: charge.id,
      status: 'available',
      reporting_category: 'charge',
    });

    const used = await f.stripe.rawRequest('GET', `/v1/shared_payment/granted_tokens/${token.id}`);
    expect(used).toMatchObject({ deactivated_reason: 'consumed', usage_details: { amount_captured: { currency: 'usd', value: 5000 } } });
  });

  it('settles with the token in payment_method_data, and expands the charge and its balance transaction', async () => {
    const token = await f.grantToken();
    const intent = await payWithToken(token.id, 'payment_method_data');
    expect(intent.status).toBe('succeeded');
    const expanded = await f.stripe.paymentIntents.retrieve(intent.id, { expand: ['latest_charge.balance_transaction'] });
    const charge = expanded.latest_charge as Stripe.Charge;
    expect((charge.balance_transaction as Stripe.BalanceTransaction).net).toBe(4825);
  });

  it('creates then confirms in two steps', async () => {
    const token = await f.grantToken();
    const created = await f.stripe.paymentIntents.create(untyped({ amount: 1200, currency: 'usd', shared_payment_granted_token: token.id }));
    expect(created).toMatchObject({ status: 'requires_confirmation', payment_method: 'pm_card_visa' });
    const confirmed = await f.stripe.paymentIntents.confirm(created.id);
    expect(confirmed).toMatchObject({ id: created.id, status: 'succeeded', amount_received: 1200 });
    const again = await f.stripe.paymentIntents.confirm(created.id).catch((e: unknown) => e);
    expect(again).toMatchObject({ statusCode: 400, code: 'payment_intent_unexpected_state' });
  });

  it('turns a decline into a 402 card error carrying the failed PaymentIntent; the token stays usable', async () => {
    const token = await f.grantToken({ paymentMethod: 'pm_card_chargeDeclinedInsufficientFunds' });
    const error = await payWithToken(token.id).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Stripe.errors.StripeCardError);
    const cardError = error as Stripe.errors.StripeCardError;
    expect(cardError).toMatchObject({ statusCode: 402, code: 'card_declined', decline_code: 'insufficient_funds' });
    const intent = (cardError.raw as { payment_intent: Stripe.PaymentIntent }).payment_intent;
    expect(cardError.payment_intent?.id).toBe(intent.id);
    expect(intent).toMatchObject({ status: 'requires_payment_method', last_payment_error: { code: 'card_declined', decline_code: 'insufficient_funds' } });
    expect(await f.stripe.paymentIntents.retrieve(intent.id)).toMatchObject({ status: 'requires_payment_method' });
    expect(await f.stripe.rawRequest('GET', `/v1/shared_payment/granted_tokens/${token.id}`)).toMatchObject({ deactivated_reason: null });

    const generic = await f.stripe.paymentIntents
      .create({ amount: 100, currency: 'usd', confirm: true, payment_method: 'pm_card_chargeDeclined' })
      .catch((e: unknown) => e);
    expect(generic).toMatchObject({ code: 'card_declined', decline_code: 'generic_decline', message: 'Your card was declined.' });
  });

  it('leaves a card that needs 3DS in requires_action (or declines it with error_on_requires_action)', async () => {
    for (const paymentMethod of ['pm_card_authenticationRequired', 'pm_card_threeDSecure2Required']) {
      const token = await f.grantToken({ paymentMethod });
      const intent = await payWithToken(token.id);
      expect(intent).toMatchObject({ status: 'requires_action', next_action: { type: 'use_stripe_sdk' } });
    }
    const refused = await f.stripe.paymentIntents
      .create({ amount: 100, currency: 'usd', confirm: true, payment_method: 'pm_card_authenticationRequired', error_on_requires_action: true })
      .catch((e: unknown) => e);
    expect(refused).toMatchObject({ statusCode: 402, code: 'authentication_required' });
  });

  it('refuses a used, revoked or expired token, another currency and an amount over max_amount; a refused create stores nothing', async () => {
    const before = (await f.stripe.paymentIntents.list({ limit: 100 })).data.length;
    const used = await f.grantToken();
    await payWithToken(used.id);
    const cases: [string, string, string][] = [[used.id, 'top', SPT_ERROR_CODES.used]];

    const revoked = await f.grantToken();
    await f.stripe.rawRequest('POST', `/v1/test_helpers/shared_payment/granted_tokens/${revoked.id}/revoke`);
    cases.push([revoked.id, 'payment_method_data', SPT_ERROR_CODES.revoked]);
    const euro = await f.grantToken({ currency: 'eur' });
    cases.push([euro.id, 'top', SPT_ERROR_CODES.currencyMismatch]);
    const small = await f.grantToken({ maxAmount: 4999 });
    cases.push([small.id, 'top', SPT_ERROR_CODES.amountExceeded]);

    for (const [token, placement, code] of cases) {
      const error = await payWithToken(token, placement as 'top').catch((e: unknown) => e);
      expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
      expect(error).toMatchObject({
        statusCode: 400,
        code,
        param: placement === 'top' ? 'shared_payment_granted_token' : 'payment_method_data[shared_payment_granted_token]',
      });
    }

    const expiring = await f.grantToken();
    f.advance(3601);
    try {
      expect(await payWithToken(expiring.id).catch((e: unknown) => e)).toMatchObject({ statusCode: 400, code: SPT_ERROR_CODES.expired });
    } finally {
      f.advance(-3601);
    }
    const unknown = await payWithToken('spt_unknown').catch((e: unknown) => e);
    expect(unknown).toMatchObject({ statusCode: 400, code: 'resource_missing', param: 'shared_payment_granted_token' });

    expect((await f.stripe.paymentIntents.list({ limit: 100 })).data.length).toBe(before + 1);
  });

  it('validates amount, currency and unknown parameters like Stripe', async () => {
    const attempt = (params: Record<string, unknown>) => f.stripe.paymentIntents.create(untyped(params)).catch((e: unknown) => e);
    expect(await attempt({ currency: 'usd' })).toMatchObject({ code: 'parameter_missing', param: 'amount' });
    expect(await attempt({ amount: 'ten', currency: 'usd' })).toMatchObject({ code: 'parameter_invalid_integer', param: 'amount' });
    expect(await attempt({ amount: 0, currency: 'usd' })).toMatchObject({ code: 'parameter_invalid_integer', param: 'amount' });
    expect(await attempt({ amount: 10.5, currency: 'usd' })).toMatchObject({ code: 'parameter_invalid_integer', param: 'amount' });
    expect(await attempt({ amount: 100, currency: 'dollars' })).toMatchObject({ statusCode: 400, param: 'currency' });
    expect(await attempt({ amount: 100, currency: 'usd', colour: 'red' })).toMatchObject({ code: 'parameter_unknown', param: 'colour' });
    expect(await attempt({ amount: 100, currency: 'usd', confirm: true })).toMatchObject({ code: 'payment_intent_unexpected_state' });
    expect(await attempt({ amount: 100, currency: 'usd', payment_method: 'pm_card_visa', shared_payment_granted_token: 'spt_x' })).toMatchObject({
      statusCode: 400,
    });
    expect(await f.stripe.paymentIntents.create({ amount: 100, currency: 'USD' })).toMatchObject({ currency: 'usd', status: 'requires_payment_method' });
  });

  it('cancels an unconfirmed PaymentIntent, not a succeeded one', async () => {
    const open = await f.stripe.paymentIntents.create({ amount: 100, currency: 'usd', description: 'to cancel' });
    const canceled = await f.stripe.paymentIntents.cancel(open.id, { cancellation_reason: 'abandoned' });
    expect(canceled).toMatchObject({ status: 'canceled', cancellation_reason: 'abandoned', description: 'to cancel' });
    const paid = await f.stripe.paymentIntents.create({ amount: 100, currency: 'usd', confirm: true, payment_method: 'pm_card_visa' });
    expect(await f.stripe.paymentIntents.cancel(paid.id).catch((e: unknown) => e)).toMatchObject({ code: 'payment_intent_unexpected_state' });
    expect(await f.stripe.paymentIntents.retrieve('pi_missing').catch((e: unknown) => e)).toMatchObject({ statusCode: 404, code: 'resource_missing' });
  });
});
