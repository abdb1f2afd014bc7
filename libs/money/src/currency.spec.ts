import fc from 'fast-check';
import { formatUnits, parseUnits } from './amount';
import { currencyDecimals, stripeCurrencyDecimals } from './currency';

describe('currency decimals', () => {
  it('follows ISO 4217: hundredths unless the currency says otherwise', () => {
    expect(currencyDecimals('usd')).toBe(2);
    expect(currencyDecimals('EUR')).toBe(2);
    expect(currencyDecimals('jpy')).toBe(0);
    expect(currencyDecimals('krw')).toBe(0);
    expect(currencyDecimals('kwd')).toBe(3);
    expect(currencyDecimals('clf')).toBe(4);
  });

  it('counts as Stripe does where Stripe departs from ISO 4217', () => {
    expect(stripeCurrencyDecimals('usd')).toBe(2);
    expect(stripeCurrencyDecimals('jpy')).toBe(0);
    expect(stripeCurrencyDecimals('bhd')).toBe(3);
    expect(stripeCurrencyDecimals('mga')).toBe(0);
    expect(currencyDecimals('mga')).toBe(2);
    expect(stripeCurrencyDecimals('isk')).toBe(2);
    expect(currencyDecimals('isk')).toBe(0);
  });

  it.each(['', 'us', 'usdc', '12a', 'u$d'])('rejects %j as a currency code', (code) => {
    expect(() => currencyDecimals(code)).toThrow(RangeError);
  });

  it('formats minor units of a currency exactly', () => {
    expect(formatUnits(1234n, stripeCurrencyDecimals('usd'))).toBe('12.34');
    expect(formatUnits(1234n, stripeCurrencyDecimals('jpy'))).toBe('1234');
    expect(formatUnits(1234n, stripeCurrencyDecimals('kwd'))).toBe('1.234');
    expect(formatUnits(-5n, stripeCurrencyDecimals('usd'))).toBe('-0.05');
  });
});

describe('formatUnits', () => {
  it('is the atomic digits with a decimal point shifted in, for any sign and size (no floats)', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: -(10n ** 80n), max: 10n ** 80n }), fc.integer({ min: 0, max: 36 }), (value, decimals) => {
        const text = formatUnits(value, decimals);
        expect(text).toMatch(/^-?(0|[1-9][0-9]*)(\.[0-9]*[1-9])?$/);
        const [whole, fraction = ''] = text.replace('-', '').split('.');
        // the digits, padded back to `decimals` places, are the atomic amount itself
        expect(BigInt(whole + fraction.padEnd(decimals, '0')) * (text.startsWith('-') ? -1n : 1n)).toBe(value);
        if (value >= 0n) expect(parseUnits(text, decimals)).toBe(value);
      }),
    );
  });
});
