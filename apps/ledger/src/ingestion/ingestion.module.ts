import { Module } from '@nestjs/common';
import { LedgerModule } from '../core/ledger.module';
import { PaymentEventsConsumer } from './payment-events.consumer';
import { PaymentIngestion } from './payment-ingestion.service';

/** Settlement ingestion: the facilitator's payment events, booked as double-entry transfers. */
@Module({
  imports: [LedgerModule],
  providers: [PaymentIngestion, PaymentEventsConsumer],
  exports: [PaymentIngestion],
})
export class IngestionModule {}
