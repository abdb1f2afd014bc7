import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { FacilitatorMetrics } from '@mp/platform';
import { ChainPayments } from './chain-payments.repository';
import { SettlementQueue } from './settlement.queue';

/**
 * The settlement backlog in /metrics, read at scrape time: the queue's depth and the payments still in flight. Every
 * role has it (an api process's /metrics shows the backlog it is adding to), so it is not part of the worker module.
 */
@Injectable()
export class SettlementMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly stopCollecting: (() => void)[] = [];

  constructor(
    private readonly metrics: FacilitatorMetrics,
    private readonly queue: SettlementQueue,
    private readonly payments: ChainPayments,
  ) {}

  onModuleInit(): void {
    this.stopCollecting.push(
      this.metrics.onCollect('settlement_queue', async () => this.metrics.setQueueDepth(await this.queue.queue.getJobCounts('waiting', 'active', 'delayed'))),
      this.metrics.onCollect('settlements_pending', async () => this.metrics.setSettlementsPending(await this.payments.countInFlight())),
    );
  }

  onModuleDestroy(): void {
    for (const stop of this.stopCollecting) stop();
  }
}
