import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module } from '@nestjs/common';
import { PAYMENT_EVENT_JOB_OPTIONS, PAYMENT_EVENTS_ACKS_QUEUE, PAYMENT_EVENTS_QUEUE } from '@mp/clients';
import { BillingModule } from '../billing/billing.module';
import { LedgerModule } from '../core/ledger.module';
import { PAYMENT_EVENT_ACK_JOB_OPTIONS } from './payment-event-acks';
import { PaymentEventsConsumer } from './payment-events.consumer';
import { PaymentIngestion } from './payment-ingestion.service';

/** Settlement ingestion: the facilitator's payment events, booked as double-entry transfers. */
@Module({
  imports: [LedgerModule],
  providers: [PaymentIngestion],
  exports: [PaymentIngestion],
})
export class IngestionModule {
  /** With `consume` (LEDGER_INGEST), the `payment-events` worker and its acknowledgements; without, only the booking. */
  static forRoot({ consume }: { consume: boolean }): DynamicModule {
    if (!consume) return { module: IngestionModule };
    return {
      module: IngestionModule,
      imports: [
        BillingModule,
        // the facilitator's job options on the events the ledger publishes alone again (refused in a batch)
        BullModule.registerQueue(
          { name: PAYMENT_EVENTS_QUEUE, defaultJobOptions: PAYMENT_EVENT_JOB_OPTIONS },
          { name: PAYMENT_EVENTS_ACKS_QUEUE, defaultJobOptions: PAYMENT_EVENT_ACK_JOB_OPTIONS },
        ),
      ],
      providers: [PaymentEventsConsumer],
    };
  }
}
