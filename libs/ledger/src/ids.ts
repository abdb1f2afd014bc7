/**
 * Ledger ids are 128-bit, chosen by the caller (TigerBeetle's u128 ids) so that a retry can reuse them. They are
 * written either as a UUID or as the decimal form of the 128-bit integer, and always stored and returned as the
 * lowercase UUID (the decimal 1 is `00000000-0000-0000-0000-000000000001`).
 */
export type LedgerId = string;

export const ZERO_ID: LedgerId = '00000000-0000-0000-0000-000000000000';
export const MAX_ID: LedgerId = 'ffffffff-ffff-ffff-ffff-ffffffffffff';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const U128 = /^(0|[1-9][0-9]{0,38})$/;
const U128_MAX = (1n << 128n) - 1n;

/** The canonical id, or undefined when `input` is neither a UUID nor a decimal 128-bit integer. */
export function parseLedgerId(input: unknown): LedgerId | undefined {
  if (typeof input !== 'string') return undefined;
  if (UUID.test(input)) return input.toLowerCase();
  if (!U128.test(input)) return undefined;
  const value = BigInt(input);
  if (value > U128_MAX) return undefined;
  const hex = value.toString(16).padStart(32, '0');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
