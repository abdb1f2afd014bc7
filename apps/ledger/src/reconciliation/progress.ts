import type { RunProgress } from './run.repository';

/** Share of the progress bar per phase: scanning the chain is what takes time. */
const PHASES = { ledger: [0, 5], chain: [5, 80], stripe: [80, 95], matching: [95, 100] } as const;
export type Phase = keyof typeof PHASES;

/** The whole run's percent done, from the phase it is in and that phase's counts (total 0: not known). */
export function percentOf(progress: RunProgress): number {
  const [start, end] = PHASES[progress.phase as Phase] ?? [0, 100];
  return Math.floor(start + (end - start) * (progress.total > 0 ? Math.min(progress.done, progress.total) / progress.total : 0));
}
