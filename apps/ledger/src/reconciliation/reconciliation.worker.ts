import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { LedgerMetrics } from '../ledger.metrics';
import { UnknownNetworkError } from './chain/chain-scanner';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';
import { LEDGER_SOURCE, type LedgerSource } from './reconciliation.ports';
import {
  RECONCILIATION_QUEUE,
  ReconciliationQueue,
  RUN_ATTEMPTS,
  type DeferredScheduledRun,
  type ReconciliationJobData,
  type ReconciliationJobName,
} from './reconciliation.queue';
import { ReconciliationRunner } from './reconciliation.runner';
import { RunRepository, type RunProgress, type RunSource } from './run.repository';
import type { Period } from '@mp/reconciliation';
import { StripeScanner } from '../stripe/stripe-scanner';
import { lastCompletePeriod, scheduledRunId } from './scheduled-runs';

/** How often a running job's progress is written to its run (the API reads it from there). */
const PROGRESS_EVERY_MS = 250;
/** A scheduled run whose merchant has another run in flight is asked for again this much later. */
export const SCHEDULE_DEFER_MS = 60_000;

/**
 * Runs reconciliation jobs: `run` does one run with progress; `schedule` creates the last complete period's run for
 * every merchant the ledger knows and enqueues them. A run that fails is retried; after the last attempt (or at once
 * when retrying cannot help) it is marked failed with the reason. The jobs come from {@link ReconciliationProcessor}.
 */
@Injectable()
export class ReconciliationWorker {
  private readonly logger = new Logger('Reconciliation');

  constructor(
    @Inject(RECON_CONFIG) private readonly config: ReconciliationConfig,
    @Inject(LEDGER_SOURCE) private readonly ledger: LedgerSource,
    private readonly runner: ReconciliationRunner,
    private readonly runs: RunRepository,
    private readonly queue: ReconciliationQueue,
    private readonly stripe: StripeScanner,
    @Optional() private readonly metrics?: LedgerMetrics,
  ) {}

  async process(job: Job<ReconciliationJobData, void, ReconciliationJobName>): Promise<void> {
    if (job.name === 'schedule') {
      const deferred = job.data as Partial<DeferredScheduledRun>;
      if (deferred.merchantId) {
        await this.scheduleOne(deferred.merchantId, { from: new Date(deferred.from!), to: new Date(deferred.to!) }, deferred.deferrals ?? 0);
        return;
      }
      // the time the scheduler meant, not when a worker got to it: a late tick still reconciles its own period
      await this.schedule(new Date(job.timestamp + (job.opts.delay ?? 0)));
      return;
    }
    const { runId } = job.data as { runId: string };
    let lastWrite = 0;
    try {
      await this.runner.run(runId, (progress) => {
        void job.updateProgress(progress).catch(() => undefined);
        const now = Date.now();
        if (now - lastWrite < PROGRESS_EVERY_MS && progress.done < progress.total) return;
        lastWrite = now;
        void this.runs.progress(runId, progress satisfies RunProgress).catch(() => undefined);
      });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const final = error instanceof UnknownNetworkError || job.attemptsMade + 1 >= (job.opts.attempts ?? RUN_ATTEMPTS);
      if (final) {
        await this.runs.fail(runId, message);
        this.metrics?.recordRun('failed');
      } else await this.runs.retrying(runId, message);
      throw final ? new UnrecoverableError(message) : error;
    }
  }

  /**
   * One run per merchant for the last complete period; ids derived from (merchant, period), so a second tick adds
   * none. A merchant with another run in flight gets its scheduled run once that one has finished (see scheduleOne).
   */
  async schedule(now: Date): Promise<string[]> {
    const period = lastCompletePeriod(now, this.config.schedulePeriod);
    const ids: string[] = [];
    for (const merchantId of await this.ledger.merchants()) {
      if ((await this.scheduleOne(merchantId, period, 0)) === 'created') ids.push(scheduledRunId(merchantId, period));
    }
    if (ids.length) this.logger.log(`scheduled ${ids.length} reconciliation run(s) of ${period.from.toISOString()} to ${period.to.toISOString()}`);
    return ids;
  }

  /** The merchant's scheduled run of the period, created and enqueued, or put off while another of its runs is in flight. */
  async scheduleOne(merchantId: string, period: Period, deferrals: number): Promise<'created' | 'exists' | 'deferred'> {
    const id = scheduledRunId(merchantId, period);
    const sources: RunSource[] = ['chain', ...(this.stripe.enabled ? (['stripe'] as const) : [])];
    const outcome = await this.runs.create({ id, merchantId, period, sources, trigger: 'schedule' });
    if (!outcome.created && outcome.inFlight && outcome.inFlight.id !== id) {
      await this.queue.defer({ merchantId, from: period.from.toISOString(), to: period.to.toISOString(), deferrals: deferrals + 1 }, id, SCHEDULE_DEFER_MS);
      this.logger.log(`scheduled run ${id} of merchant ${merchantId} put off: run ${outcome.inFlight.id} is in flight`);
      return 'deferred';
    }
    // also when it exists: its job may have been lost (one job per run, so this adds none otherwise)
    await this.queue.enqueue(id);
    return outcome.created ? 'created' : 'exists';
  }
}

/** The `reconciliation` queue's worker (RECON_WORKER): registered only when this process runs reconciliations. */
@Processor(RECONCILIATION_QUEUE, { concurrency: 2 })
export class ReconciliationProcessor extends WorkerHost {
  private readonly logger = new Logger('Reconciliation');

  constructor(private readonly reconciliation: ReconciliationWorker) {
    super();
  }

  process(job: Job<ReconciliationJobData, void, ReconciliationJobName>): Promise<void> {
    return this.reconciliation.process(job);
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job<ReconciliationJobData, void, ReconciliationJobName> | undefined, error: Error): void {
    this.logger.warn(`${job?.name} ${JSON.stringify(job?.data)} failed (attempt ${job?.attemptsMade}): ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }
}
