import { Module } from '@nestjs/common';
import { Eip3009Module } from '../eip3009/eip3009.module';
import { NetworksModule } from '../networks/networks.module';
import { ChainPayments } from './chain-payments.repository';
import { PaymentTransactions } from './payment-transactions.repository';
import { SettlementEvents } from './settlement.events';
import { SettlementMetrics } from './settlement.metrics';
import { SettlementQueue, SettlementQueueModule } from './settlement.queue';
import { SettlementService } from './settlement.service';

/**
 * Exactly-once settlement, the part every role has: the API side (claim, enqueue, wait) and the backlog metrics. The
 * worker side (send, confirm, recover) is in FacilitatorWorkersModule; it shares SettlementEvents with the service, so
 * a waiting /settle is woken at once when the worker in its own process handles the payment.
 */
@Module({
  imports: [NetworksModule, Eip3009Module, SettlementQueueModule],
  providers: [ChainPayments, PaymentTransactions, SettlementEvents, SettlementQueue, SettlementService, SettlementMetrics],
  exports: [SettlementService, SettlementQueue, SettlementEvents, ChainPayments, PaymentTransactions],
})
export class SettlementModule {}
