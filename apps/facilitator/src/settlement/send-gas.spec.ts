import { batchGasLimit, settlementGasLimit } from '@mp/chain';
import { FRESH_CLAIM_MS, freshClaimGas, sendGasEstimate } from './send-gas';

const now = Date.parse('2026-12-01T12:00:00Z');
const estimate = 61_234n;
const notCalled = () => Promise.reject(new Error('a fresh claim must not be estimated again'));

describe('sendGasEstimate', () => {
  const fresh = { settleGas: estimate, updatedAt: new Date(now - 2_000) };
  const stale = { settleGas: estimate, updatedAt: new Date(now - FRESH_CLAIM_MS) };
  const sentBefore = { settleGas: null, updatedAt: new Date(now - 1_000) };

  it("reuses a fresh claim's estimate without estimating again", async () => {
    await expect(sendGasEstimate(fresh, now, notCalled)).resolves.toBe(estimate);
  });

  it("freshClaimGas: the claim's estimate while it is fresh, else nothing (a batch sends only fresh claims)", () => {
    expect(freshClaimGas(fresh, now)).toBe(estimate);
    expect(freshClaimGas(stale, now)).toBeUndefined();
    expect(freshClaimGas(sentBefore, now)).toBeUndefined();
  });

  it('estimates again once the claim is no longer fresh, or was sent before', async () => {
    await expect(sendGasEstimate(stale, now, () => Promise.resolve(70_000n))).resolves.toBe(70_000n);
    await expect(sendGasEstimate(sentBefore, now, () => Promise.resolve(70_000n))).resolves.toBe(70_000n);
  });

  it('gives a fresh claim and a re-estimate the same gas limit for the same estimate, alone or in a batch', async () => {
    const reused = await sendGasEstimate(fresh, now, notCalled);
    const reestimated = await sendGasEstimate(stale, now, () => Promise.resolve(estimate));
    expect(settlementGasLimit(reused)).toBe(settlementGasLimit(reestimated));
    expect(settlementGasLimit(reused)).toBe((estimate * 12n) / 10n + 5_000n);
    expect(batchGasLimit([reused, 40_000n])).toBe(batchGasLimit([reestimated, 40_000n]));
  });
});
