import {
  chargeBatchJobId,
  chargeCommandId,
  inBatches,
  isChargeBatch,
  MAX_CHARGES_PER_JOB,
  parseSubscriptionCommandJob,
  refundCommandId,
  subscriptionCommandJobId,
  subscriptionCommandSchema,
} from './subscription-commands';

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

  describe('a batch of charges in one job', () => {
    const chargeOf = (periodIndex: number, subscriptionId = base.subscriptionId) => ({
      type: 'charge' as const,
      commandId: chargeCommandId(subscriptionId, periodIndex, 0),
      ...base,
      subscriptionId,
      periodIndex,
      attempt: 0,
      periodStart: '2026-02-28T10:00:00.000Z',
      periodEnd: '2026-03-31T10:00:00.000Z',
    });

    it('takes one command or a batch of up to 100 charges, told apart by `commands`', () => {
      const single = parseSubscriptionCommandJob(chargeOf(1));
      expect(single.success && !isChargeBatch(single.data) && single.data.commandId).toBe(chargeCommandId(base.subscriptionId, 1, 0));
      const commands = Array.from({ length: MAX_CHARGES_PER_JOB }, (_, n) => chargeOf(n));
      const batch = parseSubscriptionCommandJob({ commands });
      expect(batch.success && isChargeBatch(batch.data) && batch.data.commands).toEqual(commands);
    });

    it('refuses an empty batch, more than 100, a cancel or a refund in it, a malformed charge, or anything besides `commands`', () => {
      const cancel = { type: 'cancel', commandId: 'cancel-1', ...base, at: 'immediately', effectiveAt: base.requestedAt };
      const refund = { type: 'refund', commandId: refundCommandId(base.subscriptionId, 1), ...base, periodIndex: 1, amount: '1', reason: 'unused_part' };
      for (const data of [
        { commands: [] },
        { commands: Array.from({ length: MAX_CHARGES_PER_JOB + 1 }, (_, n) => chargeOf(n)) },
        { commands: [chargeOf(1), cancel] },
        { commands: [refund] },
        { commands: [{ ...chargeOf(1), periodIndex: -1 }] },
        { commands: [chargeOf(1)], extra: true },
        { commands: chargeOf(1) },
      ]) {
        const parsed = parseSubscriptionCommandJob(data);
        expect(parsed.success, JSON.stringify(data).slice(0, 80)).toBe(false);
      }
      const issues = parseSubscriptionCommandJob({ commands: [chargeOf(1), { ...chargeOf(2), attempt: -1 }] });
      expect(issues.success ? [] : issues.error.issues.map((i) => i.path.join('.'))).toEqual(['commands.1.attempt']);
    });

    it("keys a batch by its commands' ids: the same batch has the same job id, any other batch another", () => {
      const a = [chargeOf(1), chargeOf(2)];
      expect(chargeBatchJobId(a)).toBe(chargeBatchJobId(structuredClone(a)));
      expect(chargeBatchJobId(a)).toMatch(/^subscription-charges-[0-9a-f]{40}$/);
      expect(chargeBatchJobId(a)).not.toBe(chargeBatchJobId([chargeOf(1)]));
      expect(chargeBatchJobId(a)).not.toBe(chargeBatchJobId([chargeOf(2), chargeOf(1)]));
      // ids are joined with a separator no command id can make up from two others
      expect(chargeBatchJobId([{ commandId: 'a' }, { commandId: 'bc' }])).not.toBe(chargeBatchJobId([{ commandId: 'ab' }, { commandId: 'c' }]));
    });

    it('splits a list into batches of at most the size, in order', () => {
      expect(inBatches([1, 2, 3, 4, 5], 2)).toEqual([[1, 2], [3, 4], [5]]);
      expect(inBatches([], 100)).toEqual([]);
    });
  });
});
