import type { AssetTotalsJson } from '@mp/reconciliation';
import { percentOf } from './progress';
import type { RunRecord, RunSource, RunStatus, RunSummary } from './run.repository';

export interface RunView {
  id: string;
  merchantId: string;
  trigger: 'api' | 'schedule';
  status: RunStatus;
  period: { from: string; to: string };
  /** what the ledger is reconciled against: chain, stripe */
  sources: RunSource[];
  /** while running: the phase (ledger, chain, stripe, matching), its counts (chain: blocks) and the whole run's percent */
  progress: { phase: string; done: number; total: number; percent: number } | null;
  summary: RunSummary | null;
  totals: AssetTotalsJson[] | null;
  /** why the last attempt failed (also while a retry is queued) */
  error: string | null;
  createdAt: string;
  startedAt: string | null;
  finishedAt: string | null;
  /** `report` carries a signed token: it opens in a browser without an API key until it expires */
  links: { self: string; rows: string; csv: string; report: string };
}

export function runView(run: RunRecord, token: string): RunView {
  const base = `/reconciliations/${run.id}`;
  return {
    id: run.id,
    merchantId: run.merchantId,
    trigger: run.trigger,
    status: run.status,
    period: { from: run.period.from.toISOString(), to: run.period.to.toISOString() },
    sources: run.sources,
    progress:
      run.status === 'completed' ? { phase: 'done', done: 1, total: 1, percent: 100 } : run.progress && { ...run.progress, percent: percentOf(run.progress) },
    summary: run.summary,
    totals: run.totals,
    error: run.error,
    createdAt: run.createdAt.toISOString(),
    startedAt: run.startedAt?.toISOString() ?? null,
    finishedAt: run.finishedAt?.toISOString() ?? null,
    links: { self: base, rows: `${base}/rows`, csv: `${base}.csv`, report: `${base}/report?token=${token}` },
  };
}
