/**
 * How many decimal places a fiat currency's amounts have: the one place this is written down. Amounts of a currency
 * are counted in its minor unit (cents for USD, yen for JPY, fils for KWD); `formatUnits(amount, decimals)` turns
 * them into a human decimal.
 */

/** ISO 4217 currencies whose minor unit is not a hundredth (https://www.iso.org/iso-4217-currency-codes.html). */
const ISO_4217_EXPONENTS: Readonly<Record<string, number>> = {
  bif: 0,
  clp: 0,
  djf: 0,
  gnf: 0,
  isk: 0,
  jpy: 0,
  kmf: 0,
  krw: 0,
  pyg: 0,
  rwf: 0,
  ugx: 0,
  uyi: 0,
  vnd: 0,
  vuv: 0,
  xaf: 0,
  xof: 0,
  xpf: 0,
  bhd: 3,
  iqd: 3,
  jod: 3,
  kwd: 3,
  lyd: 3,
  omr: 3,
  tnd: 3,
  clf: 4,
  uyw: 4,
};

/**
 * Where Stripe counts a currency's amounts differently from ISO 4217 (https://docs.stripe.com/currencies): MGA in
 * whole ariary, ISK in hundredths of a króna (its API takes ISK amounts ×100 for backwards compatibility).
 */
const STRIPE_EXPONENTS: Readonly<Record<string, number>> = { mga: 0, isk: 2 };

const CURRENCY_CODE = /^[a-z]{3}$/;

/** The ISO 4217 minor-unit exponent of a three-letter currency code (any case): 2 unless ISO says otherwise. */
export function currencyDecimals(currency: string): number {
  const code = currency.toLowerCase();
  if (!CURRENCY_CODE.test(code)) throw new RangeError(`"${currency.slice(0, 10)}" is not a three-letter currency code`);
  return ISO_4217_EXPONENTS[code] ?? 2;
}

/** The decimals of a currency's amounts as Stripe counts them (`amount` on a PaymentIntent, refund or balance transaction). */
export function stripeCurrencyDecimals(currency: string): number {
  const code = currency.toLowerCase();
  return STRIPE_EXPONENTS[code] ?? currencyDecimals(code);
}
