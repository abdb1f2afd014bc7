import fc from 'fast-check';
import { batchGasLimit, settlementGasLimit } from './gas';

describe('settlementGasLimit', () => {
  it('adds 20% and 5,000 gas to the estimate', () => {
    expect(settlementGasLimit(100_000n)).toBe(125_000n);
    expect(settlementGasLimit(0n)).toBe(5_000n);
  });

  it('is never below the estimate', () => {
    fc.assert(fc.property(fc.bigInt({ min: 0n, max: 30_000_000n }), (estimate) => settlementGasLimit(estimate) > estimate));
  });
});

describe('batchGasLimit', () => {
  it('adds 20% to the sum of the estimates and 50,000 gas once for the batch', () => {
    expect(batchGasLimit([100_000n, 50_000n])).toBe(230_000n);
    expect(batchGasLimit([100_000n, 50_000n, 50_000n])).toBe(290_000n);
  });

  it('is at least 20% above the total of the calls it carries', () => {
    fc.assert(
      fc.property(fc.array(fc.bigInt({ min: 21_000n, max: 1_000_000n }), { minLength: 2, maxLength: 20 }), (estimates) => {
        const total = estimates.reduce((sum, gas) => sum + gas, 0n);
        return batchGasLimit(estimates) >= (total * 12n) / 10n;
      }),
    );
  });
});
