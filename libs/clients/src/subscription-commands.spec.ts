import { chargeCommandId, refundCommandId, subscriptionCommandJobId, subscriptionCommandSchema } from './subscription-commands';

describe('the subscription-commands contract', () => {
  const base = {
    subscriptionId: 'c3ViX2V4YW1wbGVfMDAx',
    merchantId: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d',
    requestedAt: '2026-02-28T10:00:00.000Z',
  };

  it('takes a charge and a cancel', () => {
    const charge = {
      type: 'charge',
      commandId: chargeCommandId(base.subscriptionId, 1, 0),
      ...base,
      periodIndex: 1,
      attempt: 0,
      periodStart: '2026-02-28T10:00:00.000Z',
      periodEnd: '2026-03-31T10:00:00.000Z',
    };
    expect(subscriptionCommandSchema.parse(charge)).toEqual(charge);
    const cancel = { type: 'cancel', commandId: 'cancel-1', ...base, at: 'immediately', effectiveAt: base.requestedAt };
    expect(subscriptionCommandSchema.parse(cancel)).toEqual(cancel);
  });

  it('takes a refund of a period, keyed by (subscription, period); a zero, negative or fractional amount is refused', () => {
    const refund = {
      type: 'refund',
      commandId: refundCommandId(base.subscriptionId, 2),
      ...base,
      periodIndex: 2,
      amount: '7500000',
      reason: 'unused_part',
    };
    expect(refund.commandId).toBe(`refund-${base.subscriptionId}-2`);
    expect(subscriptionCommandSchema.parse(refund)).toEqual(refund);
    for (const amount of ['0', '-1', '1.5', '007', '']) expect(subscriptionCommandSchema.safeParse({ ...refund, amount }).success, amount).toBe(false);
    expect(subscriptionCommandSchema.safeParse({ ...refund, reason: '' }).success).toBe(false);
    expect(subscriptionCommandSchema.safeParse({ ...refund, attempt: 0 }).success).toBe(false);
  });

  it('keys a charge by (subscription, period, attempt) and a job by its command', () => {
    expect(chargeCommandId('abc', 3, 1)).toBe('charge-abc-3-1');
    expect(subscriptionCommandJobId({ commandId: 'charge-abc-3-1' })).toBe('subscription-command-charge-abc-3-1');
  });

  it('refuses unknown fields and negative periods', () => {
    expect(
      subscriptionCommandSchema.safeParse({ type: 'cancel', commandId: 'c', ...base, at: 'period_end', effectiveAt: base.requestedAt, refund: true }).success,
    ).toBe(false);
    expect(
      subscriptionCommandSchema.safeParse({
        type: 'charge',
        commandId: 'c',
        ...base,
        periodIndex: -1,
        attempt: 0,
        periodStart: base.requestedAt,
        periodEnd: base.requestedAt,
      }).success,
    ).toBe(false);
  });
});
