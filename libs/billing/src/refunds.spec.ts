import fc from 'fast-check';
import { periodAt } from './periods';
import { checkRefund, unusedPeriodRefund } from './refunds';

const at = (iso: string) => new Date(iso);

describe('refund limits', () => {
  it('grants partial refunds that add up to the captured amount and not a unit more', () => {
    expect(checkRefund({ captured: 10_000_000n, alreadyRefunded: 0n, requested: 4_000_000n })).toEqual({
      ok: true,
      amount: 4_000_000n,
      refundableAfter: 6_000_000n,
    });
    expect(checkRefund({ captured: 10_000_000n, alreadyRefunded: 4_000_000n, requested: 6_000_000n })).toEqual({
      ok: true,
      amount: 6_000_000n,
      refundableAfter: 0n,
    });
    expect(checkRefund({ captured: 10_000_000n, alreadyRefunded: 4_000_000n, requested: 6_000_001n })).toEqual({
      ok: false,
      reason: 'exceeds_refundable',
      refundable: 6_000_000n,
    });
    expect(checkRefund({ captured: 10_000_000n, alreadyRefunded: 10_000_000n, requested: 1n })).toEqual({
      ok: false,
      reason: 'nothing_to_refund',
      refundable: 0n,
    });
  });

  it('refuses a refund above the captured amount', () => {
    expect(checkRefund({ captured: 1_000n, alreadyRefunded: 0n, requested: 1_001n })).toEqual({ ok: false, reason: 'exceeds_refundable', refundable: 1_000n });
  });

  it('refunds what remains when no amount is asked for, and refuses zero or less', () => {
    expect(checkRefund({ captured: 1_000n, alreadyRefunded: 250n })).toEqual({ ok: true, amount: 750n, refundableAfter: 0n });
    expect(checkRefund({ captured: 1_000n, alreadyRefunded: 0n, requested: 0n })).toEqual({ ok: false, reason: 'amount_not_positive', refundable: 1_000n });
    expect(checkRefund({ captured: 1_000n, alreadyRefunded: 0n, requested: -5n })).toMatchObject({ ok: false, reason: 'amount_not_positive' });
    expect(checkRefund({ captured: 0n, alreadyRefunded: 0n })).toEqual({ ok: false, reason: 'nothing_to_refund', refundable: 0n });
  });

  it('will not reason over books that already refunded more than they captured', () => {
    expect(() => checkRefund({ captured: 10n, alreadyRefunded: 11n })).toThrow('inconsistent books');
    expect(() => checkRefund({ captured: -1n, alreadyRefunded: 0n })).toThrow(RangeError);
  });

  it('never lets any sequence of requests refund more than was captured', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 0n, max: 10n ** 30n }),
        fc.array(fc.option(fc.bigInt({ min: -10n, max: 10n ** 30n }), { nil: undefined })),
        (captured, requests) => {
          let refunded = 0n;
          for (const requested of requests) {
            const check = checkRefund({ captured, alreadyRefunded: refunded, requested });
            if (check.ok) {
              expect(check.amount).toBe(requested ?? captured - refunded);
              refunded += check.amount;
              expect(check.refundableAfter).toBe(captured - refunded);
            } else {
              expect(check.refundable).toBe(captured - refunded);
            }
            expect(refunded <= captured).toBe(true);
          }
        },
      ),
    );
  });
});

describe('the unused part of a period', () => {
  // Period 1 of a Jan 31 anchor: Feb 28 10:00 → Mar 31 10:00, 31 days.
  const period = periodAt(at('2027-01-31T10:00:00.000Z'), { unit: 'month', count: 1 }, 1);

  it('is pro rata by time, rounded down to whole atomic units', () => {
    // 10 days of 31 left: 10 USDC · 10/31 = 3.225806451… USDC.
    expect(unusedPeriodRefund(10_000_000n, period, at('2027-03-21T10:00:00.000Z'))).toBe(3_225_806n);
    expect(unusedPeriodRefund(31n, period, at('2027-03-21T10:00:00.000Z'))).toBe(10n);
    // One millisecond in: 100 units · (L − 1) / L is just under 100.
    expect(unusedPeriodRefund(100n, period, at('2027-02-28T10:00:00.001Z'))).toBe(99n);
    expect(unusedPeriodRefund(10n ** 30n, period, at('2027-03-31T09:59:59.999Z'))).toBe(373_357_228_195_937_873_357n);
  });

  it('is everything before the period starts and nothing from its end', () => {
    expect(unusedPeriodRefund(10_000_000n, period, period.start)).toBe(10_000_000n);
    expect(unusedPeriodRefund(10_000_000n, period, at('2027-01-01T00:00:00.000Z'))).toBe(10_000_000n);
    expect(unusedPeriodRefund(10_000_000n, period, period.end)).toBe(0n);
  });

  it('is the exact share rounded down, and never grows as the cancel comes later', () => {
    const length = BigInt(period.end.getTime() - period.start.getTime());
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.integer({ min: 0, max: Number(length) }), fc.nat(1_000_000), (amount, usedMs, laterMs) => {
        const refund = unusedPeriodRefund(amount, period, new Date(period.start.getTime() + usedMs));
        const left = length - BigInt(usedMs);
        expect(refund * length <= amount * left && amount * left < (refund + 1n) * length).toBe(true);
        expect(unusedPeriodRefund(amount, period, new Date(period.start.getTime() + usedMs + laterMs)) <= refund).toBe(true);
      }),
    );
  });

  it('refuses a negative amount and an empty period', () => {
    expect(() => unusedPeriodRefund(-1n, period, period.start)).toThrow(RangeError);
    expect(() => unusedPeriodRefund(1n, { index: 0, start: period.start, end: period.start }, period.start)).toThrow(RangeError);
  });
});
