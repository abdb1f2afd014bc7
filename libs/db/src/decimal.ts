import { Prisma } from './generated/client';

/**
 * Codecs between in-memory amounts (bigint atomic units, ARCHITECTURE §4) and NUMERIC(78,0) columns
 * (Prisma.Decimal). Exact for every uint256.
 */
export function toDbDecimal(value: bigint | number | string): Prisma.Decimal {
  if (typeof value === 'number' && !Number.isSafeInteger(value)) throw new RangeError(`not a safe integer: ${value}`);
  return new Prisma.Decimal(value.toString());
}

export function fromDbDecimal(value: Prisma.Decimal | { toFixed(): string } | string): bigint {
  const s = typeof value === 'string' ? value : value.toFixed();
  if (!/^-?\d+$/.test(s)) throw new RangeError(`not an integer amount: ${s}`);
  return BigInt(s);
}
