import fc from 'fast-check';
import { AmountParseError, formatAtomic, formatUnits, parseAtomic, parseUnits, UINT256_MAX } from './amount';

describe('atomic amounts', () => {
  it('round-trips every uint256 through its decimal string', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: UINT256_MAX }), (value) => {
        expect(parseAtomic(formatAtomic(value))).toBe(value);
      }),
    );
  });

  it.each(['', '-1', '01', '1.0', '1e6', ' 1', '0x10', (UINT256_MAX + 1n).toString()])('rejects %j', (input) => {
    expect(() => parseAtomic(input)).toThrow(AmountParseError);
  });

  it('rejects non-strings', () => {
    expect(() => parseAtomic(10 as unknown)).toThrow('decimal string');
  });

  it('formats and parses human units exactly', () => {
    expect(formatUnits(1_500_000n, 6)).toBe('1.5');
    expect(formatUnits(1n, 6)).toBe('0.000001');
    expect(formatUnits(0n, 6)).toBe('0');
    expect(parseUnits('1.5', 6)).toBe(1_500_000n);
    expect(() => parseUnits('0.0000001', 6)).toThrow('at most 6');
    fc.assert(
      fc.property(fc.bigInt({ min: 0n, max: 10n ** 40n }), fc.integer({ min: 0, max: 18 }), (value, decimals) => {
        expect(parseUnits(formatUnits(value, decimals), decimals)).toBe(value);
      }),
    );
  });
});
