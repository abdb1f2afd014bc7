import type { Period } from './periods';

/** AP2's `payment.agent_recurrence.frequency` values (google-agentic-commerce/AP2, recurring-and-streaming.md §7). */
export type Ap2Frequency = 'ON_DEMAND' | 'DAILY' | 'WEEKLY' | 'BIWEEKLY' | 'MONTHLY' | 'QUARTERLY' | 'ANNUALLY';

/**
 * The AP2 frequency a period maps to exactly, or undefined when none does (the mandate is then refused). Only these
 * five map (ours, §7); AP2's MONTHLY is a calendar month where our months are anchored, so a mandate's spacing is
 * checked on its own terms as well.
 */
export function ap2Frequency(period: Period): Ap2Frequency | undefined {
  return EXACT_FREQUENCIES.get(`${period.unit}×${period.count}`);
}

const EXACT_FREQUENCIES: ReadonlyMap<string, Ap2Frequency> = new Map([
  ['day×1', 'DAILY'],
  ['week×1', 'WEEKLY'],
  ['week×2', 'BIWEEKLY'],
  ['month×1', 'MONTHLY'],
  ['month×3', 'QUARTERLY'],
]);
