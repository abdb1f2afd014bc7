import { Inject, Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import { ProblemError, queueTelemetry, waitForRedis } from '@mp/platform';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';

export const SETTLEMENT_QUEUE = 'settlement';
export type SettlementJobName = 'submit' | 'confirm';
export interface SettlementJobData {
  paymentId: string;
}

/**
 * The producer side of the settlement queue. Its Redis connection fails fast (no offline queue), so an API whose
 * Redis is down answers 503 at once instead of hanging; the payment is already recorded and is picked up again by
 * the workers' recovery sweep when Redis returns.
 */
@Injectable()
export class SettlementQueue implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(SettlementQueue.name);
  readonly connection: Redis;
  readonly queue: Queue<SettlementJobData, void, SettlementJobName>;

  constructor(@Inject(FACILITATOR_CONFIG) config: FacilitatorConfig) {
    this.connection = new Redis(config.redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false, connectTimeout: 2_000 });
    this.connection.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
    this.queue = new Queue(SETTLEMENT_QUEUE, {
      connection: this.connection,
      prefix: config.queuePrefix,
      telemetry: queueTelemetry(),
      defaultJobOptions: { removeOnComplete: true, removeOnFail: 1_000, attempts: 30, backoff: { type: 'exponential', delay: 100 } },
    });
    this.queue.on('error', (error: Error) => this.logger.debug(`queue: ${error.message}`));
  }

  async onModuleInit(): Promise<void> {
    // Wait briefly for the first connection so the first /settle does not fail needlessly; never block boot on it.
    await waitForRedis(this.connection);
  }

  async onModuleDestroy(): Promise<void> {
    await Promise.race([this.queue.close().catch(() => undefined), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    this.connection.disconnect();
  }

  /** Asks a worker to send the payment's settlement. Idempotent: one job per payment at a time. */
  submit(paymentId: string): Promise<void> {
    return this.add('submit', paymentId, 0);
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
    const existing = await this.queue.getJob(`${name}-${paymentId}`);
    if (existing && (await existing.isFailed())) await existing.remove();
    await this.add(name, paymentId, 0);
  }

  private async add(name: SettlementJobName, paymentId: string, delay: number): Promise<void> {
    try {
      await this.queue.add(name, { paymentId }, { jobId: `${name}-${paymentId}`, delay });
    } catch (error) {
      throw new ProblemError('upstream_unavailable', `the settlement queue is unavailable (${(error as Error).message}); the payment is recorded and will be settled when it recovers; settle again to get the outcome`);
    }
  }
}
