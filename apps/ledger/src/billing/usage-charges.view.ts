import type { UsagePeriodClose } from './subscription';
import type { UsageChargeRecord, UsageSoFar } from './usage-charges.repository';

/** A recorded usage charge as the API shows it: amounts decimal strings of atomic units, quantities exact decimals. */
export function usageChargeView(c: UsageChargeRecord) {
  return {
    periodIndex: c.periodIndex,
    componentKey: c.componentKey,
    meterKey: c.meterKey,
    unitAmount: c.unitAmount,
    quantity: c.quantity,
    amount: c.amount.toString(),
    periodStart: c.periodStart.toISOString(),
    periodEnd: c.periodEnd.toISOString(),
    state: c.state,
    topUpNeeded: c.topUpNeeded?.toString() ?? null,
    transferId: c.transferId,
    recordedAt: c.recordedAt.toISOString(),
    triedAt: c.triedAt?.toISOString() ?? null,
    paidAt: c.paidAt?.toISOString() ?? null,
  };
}

/** The open usage period and what each component's usage of it comes to so far (nothing is recorded before it closes). */
export function currentUsageView(open: UsagePeriodClose, soFar: UsageSoFar[]) {
  return {
    periodIndex: open.periodIndex,
    periodStart: open.start.toISOString(),
    periodEnd: open.end.toISOString(),
    components: soFar.map((c) => ({
      componentKey: c.componentKey,
      meterKey: c.meterKey,
      unitAmount: c.unitAmount,
      quantity: c.quantity,
      amount: c.amount?.toString() ?? null,
    })),
  };
}
