import { Module } from '@nestjs/common';
import { NetworksModule } from '../networks/networks.module';
import { PaymentRepository } from './payment.repository';
import { SettlementService } from './settlement.service';

@Module({
  imports: [NetworksModule],
  providers: [PaymentRepository, SettlementService],
  exports: [SettlementService],
})
export class SettlementModule {}
