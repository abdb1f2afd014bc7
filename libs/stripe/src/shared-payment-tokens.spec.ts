import Stripe from 'stripe';
import { startFixture, type FakeStripeFixture } from '../test/fixture';

type Token = {
  id: string;
  object: string;
  payment_method: string;
  usage_limits: { currency: string; max_amount: number; expires_at: number };
  seller_details: unknown;
  deactivated_at: number | null;
  deactivated_reason: string | null;
};

describe('shared payment tokens', () => {
  let f: FakeStripeFixture;
  beforeAll(async () => {
    f = await startFixture();
  });
  afterAll(() => f.fake.stop());

  const inAnHour = () => Math.floor(Date.now() / 1000) + 3600;

  it('grants, retrieves and revokes a token through the test helpers', async () => {
    const expiresAt = inAnHour();
    const granted: Token = await f.stripe.rawRequest('POST', '/v1/test_helpers/shared_payment/granted_tokens', {
      payment_method: 'pm_card_visa',
      usage_limits: { currency: 'usd', max_amount: 5000, expires_at: expiresAt },
      seller_details: { network_id: 'profile_123' },
    });
    expect(granted).toMatchObject({
      object: 'shared_payment.granted_token',
      livemode: false,
      payment_method: 'pm_card_visa',
      usage_limits: { currency: 'usd', max_amount: 5000, expires_at: expiresAt },
      seller_details: { network_id: 'profile_123' },
      deactivated_at: null,
      deactivated_reason: null,
    });
    expect(granted.id).toMatch(/^spt_[0-9A-Za-z]{24}$/);

    const fetched: Token = await f.stripe.rawRequest('GET', `/v1/shared_payment/granted_tokens/${granted.id}`);
    expect(fetched).toEqual(granted);

    const revoked: Token = await f.stripe.rawRequest('POST', `/v1/test_helpers/shared_payment/granted_tokens/${granted.id}/revoke`);
    expect(revoked).toMatchObject({ id: granted.id, deactivated_reason: 'revoked' });
    expect(revoked.deactivated_at).toBeGreaterThan(0);
  });

  it('issues a token the live-style way, usable by its id on the seller side', async () => {
    const issued: Token = await f.stripe.rawRequest('POST', '/v1/shared_payment/issued_tokens', {
      payment_method: 'pm_card_visa',
      usage_limits: { currency: 'eur', max_amount: 100, expires_at: inAnHour() },
      seller_details: { network_business_profile: 'profile_live' },
    });
    expect(issued).toMatchObject({ object: 'shared_payment.issued_token', seller_details: { network_business_profile: 'profile_live' } });
    const granted: Token = await f.stripe.rawRequest('GET', `/v1/shared_payment/granted_tokens/${issued.id}`);
    expect(granted.id).toBe(issued.id);
  });

  it('shows a token past its expiry as deactivated (expired)', async () => {
    const token = await f.grantToken();
    f.advance(7200);
    try {
      const fetched: Token = await f.stripe.rawRequest('GET', `/v1/shared_payment/granted_tokens/${token.id}`);
      expect(fetched).toMatchObject({ deactivated_reason: 'expired' });
      expect(fetched.deactivated_at).toBe(fetched.usage_limits.expires_at);
    } finally {
      f.advance(-7200);
    }
  });

  it.each([
    ['an unknown payment method', { payment_method: 'pm_nope' }, 'payment_method', 'resource_missing'],
    ['a missing max_amount', { usage_limits: { currency: 'usd', expires_at: 4102444800 } }, 'usage_limits[max_amount]', 'parameter_missing'],
    [
      'a zero max_amount',
      { usage_limits: { currency: 'usd', max_amount: 0, expires_at: 4102444800 } },
      'usage_limits[max_amount]',
      'parameter_invalid_integer',
    ],
    ['an expiry in the past', { usage_limits: { currency: 'usd', max_amount: 10, expires_at: 1000 } }, 'usage_limits[expires_at]', undefined],
    ['an unknown seller detail', { seller_details: { shop: 'x' } }, 'seller_details[shop]', 'parameter_unknown'],
  ])('refuses %s', async (_, override, param, code) => {
    const params = { payment_method: 'pm_card_visa', usage_limits: { currency: 'usd', max_amount: 10, expires_at: inAnHour() }, ...override };
    const error = await f.stripe.rawRequest('POST', '/v1/test_helpers/shared_payment/granted_tokens', params).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Stripe.errors.StripeInvalidRequestError);
    expect(error).toMatchObject({ statusCode: 400, param, code });
  });

  it('answers 404 resource_missing for an unknown token', async () => {
    const error = await f.stripe.rawRequest('GET', '/v1/shared_payment/granted_tokens/spt_missing').catch((e: unknown) => e);
    expect(error).toMatchObject({ statusCode: 404, code: 'resource_missing', message: "No such shared payment granted token: 'spt_missing'" });
  });
});
