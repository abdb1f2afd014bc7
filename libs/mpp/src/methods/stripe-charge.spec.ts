import { stripeChargeRequestSchema } from './stripe-charge';

describe('stripe charge request', () => {
  const request = { amount: '500', currency: 'usd', methodDetails: { networkId: 'profile_1', paymentMethodTypes: ['card'] } };

  // a refinement that ran BigInt() after the regex failed used to throw here instead of answering
  it.each(['1.5', 'abc', '-1', '0', '100000000', ''])('refuses the amount %j with a reason, without throwing', (amount) => {
    const parsed = stripeChargeRequestSchema.safeParse({ ...request, amount });
    expect(parsed.success).toBe(false);
    expect(parsed.error?.issues[0]).toMatchObject({ path: ['amount'], message: expect.stringMatching(/minor units, at most 99999999/) });
  });

  it('takes Stripe’s maximum', () => {
    expect(stripeChargeRequestSchema.safeParse({ ...request, amount: '99999999' }).success).toBe(true);
  });
});
