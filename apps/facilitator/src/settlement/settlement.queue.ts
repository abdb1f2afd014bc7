import { createHash } from 'node:crypto';
import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Inject, Injectable, type OnModuleInit } from '@nestjs/common';
import type { DefaultJobOptions, Queue } from 'bullmq';
import { inBatches } from '@mp/clients';
import { ProblemError, whenQueueReady } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

export const SETTLEMENT_QUEUE = 'settlement';
/** `submit` and `confirm` follow one payment; `submit-batch` sends payments recorded together in one transaction. */
export type SettlementJobName = 'submit' | 'confirm' | 'submit-batch';
export type PaymentJobName = Exclude<SettlementJobName, 'submit-batch'>;
export interface PaymentJobData {
  paymentId: string;
}
export interface BatchJobData {
  /** at most SETTLE_BATCH_MAX payments */
  paymentIds: string[];
}
export type SettlementJobData = PaymentJobData | BatchJobData;

/** Settlement jobs: many quick retries; a completed one is removed at once, so its job id can be added again (the next step of the payment), and the last 1,000 failed ones are kept. */
export const SETTLEMENT_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: 1_000,
  attempts: 30,
  backoff: { type: 'exponential', delay: 100 },
} satisfies DefaultJobOptions;

/** The `settlement` queue (on the app's QueueModule): for SettlementModule, and bull-board. */
export const SettlementQueueModule = BullModule.registerQueue({ name: SETTLEMENT_QUEUE, defaultJobOptions: SETTLEMENT_JOB_OPTIONS });

/**
 * The producer side of the settlement queue. Its Redis connection fails fast (no offline queue), so an API whose
 * Redis is down answers 503 at once instead of hanging; the payment is already recorded and is picked up again by
 * the workers' recovery sweep when Redis returns.
 */
@Injectable()
export class SettlementQueue implements OnModuleInit {
  /** The queue's Redis connection once made (BullMQ keeps and reconnects this one client). */
  private connection: { status: string } | undefined;

  constructor(
    @InjectQueue(SETTLEMENT_QUEUE) readonly queue: Queue<SettlementJobData, void, SettlementJobName>,
    @Inject(FACILITATOR_CONFIG) private readonly config: Pick<FacilitatorConfig, 'batchMax'>,
  ) {}

  async onModuleInit(): Promise<void> {
    // Wait briefly for the first connection so the first /settle does not fail needlessly; never block boot on it.
    await whenQueueReady(this.queue);
    void this.queue.backend.client.then(
      (client) => (this.connection = client),
      () => undefined,
    );
  }

  /** Whether the queue's Redis connection is up now (it is what retries and follow-up jobs would be added on). */
  ready(): boolean {
    return this.connection?.status === 'ready';
  }

  /** Asks a worker to send the payment's settlement. Idempotent: one job per payment at a time. */
  submit(paymentId: string): Promise<void> {
    return this.add('submit', paymentId, 0);
  }

  /** submit, after `delayMs`. */
  submitLater(paymentId: string, delayMs: number): Promise<void> {
    return this.add('submit', paymentId, delayMs);
  }

  /** submit for many payments, in one round trip to Redis. */
  submitMany(paymentIds: readonly string[]): Promise<void> {
    return this.addMany('submit', paymentIds, 0);
  }

  /**
   * Payments recorded together (a subscription renewal batch) sent together: one `submit-batch` job per
   * SETTLE_BATCH_MAX of them, each job one Multicall3 transaction per network (SettlementWorker.submitBatch), all added in
   * one round trip to Redis. A job's id is made from its payments, so the same batch enqueued twice is one job. Without
   * batching (SETTLE_BATCH_MAX 1), or for a lone payment, these are `submit` jobs.
   */
  async submitBatch(paymentIds: readonly string[]): Promise<void> {
    const max = this.config.batchMax;
    if (max <= 1 || paymentIds.length <= 1) return this.submitMany(paymentIds);
    try {
      await this.queue.addBulk(
        inBatches(paymentIds, max).map((ids) =>
          ids.length === 1
            ? { name: 'submit' as const, data: { paymentId: ids[0]! }, opts: { jobId: jobId('submit', ids[0]!) } }
            : { name: 'submit-batch' as const, data: { paymentIds: ids }, opts: { jobId: batchJobId(ids) } },
        ),
      );
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Asks a worker to follow the payment's transaction until it is mined. */
  confirm(paymentId: string, delayMs = 0): Promise<void> {
    return this.add('confirm', paymentId, delayMs);
  }

  /** confirm for many payments, in one round trip to Redis. */
  confirmMany(paymentIds: readonly string[], delayMs = 0): Promise<void> {
    return this.addMany('confirm', paymentIds, delayMs);
  }

  /**
   * For the recovery sweep: enqueue again even if BullMQ gave up on an earlier job of the payment (a failed job keeps
   * its id, and a job id that exists is never added twice).
   */
  async requeue(name: PaymentJobName, paymentId: string): Promise<void> {
    const existing = await this.queue.getJob(jobId(name, paymentId));
    if (existing && (await existing.isFailed())) await existing.remove();
    await this.add(name, paymentId, 0);
  }

  private async add(name: PaymentJobName, paymentId: string, delay: number): Promise<void> {
    try {
      await this.queue.add(name, { paymentId }, { jobId: jobId(name, paymentId), delay });
    } catch (error) {
      throw unavailable(error);
    }
  }

  private async addMany(name: PaymentJobName, paymentIds: readonly string[], delay: number): Promise<void> {
    if (paymentIds.length === 0) return;
    try {
      await this.queue.addBulk(paymentIds.map((paymentId) => ({ name, data: { paymentId }, opts: { jobId: jobId(name, paymentId), delay } })));
    } catch (error) {
      throw unavailable(error);
    }
  }
}

/** One job per payment and step at a time: its id names both. */
function jobId(name: PaymentJobName, paymentId: string): string {
  return `${name}-${paymentId}`;
}

/** A batch's job id: its first payment, and a digest of all of them (the same payments, the same job). */
export function batchJobId(paymentIds: readonly string[]): string {
  const digest = createHash('sha256').update(paymentIds.join(',')).digest('hex').slice(0, 16);
  return `submit-batch-${paymentIds[0]}-${digest}`;
}

function unavailable(error: unknown): ProblemError {
  return new ProblemError(
    'upstream_unavailable',
    `the settlement queue is unavailable (${(error as Error).message}); the payment is recorded and will be settled when it recovers; settle again to get the outcome`,
  );
}
