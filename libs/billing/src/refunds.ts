import type { BillingPeriod } from './periods';

/** Refund arithmetic in atomic units: bigint only, never more than was captured. */

export type RefundRefusal = 'amount_not_positive' | 'nothing_to_refund' | 'exceeds_refundable';

export type RefundCheck =
  | { readonly ok: true; readonly amount: bigint; readonly refundableAfter: bigint }
  | { readonly ok: false; readonly reason: RefundRefusal; readonly refundable: bigint };

export interface RefundRequest {
  /** What the payment captured. */
  readonly captured: bigint;
  /** The sum of the refunds already granted against it. */
  readonly alreadyRefunded: bigint;
  /** The amount asked for; undefined asks for everything that remains. */
  readonly requested?: bigint;
}

/**
 * Whether a refund may be granted and for how much. Partial refunds add up: each is checked against what the earlier
 * ones left, so their sum never exceeds the captured amount. A request above what remains is refused, not trimmed.
 */
export function checkRefund({ captured, alreadyRefunded, requested }: RefundRequest): RefundCheck {
  if (captured < 0n || alreadyRefunded < 0n || alreadyRefunded > captured) {
    throw new RangeError(`inconsistent books: ${alreadyRefunded} refunded of ${captured} captured`);
  }
  const refundable = captured - alreadyRefunded;
  const amount = requested ?? refundable;
  if (refundable === 0n) return { ok: false, reason: 'nothing_to_refund', refundable };
  if (amount <= 0n) return { ok: false, reason: 'amount_not_positive', refundable };
  if (amount > refundable) return { ok: false, reason: 'exceeds_refundable', refundable };
  return { ok: true, amount, refundableAfter: refundable - amount };
}

/**
 * The unused part of a paid period when it is canceled at `canceledAt`, pro rata by time: amount · (end − canceledAt)
 * / (end − start), over milliseconds. Rounded down to a whole atomic unit, so the refund never exceeds the exact share
 * and the fraction of a unit stays with the merchant. Before the period starts it is the whole amount, from its end on
 * nothing.
 */
export function unusedPeriodRefund(amount: bigint, period: BillingPeriod, canceledAt: Date): bigint {
  if (amount < 0n) throw new RangeError('a period is never paid a negative amount');
  const start = BigInt(period.start.getTime());
  const end = BigInt(period.end.getTime());
  if (end <= start) throw new RangeError('a period ends after it starts');
  const at = BigInt(canceledAt.getTime());
  if (at <= start) return amount;
  if (at >= end) return 0n;
  return (amount * (end - at)) / (end - start);
}
