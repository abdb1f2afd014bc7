/**
 * The one safety margin over a gas estimate, applied exactly once, when a transaction's gas limit is set: estimates
 * are stored raw. The estimate is made against the state of one block; the margin absorbs what changes by the block
 * the transaction lands in (a cold storage slot, a balance that moved), so a good payment never runs out of gas.
 */
const GAS_MARGIN_PERCENT = 120n;
/** Added once to a single settlement's limit. */
const SINGLE_CALL_OVERHEAD = 5_000n;
/** Added once to a Multicall3 batch's limit: the aggregate3 loop and the result array it builds. */
const BATCH_OVERHEAD = 50_000n;

/** The gas limit for a transaction whose gas was estimated at `estimate`. */
export function settlementGasLimit(estimate: bigint): bigint {
  return withMargin(estimate) + SINGLE_CALL_OVERHEAD;
}

/** The gas limit for one Multicall3 transaction carrying calls estimated at `estimates` one by one. */
export function batchGasLimit(estimates: readonly bigint[]): bigint {
  return withMargin(estimates.reduce((sum, gas) => sum + gas, 0n)) + BATCH_OVERHEAD;
}

function withMargin(gas: bigint): bigint {
  return (gas * GAS_MARGIN_PERCENT) / 100n;
}
