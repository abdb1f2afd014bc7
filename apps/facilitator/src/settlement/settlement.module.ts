import { Module } from '@nestjs/common';
import { NetworksModule } from '../networks/networks.module';
import { PaymentRepository } from './payment.repository';
import { SettlementEvents } from './settlement.events';
import { SettlementQueue } from './settlement.queue';
import { SettlementService } from './settlement.service';
import { SettlementWorker } from './settlement.worker';
import { SignerLeases } from './signer-leases';

/** Exactly-once settlement: the API side (claim, enqueue, wait) and the worker side (send, confirm, recover). */
@Module({
  imports: [NetworksModule],
  providers: [PaymentRepository, SettlementEvents, SettlementQueue, SettlementService, SettlementWorker, SignerLeases],
  exports: [SettlementService, SettlementQueue, PaymentRepository],
})
export class SettlementModule {}
