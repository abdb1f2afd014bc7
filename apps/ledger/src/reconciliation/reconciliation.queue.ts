import { InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { DefaultJobOptions, Queue } from 'bullmq';
import { ProblemError, whenQueueReady } from '@mp/platform';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';

export const RECONCILIATION_QUEUE = 'reconciliation';
/**
 * run: one run by id; schedule: the job scheduler's tick, which creates the period's runs, or (with a merchant) a
 * scheduled run put off because that merchant had another run in flight.
 */
export type ReconciliationJobName = 'run' | 'schedule';
export interface DeferredScheduledRun {
  merchantId: string;
  from: string;
  to: string;
  /** how many times it was put off */
  deferrals: number;
}
export type ReconciliationJobData = { runId: string } | DeferredScheduledRun | Record<string, never>;
/** The job scheduler's id: also the name of the jobs it makes. */
export const SCHEDULER_ID = 'schedule' satisfies ReconciliationJobName;
export const RUN_ATTEMPTS = 3;
/** The `reconciliation` queue's job options (registered with the queue). */
export const RECONCILIATION_JOB_OPTIONS = {
  attempts: RUN_ATTEMPTS,
  backoff: { type: 'exponential', delay: 5_000 },
  removeOnComplete: { age: 24 * 3600 },
  removeOnFail: 1_000,
} satisfies DefaultJobOptions;

/**
 * The producer side of the `reconciliation` queue, and its job scheduler (RECON_SCHEDULE): upserted at boot, so every
 * replica agrees on one schedule, removed when the schedule is off. Fails fast when Redis is down (503 to the API).
 */
@Injectable()
export class ReconciliationQueue implements OnModuleInit {
  private readonly logger = new Logger('Reconciliation');

  constructor(
    @Inject(RECON_CONFIG) private readonly config: ReconciliationConfig,
    @InjectQueue(RECONCILIATION_QUEUE) readonly queue: Queue<ReconciliationJobData, void, ReconciliationJobName>,
  ) {}

  async onModuleInit(): Promise<void> {
    // BullMQ would wait for Redis without end, and the ledger's API does not need it to boot.
    if (!(await whenQueueReady(this.queue))) {
      this.logger.warn('Redis is unreachable: the reconciliation schedule is left as it is (the next boot or replica sets it)');
      return;
    }
    try {
      if (this.config.schedule) await this.queue.upsertJobScheduler(SCHEDULER_ID, { pattern: this.config.schedule, tz: 'UTC' }, { name: 'schedule', data: {} });
      else await this.queue.removeJobScheduler(SCHEDULER_ID);
    } catch (error) {
      // A bad pattern must stop the boot; Redis being down must not (the next boot or replica sets it).
      if ((await this.queue.getBackend().client).status === 'ready') throw new Error(`RECON_SCHEDULE: ${(error as Error).message}`);
      this.logger.warn(`the reconciliation schedule could not be set (${(error as Error).message})`);
    }
  }

  /** A scheduled run asked for again after `delayMs` (its merchant had a run in flight). Unique per deferral. */
  async defer(run: DeferredScheduledRun, runId: string, delayMs: number): Promise<void> {
    await this.queue.add('schedule', run, { jobId: `deferred-${runId}-${run.deferrals}`, delay: delayMs });
  }

  /** Asks a worker to run it. Idempotent: one job per run. */
  async enqueue(runId: string): Promise<void> {
    try {
      // BullMQ waits for a connection that is not up yet without end: the API answers 503 instead
      if (!(await whenQueueReady(this.queue))) throw new Error('Redis is unreachable');
      await this.queue.add('run', { runId }, { jobId: `run-${runId}` });
    } catch (error) {
      throw new ProblemError('upstream_unavailable', `the reconciliation queue is unavailable (${(error as Error).message}); try again`);
    }
  }
}
