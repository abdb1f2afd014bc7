import { CAPTURED_DETAIL, REFUND_OF_DETAIL, type ReconRow } from './model';

/**
 * The `over_refund` breaks among reconciled rows: a payment whose refunds, as the ledger booked them, add up to more
 * than it captured. What a payment captured comes from the external side: an external refund's details (Stripe names
 * the PaymentIntent and its amount received). A ledger refund counts against that payment when its external refund
 * names it, or when its own reference is the payment's (a refund booked by PaymentIntent).
 * Duplicates are left out: they are breaks of their own already. One row per payment, at its latest refund's time.
 */
export function overRefunds(rows: ReconRow[]): ReconRow[] {
  const captured = new Map<string, bigint>();
  const capturedBy = (source: string, asset: string, payment: string) => `${source}|${asset}|${payment}`;
  for (const row of rows) {
    const details = row.external?.details;
    if (row.entryKind === 'refund' && details?.[REFUND_OF_DETAIL] && /^\d+$/.test(details[CAPTURED_DETAIL] ?? ''))
      captured.set(capturedBy(row.source, row.asset, details[REFUND_OF_DETAIL]), BigInt(details[CAPTURED_DETAIL]));
  }
  const refunded = new Map<string, { row: ReconRow; payment: string; total: bigint; refunds: string[]; at: Date }>();
  for (const row of rows) {
    if (row.entryKind !== 'refund' || !row.ledger || row.kind === 'duplicate') continue;
    const payment = row.external?.details[REFUND_OF_DETAIL] ?? row.ledger.reference;
    const key = capturedBy(row.source, row.asset, payment);
    if (!captured.has(key)) continue;
    const sum = refunded.get(key) ?? { row, payment, total: 0n, refunds: [], at: row.ledger.occurredAt };
    sum.total += row.ledger.amount;
    sum.refunds.push(row.ledger.id);
    if (row.ledger.occurredAt > sum.at) sum.at = row.ledger.occurredAt;
    refunded.set(key, sum);
  }
  const breaks: ReconRow[] = [];
  for (const [key, sum] of refunded) {
    const payment = captured.get(key)!;
    if (sum.total <= payment) continue;
    const refunds = [...sum.refunds].sort();
    breaks.push({
      key: ['over_refund', sum.row.source, sum.row.asset, 'refund', '-', sum.payment].join('|'),
      kind: 'over_refund',
      source: sum.row.source,
      asset: sum.row.asset,
      entryKind: 'refund',
      reference: sum.payment,
      occurredAt: sum.at,
      difference: payment - sum.total,
      refunds,
      captured: payment,
      refunded: sum.total,
    });
  }
  return breaks;
}
