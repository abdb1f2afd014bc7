/**
 * Money is a bigint count of atomic units of one asset. It never passes through `number`:
 * decimal strings on the wire, NUMERIC(78,0) in PostgreSQL, bigint in memory.
 */
export const UINT256_MAX = (1n << 256n) - 1n;

const ATOMIC_PATTERN = /^(0|[1-9][0-9]*)$/;

export class AmountParseError extends Error {
  constructor(
    readonly input: unknown,
    reason: string,
  ) {
    super(reason);
    this.name = 'AmountParseError';
  }
}

/** Parses a non-negative integer of atomic units written as a decimal string (no sign, no leading zeros, ≤ uint256). */
export function parseAtomic(input: unknown): bigint {
  if (typeof input !== 'string') throw new AmountParseError(input, 'amount must be a decimal string');
  if (!ATOMIC_PATTERN.test(input)) throw new AmountParseError(input, `"${truncate(input)}" is not a non-negative integer in decimal`);
  const value = BigInt(input);
  if (value > UINT256_MAX) throw new AmountParseError(input, 'amount exceeds uint256');
  return value;
}

export function isAtomicString(input: unknown): input is string {
  return typeof input === 'string' && ATOMIC_PATTERN.test(input) && BigInt(input) <= UINT256_MAX;
}

export function formatAtomic(value: bigint): string {
  if (value < 0n) throw new RangeError('atomic amounts are never negative');
  return value.toString(10);
}

/** Renders atomic units as a human decimal, e.g. 1500000n with 6 decimals → "1.5". Exact, no floats. */
export function formatUnits(value: bigint, decimals: number): string {
  const negative = value < 0n;
  const digits = (negative ? -value : value).toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, digits.length - decimals);
  const fraction = digits.slice(digits.length - decimals).replace(/0+$/, '');
  return `${negative ? '-' : ''}${whole}${fraction ? `.${fraction}` : ''}`;
}

/** Parses a human decimal into atomic units, rejecting more fractional digits than the asset has. */
export function parseUnits(input: string, decimals: number): bigint {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(input);
  if (!match) throw new AmountParseError(input, `"${truncate(input)}" is not a decimal number`);
  const fraction = match[2] ?? '';
  if (fraction.length > decimals) throw new AmountParseError(input, `at most ${decimals} decimal places`);
  return BigInt(match[1] + fraction.padEnd(decimals, '0'));
}

function truncate(text: string): string {
  return text.length > 40 ? `${text.slice(0, 40)}…` : text;
}
