import type { SettlementRecord } from './chain-payments.repository';

/** How long a claim's gas estimate stands in for a new simulation. */
export const FRESH_CLAIM_MS = 10_000;

/**
 * The raw gas estimate a send starts from (the margin is added once, by settlementGasLimit or batchGasLimit): a
 * fresh first send reuses the claim's own estimate, made seconds ago by simulating this very call; anything older,
 * or sent before (its estimate is cleared), is estimated again, which simulates it again.
 */
export function sendGasEstimate(record: Pick<SettlementRecord, 'settleGas' | 'updatedAt'>, now: number, estimate: () => Promise<bigint>): Promise<bigint> {
  const fresh = freshClaimGas(record, now);
  return fresh !== undefined ? Promise.resolve(fresh) : estimate();
}

/** The claim's own estimate while it stands in for a new simulation (see sendGasEstimate), else undefined. */
export function freshClaimGas(record: Pick<SettlementRecord, 'settleGas' | 'updatedAt'>, now: number): bigint | undefined {
  return record.settleGas !== null && now - record.updatedAt.getTime() < FRESH_CLAIM_MS ? record.settleGas : undefined;
}
