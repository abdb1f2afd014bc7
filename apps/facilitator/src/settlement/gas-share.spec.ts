import fc from 'fast-check';
import { gasShare, gasShares } from './gas-share';

describe('gasShare', () => {
  it('gives a transaction of one payment its whole fee', () => {
    expect(gasShare(21_000_000_000n, ['a'], 'a')).toBe(21_000_000_000n);
  });

  it('splits evenly, the remainder one wei each to the first payments by id', () => {
    const ids = ['a', 'b', 'c'];
    expect(ids.map((id) => gasShare(100n, ids, id))).toEqual([34n, 33n, 33n]);
    expect(ids.map((id) => gasShare(101n, ids, id))).toEqual([34n, 34n, 33n]);
    expect(ids.map((id) => gasShare(99n, ids, id))).toEqual([33n, 33n, 33n]);
  });

  it('shares a fee smaller than the batch as one wei to each of the first payments', () => {
    const ids = ['a', 'b', 'c', 'd'];
    expect(ids.map((id) => gasShare(2n, ids, id))).toEqual([1n, 1n, 0n, 0n]);
  });

  it('charges a payment the transaction is not recorded for the whole fee', () => {
    expect(gasShare(100n, [], 'a')).toBe(100n);
  });

  it('always adds up to the fee, and no two shares differ by more than one wei', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 24n }), fc.uniqueArray(fc.uuid(), { minLength: 1, maxLength: 50 }), (fee, unordered) => {
        const ids = [...unordered].sort();
        const shares = ids.map((id) => gasShare(fee, ids, id));
        const min = shares.reduce((a, b) => (a < b ? a : b));
        const max = shares.reduce((a, b) => (a > b ? a : b));
        return shares.reduce((a, b) => a + b, 0n) === fee && max - min <= 1n;
      }),
    );
  });
});

describe('gasShares', () => {
  it('gives every payment of the transaction its gasShare, in whatever order they are named', () => {
    expect(gasShares(100n, ['c', 'a', 'b'])).toEqual(
      new Map([
        ['a', 34n],
        ['b', 33n],
        ['c', 33n],
      ]),
    );
  });

  it('agrees with gasShare over the ordered ids, and adds up to the fee', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 24n }), fc.uniqueArray(fc.uuid(), { minLength: 1, maxLength: 50 }), (fee, ids) => {
        const shares = gasShares(fee, ids);
        const ordered = [...ids].sort();
        return ordered.every((id) => shares.get(id) === gasShare(fee, ordered, id)) && [...shares.values()].reduce((a, b) => a + b, 0n) === fee;
      }),
    );
  });
});
