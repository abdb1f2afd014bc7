import { Module } from '@nestjs/common';
import { NetworksModule } from '../../../networks/networks.module';
import { BatchOperations } from './batch-operations';
import { BatchSettlementEvmScheme } from './batch-settlement-evm.scheme';

/** x402 batch-settlement: the scheme (for X402Module's /verify and /settle) and its operations (also for the finisher). */
@Module({
  imports: [NetworksModule],
  providers: [BatchOperations, BatchSettlementEvmScheme],
  exports: [BatchOperations, BatchSettlementEvmScheme],
})
export class BatchSettlementModule {}
