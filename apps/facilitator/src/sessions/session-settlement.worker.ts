import { BullModule, InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Inject, Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import type { Job, Queue } from 'bullmq';
import { whenQueueReady } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { SessionSettlement } from './session-settlement';

export const SESSION_SETTLEMENT_QUEUE = 'session-settlement';
const SCHEDULER_ID = 'session-settlement-tick';
const JOB_OPTIONS = { removeOnComplete: { count: 100 }, removeOnFail: { count: 100 } } as const;

/** The `session-settlement` queue (on the app's QueueModule): one scheduled job, every SESSION_SETTLE_POLL_MS. */
export const SessionSettlementQueueModule = BullModule.registerQueue({ name: SESSION_SETTLEMENT_QUEUE });

/**
 * The session settlement schedule (worker role, with sessions): upserted at boot so every replica agrees on one
 * schedule, removed when SESSION_SETTLE_POLL_MS is 0.
 */
@Injectable()
export class SessionSettlementSchedule implements OnModuleInit {
  private readonly logger = new Logger('SessionSettlement');

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    @InjectQueue(SESSION_SETTLEMENT_QUEUE) private readonly queue: Queue,
  ) {}

  async onModuleInit(): Promise<void> {
    if (!(await whenQueueReady(this.queue))) {
      this.logger.warn('Redis is unreachable: the session settlement schedule is left as it is (the next boot or replica sets it)');
      return;
    }
    const every = this.config.sessions?.pollMs ?? 0;
    if (every > 0) await this.queue.upsertJobScheduler(SCHEDULER_ID, { every }, { name: SCHEDULER_ID, data: {}, opts: JOB_OPTIONS });
    else await this.queue.removeJobScheduler(SCHEDULER_ID);
  }
}

/** Runs the ticks one at a time per process; each transaction of a tick is exactly once, whichever replica sends it. */
@Processor(SESSION_SETTLEMENT_QUEUE, { concurrency: 1 })
export class SessionSettlementProcessor extends WorkerHost {
  private readonly logger = new Logger('SessionSettlement');

  constructor(private readonly settlement: SessionSettlement) {
    super();
  }

  async process(job: Job): Promise<void> {
    if (job.name === SCHEDULER_ID) await this.settlement.tick();
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    this.logger.warn(`session settlement tick ${job?.id} failed: ${error.message}`);
  }
}
