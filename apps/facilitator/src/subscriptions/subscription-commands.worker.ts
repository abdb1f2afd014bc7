import { BullModule, InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { type Job, type JobsOptions, type Queue, UnrecoverableError } from 'bullmq';
import {
  isChargeBatch,
  parseSubscriptionCommandJob,
  SUBSCRIPTION_COMMANDS_QUEUE,
  subscriptionCommandJobId,
  type ChargeCommand,
  type SubscriptionCommandJobData,
} from '@mp/clients';
import { closeWorker, MicroBatcher, type WorkerOptionsFromConfig } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { SubscriptionCommandsService, type CommandOutcome } from './subscription-commands.service';

/** Charge batches carried out at once: one records while the next prepares (reads and the chain's simulation). */
const CHARGE_BATCHES_RUNNING = 2;
/** How long a charge split off a batch to be tried again waits, when the batch's job options name no backoff. */
const RETRY_DELAY_MS = 1_000;

/** What a job came to: its command's outcome, or for a batch of charges how many came to each (`retried`: split off to be tried again). */
export type CommandJobOutcome = CommandOutcome | Partial<Record<CommandOutcome | 'retried', number>>;

/** The `subscription-commands` queue (on the app's QueueModule; the ledger, its publisher, sets the job options). */
export const SubscriptionCommandsQueueModule = BullModule.registerQueue({ name: SUBSCRIPTION_COMMANDS_QUEUE });

/**
 * Consumes the ledger's subscription commands (worker role, with SUBSCRIPTION_SEALING_KEYS): one command a job, or a
 * batch of charges (`charge-batch`). A job that breaks the contract fails for good, a whole batch with it (it stays in
 * the failed set for an operator); a database or RPC error fails the command's attempt and BullMQ retries it (a
 * charge of a batch as a job of its own), which is safe: each command is carried out once, whoever runs it.
 */
@Processor(SUBSCRIPTION_COMMANDS_QUEUE, { autorun: false })
export class SubscriptionCommandsWorker extends WorkerHost implements WorkerOptionsFromConfig, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('SubscriptionCommands');
  /** The charges running at once, carried out together (renewals come due in batches); never two of one subscription. */
  private readonly charges: MicroBatcher<ChargeCommand, CommandOutcome>;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly commands: SubscriptionCommandsService,
    @InjectQueue(SUBSCRIPTION_COMMANDS_QUEUE) private readonly queue: Queue<SubscriptionCommandJobData>,
  ) {
    super();
    this.charges = new MicroBatcher(
      (charge) => charge.subscriptionId,
      async (batch) =>
        (await this.commands.chargeMany(batch)).map((outcome) =>
          outcome instanceof Error ? { status: 'rejected', reason: outcome } : { status: 'fulfilled', value: outcome },
        ),
      { maxRunning: CHARGE_BATCHES_RUNNING, maxBatch: this.workerOptions().concurrency },
    );
  }

  /** Read by QueueModule when it creates the worker (SUBSCRIPTION_WORKER_CONCURRENCY). */
  workerOptions() {
    return { concurrency: this.config.subscriptions?.workerConcurrency ?? 1 };
  }

  onModuleInit(): void {
    this.worker.run().catch((error: Error) => this.logger.error(`the subscription commands worker stopped: ${error.message}`));
  }

  /** Before the database closes: no command is taken whose outcome could not be recorded. */
  async onModuleDestroy(): Promise<void> {
    await closeWorker(this.worker);
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    this.logger.warn(`subscription command job ${job?.id} failed (attempt ${job?.attemptsMade}): ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  async process(job: Job<unknown, CommandJobOutcome>): Promise<CommandJobOutcome> {
    const data = parseCommandJob(job.data);
    if (isChargeBatch(data)) return this.chargeBatch(job, data.commands);
    const outcome = data.type === 'charge' ? await this.charges.submit(data) : await this.commands.run(data);
    this.logger.debug(`subscription command ${job.id}: ${outcome}`);
    return outcome;
  }

  /**
   * A batch's charges, each as if its job were its own: through the same batcher as the others (at most
   * SUBSCRIPTION_WORKER_CONCURRENCY carried out together, never two of one subscription), each with its own outcome.
   * One that must be tried again (a database or RPC error, a window about to open) is published as a job of its own
   * under its command's job id, delayed by the batch's first backoff step and with the batch's attempts, so BullMQ
   * retries it as it would a lone command; then the batch is done. A batch delivered again finds its charges done,
   * and its retries published already (the same job ids).
   */
  private async chargeBatch(job: Job<unknown, CommandJobOutcome>, charges: ChargeCommand[]): Promise<CommandJobOutcome> {
    const settled = await Promise.allSettled(charges.map((charge) => this.charges.submit(charge)));
    const counts: Partial<Record<CommandOutcome | 'retried', number>> = {};
    const retries: ChargeCommand[] = [];
    for (const [n, result] of settled.entries()) {
      const outcome = result.status === 'fulfilled' ? result.value : 'retried';
      counts[outcome] = (counts[outcome] ?? 0) + 1;
      if (result.status === 'fulfilled') continue;
      retries.push(charges[n]!);
      this.logger.warn(`charge ${charges[n]!.commandId} of batch job ${job.id} failed: ${(result.reason as Error).message}; tried again on its own`);
    }
    if (retries.length) {
      const opts = retryOptions(job.opts);
      // a failure here fails the batch's attempt: BullMQ runs it again, and its charges done already answer done
      await this.queue.addBulk(retries.map((charge) => ({ name: charge.type, data: charge, opts: { ...opts, jobId: subscriptionCommandJobId(charge) } })));
    }
    this.logger.debug(`subscription charge batch ${job.id}: ${JSON.stringify(counts)}`);
    return counts;
  }
}

/** A charge split off a batch is retried as the batch would have been: its attempts, its backoff, kept as long. */
function retryOptions(batch: JobsOptions): JobsOptions {
  const { attempts, backoff, removeOnComplete, removeOnFail } = batch;
  const delay = typeof backoff === 'number' ? backoff : (backoff?.delay ?? RETRY_DELAY_MS);
  return {
    delay,
    ...(attempts !== undefined && { attempts }),
    ...(backoff !== undefined && { backoff }),
    ...(removeOnComplete !== undefined && { removeOnComplete }),
    ...(removeOnFail !== undefined && { removeOnFail }),
  };
}

/** The job's data as one command or a batch of charges, or an UnrecoverableError naming what is wrong (retrying cannot fix it). */
export function parseCommandJob(data: unknown): SubscriptionCommandJobData {
  const parsed = parseSubscriptionCommandJob(data);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'data'}: ${i.message}`).join('; ');
    throw new UnrecoverableError(`malformed subscription command: ${problems}`);
  }
  return parsed.data;
}
