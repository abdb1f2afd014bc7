import { createChallenge, type Challenge } from '../challenge';
import {
  checkStripeSubscription,
  judgeSubscriptionInvoice,
  parseStripeSubscriptionRequest,
  stripeRecurring,
  stripeSubscriptionIdempotencyKey,
  type ExpectedInvoice,
  type StripeInvoiceFacts,
} from './stripe-subscription';

const REQUEST = {
  amount: '1500',
  currency: 'usd',
  periodUnit: 'month',
  periodCount: '1',
  description: 'Forecasts, monthly',
  methodDetails: { networkId: 'profile_1', paymentMethodTypes: ['card'] },
};

const challengeFor = (request: Record<string, unknown>): Challenge =>
  createChallenge('x'.repeat(32), {
    realm: 'api.example.com',
    method: 'stripe',
    intent: 'subscription',
    request,
    expires: new Date(Date.now() + 60_000).toISOString(),
  });

describe('stripe subscription profile: the request', () => {
  it('takes the profile request and maps the period to the Price exactly', () => {
    expect(parseStripeSubscriptionRequest(REQUEST)).toEqual({ ok: true, value: REQUEST });
    expect(stripeRecurring({ periodUnit: 'week', periodCount: '2' })).toEqual({ interval: 'week', interval_count: 2 });
  });

  it.each([
    [{ recipient: '0xabc' }, /^recipient: the stripe profile has no recipient/],
    [{ subscriptionExpires: '2027-01-01T00:00:00Z' }, /^subscriptionExpires: /],
    [{ expires: '2027-01-01T00:00:00Z' }, /^expires: /],
    [{ periodUnit: 'year' }, /^periodUnit: must be day, week or month/],
    [{ periodCount: '37' }, /^periodCount: a Stripe price cannot recur every 37 months/],
    [{ periodUnit: 'week', periodCount: '157' }, /156 weeks/],
    [{ periodUnit: 'day', periodCount: '1095' }, null],
    [{ periodCount: '0' }, /^periodCount: must be a positive decimal string/],
    [{ amount: '100000000' }, /^amount: .*at most 99999999/],
    [{ amount: '99999999' }, null],
    [{ amount: '1.5' }, /^amount: /],
    [{ methodDetails: { networkId: 'profile_1', paymentMethodTypes: ['sepa_debit'] } }, /^methodDetails\.paymentMethodTypes\.0: must be card or link/],
    [{ methodDetails: { networkId: 'profile_1', paymentMethodTypes: ['card'], captureMethod: 'manual' } }, /^methodDetails: /],
  ])('refuses %j by name, never rounding a period', (change, expected) => {
    const answer = parseStripeSubscriptionRequest({ ...REQUEST, ...change });
    if (expected === null) expect(answer.ok).toBe(true);
    else expect(answer).toEqual({ ok: false, error: { code: 'invalid-challenge', detail: expect.stringMatching(expected) } });
  });

  it('checks the credential payload: a PaymentMethod and maybe a Customer', () => {
    const challenge = challengeFor(REQUEST);
    expect(checkStripeSubscription(challenge, { paymentMethod: 'pm_123', customer: 'cus_9' })).toMatchObject({
      ok: true,
      value: { payload: { paymentMethod: 'pm_123', customer: 'cus_9' }, period: { unit: 'month', count: 1 } },
    });
    expect(checkStripeSubscription(challenge, { paymentMethod: 'card_123' })).toMatchObject({
      ok: false,
      error: { code: 'invalid-payload', detail: /payload\.paymentMethod/ },
    });
    expect(checkStripeSubscription(challenge, { paymentMethod: 'pm_1', spt: 'spt_1' })).toMatchObject({ ok: false, error: { code: 'invalid-payload' } });
    expect(checkStripeSubscription(challengeFor({ ...REQUEST, recipient: 'x' }), { paymentMethod: 'pm_1' })).toMatchObject({
      ok: false,
      error: { code: 'invalid-challenge' },
    });
  });

  it('keys the subscription create by every term, so only the same activation finds it again', () => {
    const base = {
      challengeId: 'ch_1',
      customer: 'cus_1',
      paymentMethod: 'pm_1',
      request: { amount: '1500', currency: 'usd', periodUnit: 'month', periodCount: '1' },
    } as const;
    const key = stripeSubscriptionIdempotencyKey(base);
    expect(key).toMatch(/^mpp_sub_[A-Za-z0-9_-]{43}$/);
    expect(stripeSubscriptionIdempotencyKey({ ...base })).toBe(key);
    expect(stripeSubscriptionIdempotencyKey({ ...base, paymentMethod: 'pm_2' })).not.toBe(key);
    expect(stripeSubscriptionIdempotencyKey({ ...base, request: { ...base.request, periodCount: '2' } })).not.toBe(key);
  });
});

