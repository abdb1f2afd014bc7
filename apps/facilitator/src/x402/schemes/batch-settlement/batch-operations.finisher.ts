import { BullModule, InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { DefaultJobOptions, Job, Queue } from 'bullmq';
import { type Hex, getAddress } from 'viem';
import { whenQueueReady } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../../../config/facilitator.config';
import { NetworkRegistry } from '../../../networks/network-registry';
import { BatchOperations, type OperationKind, type OperationRow } from './batch-operations';
import { BatchSettlementEvmScheme, REVERTED_REASONS, SETTLE_GAS_LIMIT } from './batch-settlement-evm.scheme';

export const BATCH_OPERATIONS_QUEUE = 'batch-settlement-operations';
/** The job scheduler's id, also the name of the jobs it makes. */
export const BATCH_FINISHER_SCHEDULER_ID = 'finish-pending';
const FINISHER_JOB_OPTIONS = { removeOnComplete: 100, removeOnFail: 100 } satisfies DefaultJobOptions;
/** Operations looked at per round, oldest first. */
const BATCH = 100;

/** The `batch-settlement-operations` queue (on the app's QueueModule): for the finisher's schedule and worker. */
export const BatchOperationsQueueModule = BullModule.registerQueue({ name: BATCH_OPERATIONS_QUEUE, defaultJobOptions: FINISHER_JOB_OPTIONS });

export interface FinisherRound {
  /** pending operations looked at */
  looked: number;
  /** of those, now succeeded or failed */
  finished: number;
}

/**
 * Finishes batch-settlement operations nobody follows any more: a /settle whose wait budget ran out answered
 * settlement_pending, and the caller may never ask again (a crash, a lost answer, a client that gave up). Each
 * operation left pending longer than BATCH_SETTLEMENT_WAIT_MS is taken through the same steps a repeated request
 * would take, with its answer from the chain: the receipt of the recorded transaction, the recorded bytes broadcast
 * again if the node lost them, re-signed only once its nonce went to another transaction (BatchOperations). The
 * calldata is the row's, so there is never a second, different transaction for one request key.
 */
@Injectable()
export class BatchOperationsFinisher {
  private readonly logger = new Logger('BatchOperationsFinisher');

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly operations: BatchOperations,
    private readonly scheme: BatchSettlementEvmScheme,
    private readonly networks: NetworkRegistry,
  ) {}

  /** One round: every operation idle for longer than a request would have followed it. */
  async round(idleMs = this.config.batchSettlement?.waitMs ?? 15_000): Promise<FinisherRound> {
    const rows = await this.operations.pending(idleMs, BATCH);
    let finished = 0;
    for (const row of rows) {
      try {
        const answer = await this.finish(row);
        if (answer.errorReason !== 'settlement_pending') finished += 1;
      } catch (error) {
        // the chain unreachable (or a row this build cannot read): the next round looks again
        this.logger.warn(`batch-settlement operation ${row.id} (${row.kind}): ${(error as Error).message.split('\n')[0]}`);
      }
    }
    if (finished) this.logger.log(`finished ${finished} pending batch-settlement operation(s)`);
    return { looked: rows.length, finished };
  }

  private finish(row: OperationRow) {
    const network = this.networks.resolve(row.network, 2);
    if (!network) throw new Error(`network ${row.network} is no longer configured`);
    const kind = row.kind as OperationKind;
    const data = row.data as Hex;
    return this.operations.resume(
      {
        key: row.requestKey,
        kind,
        network,
        to: getAddress(row.toAddress),
        data,
        ...(kind === 'settle' ? { gas: SETTLE_GAS_LIMIT } : {}),
        revertedReason: REVERTED_REASONS[kind],
        judge: this.scheme.judge(kind, network, data),
        done: this.scheme.done(kind, network, data),
      },
      row.id,
    );
  }
}

/**
 * The finisher's job scheduler (every RECOVERY_INTERVAL_MS), upserted at boot so every worker process agrees on one
 * schedule: one round runs at a time across the fleet, not one per process.
 */
@Injectable()
export class BatchOperationsSchedule implements OnModuleInit {
  private readonly logger = new Logger('BatchOperationsFinisher');

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    @InjectQueue(BATCH_OPERATIONS_QUEUE) readonly queue: Queue,
  ) {}

  async onModuleInit(): Promise<void> {
    // BullMQ would wait for Redis without end; the next boot or another worker sets the schedule
    if (!(await whenQueueReady(this.queue))) {
      this.logger.warn('Redis is unreachable: the batch-settlement finisher schedule is left as it is');
      return;
    }
    await this.queue.upsertJobScheduler(
      BATCH_FINISHER_SCHEDULER_ID,
      { every: this.config.recoveryIntervalMs },
      { name: BATCH_FINISHER_SCHEDULER_ID, data: {}, opts: FINISHER_JOB_OPTIONS },
    );
  }
}

@Processor(BATCH_OPERATIONS_QUEUE, { concurrency: 1 })
export class BatchOperationsProcessor extends WorkerHost {
  private readonly logger = new Logger('BatchOperationsFinisher');

  constructor(private readonly finisher: BatchOperationsFinisher) {
    super();
  }

  async process(_job: Job): Promise<FinisherRound> {
    return this.finisher.round();
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    this.logger.warn(`finisher round ${job?.id} failed: ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }
}
