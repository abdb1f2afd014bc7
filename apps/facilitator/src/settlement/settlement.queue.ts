import { BullModule, InjectQueue } from '@nestjs/bullmq';
import { Injectable, type OnModuleInit } from '@nestjs/common';
import type { DefaultJobOptions, Queue } from 'bullmq';
import { ProblemError, whenQueueReady } from '@mp/platform';

export const SETTLEMENT_QUEUE = 'settlement';
export type SettlementJobName = 'submit' | 'confirm';
export interface SettlementJobData {
  paymentId: string;
}

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
  constructor(@InjectQueue(SETTLEMENT_QUEUE) readonly queue: Queue<SettlementJobData, void, SettlementJobName>) {}

  async onModuleInit(): Promise<void> {
    // Wait briefly for the first connection so the first /settle does not fail needlessly; never block boot on it.
    await whenQueueReady(this.queue);
  }

  /** Asks a worker to send the payment's settlement. Idempotent: one job per payment at a time. */
  submit(paymentId: string): Promise<void> {
    return this.add('submit', paymentId, 0);
  }

  /** submit for many payments, in one round trip to Redis. */
  async submitMany(paymentIds: readonly string[]): Promise<void> {
    if (paymentIds.length === 0) return;
    try {
      await this.queue.addBulk(paymentIds.map((paymentId) => ({ name: 'submit' as const, data: { paymentId }, opts: { jobId: jobId('submit', paymentId) } })));
    } catch (error) {
      throw unavailable(error);
    }
  }

  /** Asks a worker to follow the payment's transaction until it is mined. */
  confirm(paymentId: string, delayMs = 0): Promise<void> {
    return this.add('confirm', paymentId, delayMs);
  }

  /**
   * For the recovery sweep: enqueue again even if BullMQ gave up on an earlier job of the payment (a failed job keeps
   * its id, and a job id that exists is never added twice).
   */
  async requeue(name: SettlementJobName, paymentId: string): Promise<void> {
    const existing = await this.queue.getJob(jobId(name, paymentId));
    if (existing && (await existing.isFailed())) await existing.remove();
    await this.add(name, paymentId, 0);
  }

  private async add(name: SettlementJobName, paymentId: string, delay: number): Promise<void> {
    try {
      await this.queue.add(name, { paymentId }, { jobId: jobId(name, paymentId), delay });
    } catch (error) {
      throw unavailable(error);
    }
  }
}

/** One job per payment and step at a time: its id names both. */
function jobId(name: SettlementJobName, paymentId: string): string {
  return `${name}-${paymentId}`;
}

function unavailable(error: unknown): ProblemError {
  return new ProblemError(
    'upstream_unavailable',
    `the settlement queue is unavailable (${(error as Error).message}); the payment is recorded and will be settled when it recovers; settle again to get the outcome`,
  );
}
