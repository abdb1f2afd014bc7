/**
 * A payment's exact share of a transaction's fee in wei: the fee split evenly between the payments the transaction
 * carried, the remainder one wei each to the first of them (by payment id), so the shares add up to the fee.
 * `paymentIds`: every payment the transaction carried, ordered by id. A payment not among them (or a transaction
 * recorded for none) is charged as if the transaction were its alone.
 */
export function gasShare(fee: bigint, paymentIds: readonly string[], paymentId: string): bigint {
  const index = paymentIds.indexOf(paymentId);
  const count = BigInt(Math.max(1, paymentIds.length));
  return fee / count + (index >= 0 && BigInt(index) < fee % count ? 1n : 0n);
}

/** Every payment's share (gasShare) of a transaction's fee, the transaction carrying exactly `paymentIds` (in any order). */
export function gasShares(fee: bigint, paymentIds: readonly string[]): Map<string, bigint> {
  const ordered = [...paymentIds].sort();
  return new Map(ordered.map((id) => [id, gasShare(fee, ordered, id)]));
}
