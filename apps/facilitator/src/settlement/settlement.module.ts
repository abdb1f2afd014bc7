import { Module } from '@nestjs/common';
import { Eip3009Module } from '../eip3009/eip3009.module';
import { NetworksModule } from '../networks/networks.module';
import { ChainPayments } from './chain-payments.repository';
import { LocalSettlement } from './local-settlement';
import { PaymentTransactions } from './payment-transactions.repository';
import { SettlementEvents } from './settlement.events';
import { SettlementMetrics } from './settlement.metrics';
import { SettlementQueue, SettlementQueueModule } from './settlement.queue';
import { SettlementService } from './settlement.service';

/**
 * Exactly-once settlement, the part every role has: the API side (claim, enqueue, wait) and the backlog metrics. The
 * worker side (send, confirm, recover) is in FacilitatorWorkersModule; it shares SettlementEvents with the service, so
 * a waiting /settle is woken at once when the worker in its own process handles the payment, and LocalSettlement, through
 * which that worker takes a payment /settle has just claimed without a trip through the queue.
 */
@Module({
  imports: [NetworksModule, Eip3009Module, SettlementQueueModule],
  providers: [ChainPayments, PaymentTransactions, SettlementEvents, LocalSettlement, SettlementQueue, SettlementService, SettlementMetrics],
  exports: [SettlementService, SettlementQueue, SettlementEvents, LocalSettlement, ChainPayments, PaymentTransactions],
})
export class SettlementModule {}