describe('stripe subscription profile: judging an invoice', () => {
  // 2026-01-31T10:00:00Z: a month-end anchor, so later periods clamp (Feb 28, Mar 31)
  const anchor = new Date('2026-01-31T10:00:00Z');
  const seconds = (iso: string) => Date.parse(iso) / 1000;
  const expected: ExpectedInvoice = { subscription: 'sub_1', customer: 'cus_1', amount: '1500', currency: 'usd', anchor, period: { unit: 'month', count: 1 } };

  /** The fields of an invoice as the fake Stripe answers `latest_invoice` expanded with `payments`. */
  const invoice = (start: string, end: string, change: Partial<StripeInvoiceFacts> = {}): StripeInvoiceFacts => ({
    id: 'in_1',
    status: 'paid',
    customer: 'cus_1',
    currency: 'usd',
    amount_paid: 1500,
    total: 1500,
    subtotal: 1500,
    discounts: [],
    total_discount_amounts: [],
    total_taxes: [],
    total_pretax_credit_amounts: [],
    parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_1' } },
    lines: {
      data: [
        {
          amount: 1500,
          currency: 'usd',
          period: { start: seconds(start), end: seconds(end) },
          parent: { type: 'subscription_item_details', subscription_item_details: { subscription: 'sub_1', proration: false } },
        },
      ],
      has_more: false,
    },
    payments: { data: [{ payment: { type: 'payment_intent', payment_intent: 'pi_1' }, status: 'paid' }] },
    ...change,
  });

  it('maps a paid invoice to its canonical period, months clamped from the original anchor', () => {
    expect(judgeSubscriptionInvoice(invoice('2026-01-31T10:00:00Z', '2026-02-28T10:00:00Z'), expected)).toEqual({
      ok: true,
      periodIndex: 0,
      paymentIntent: 'pi_1',
    });
    expect(judgeSubscriptionInvoice(invoice('2026-02-28T10:00:00Z', '2026-03-31T10:00:00Z'), expected)).toMatchObject({ ok: true, periodIndex: 1 });
    expect(judgeSubscriptionInvoice(invoice('2026-04-30T10:00:00Z', '2026-05-31T10:00:00Z'), expected)).toMatchObject({ ok: true, periodIndex: 3 });
  });

  const line = invoice('2026-02-28T10:00:00Z', '2026-03-31T10:00:00Z').lines.data[0];
  it.each<[string, Partial<StripeInvoiceFacts>, string]>([
    ['open', { status: 'open' }, 'not_paid'],
    ['void', { status: 'void' }, 'not_paid'],
    ['of another subscription', { parent: { type: 'subscription_details', subscription_details: { subscription: 'sub_2' } } }, 'other_subscription'],
    ['manual, with no subscription', { parent: null }, 'other_subscription'],
    ['of another customer', { customer: 'cus_2' }, 'other_customer'],
    ['with an extra item', { lines: { data: [line, { ...line, amount: 100 }], has_more: false } }, 'not_one_subscription_line'],
    ['with a one-off line', { lines: { data: [{ ...line, parent: { type: 'invoice_item_details' } }] } }, 'not_one_subscription_line'],
    [
      'a proration',
      { lines: { data: [{ ...line, parent: { type: 'subscription_item_details', subscription_item_details: { subscription: 'sub_1', proration: true } } }] } },
      'proration',
    ],
    ['discounted', { total_discount_amounts: [{ amount: 100 }], total: 1400, amount_paid: 1400 }, 'discount_tax_or_credit'],
    ['taxed', { total_taxes: [{ amount: 120 }], total: 1620, amount_paid: 1620 }, 'discount_tax_or_credit'],
    ['paid partly from credit', { total_pretax_credit_amounts: [{ amount: 500 }] }, 'discount_tax_or_credit'],
    ['for another amount', { amount_paid: 1499, total: 1499, subtotal: 1499 }, 'amount_mismatch'],
    ['in another currency', { currency: 'eur' }, 'currency_mismatch'],
    ['without its payment expanded', { payments: null }, 'no_payment_intent'],
  ])('refuses an invoice %s', (_, change, reason) => {
    expect(judgeSubscriptionInvoice(invoice('2026-02-28T10:00:00Z', '2026-03-31T10:00:00Z', change), expected)).toMatchObject({ ok: false, reason });
  });

  it('refuses a line that is not exactly one period (a stepped month, a start off the boundary, before the anchor)', () => {
    // stepping from Feb 28 would give Mar 28; the original anchor says Mar 31
    expect(judgeSubscriptionInvoice(invoice('2026-02-28T10:00:00Z', '2026-03-28T10:00:00Z'), expected)).toMatchObject({ ok: false, reason: 'not_a_period' });
    expect(judgeSubscriptionInvoice(invoice('2026-03-01T10:00:00Z', '2026-03-31T10:00:00Z'), expected)).toMatchObject({ ok: false, reason: 'not_a_period' });
    expect(judgeSubscriptionInvoice(invoice('2025-12-31T10:00:00Z', '2026-01-31T10:00:00Z'), expected)).toMatchObject({ ok: false, reason: 'not_a_period' });
  });
});
