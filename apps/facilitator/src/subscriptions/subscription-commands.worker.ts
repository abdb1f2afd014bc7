import { BullModule, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { SUBSCRIPTION_COMMANDS_QUEUE, subscriptionCommandSchema, type SubscriptionCommand } from '@mp/clients';
import { closeWorker, MicroBatcher, type WorkerOptionsFromConfig } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { SubscriptionCommandsService, type CommandOutcome } from './subscription-commands.service';

/** Charge batches carried out at once: one records while the next prepares (reads and the chain's simulation). */
const CHARGE_BATCHES_RUNNING = 2;

type ChargeCommand = Extract<SubscriptionCommand, { type: 'charge' }>;

/** The `subscription-commands` queue (on the app's QueueModule; the ledger, its publisher, sets the job options). */
export const SubscriptionCommandsQueueModule = BullModule.registerQueue({ name: SUBSCRIPTION_COMMANDS_QUEUE });

/**
 * Consumes the ledger's subscription commands (worker role, with SUBSCRIPTION_SEALING_KEYS). A command that breaks the
 * contract fails for good (it stays in the failed set for an operator); a database or RPC error fails the attempt and
 * BullMQ retries it, which is safe: each command is carried out once, whoever runs it.
 */
@Processor(SUBSCRIPTION_COMMANDS_QUEUE, { autorun: false })
export class SubscriptionCommandsWorker extends WorkerHost implements WorkerOptionsFromConfig, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('SubscriptionCommands');
  /** The charges running at once, carried out together (renewals come due in batches); never two of one subscription. */
  private readonly charges: MicroBatcher<ChargeCommand, CommandOutcome>;

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly commands: SubscriptionCommandsService,
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

  async process(job: Job<unknown, CommandOutcome>): Promise<CommandOutcome> {
    const command = parseCommand(job.data);
    const outcome = command.type === 'charge' ? await this.charges.submit(command) : await this.commands.run(command);
    this.logger.debug(`subscription command ${job.id}: ${outcome}`);
    return outcome;
  }
}

/** The job's data as a command, or an UnrecoverableError naming what is wrong (retrying cannot fix it). */
export function parseCommand(data: unknown): SubscriptionCommand {
  const parsed = subscriptionCommandSchema.safeParse(data);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.') || 'data'}: ${i.message}`).join('; ');
    throw new UnrecoverableError(`malformed subscription command: ${problems}`);
  }
  return parsed.data;
}
