import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module } from '@nestjs/common';
import { CHANNEL_EVENT_JOB_OPTIONS, CHANNEL_EVENTS_QUEUE } from '@mp/clients';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { LedgerModule } from '../core/ledger.module';
import { ChannelBooks } from './channel-books.service';
import { ChannelEventsConsumer } from './channel-events.consumer';
import { ChannelsController } from './channels.controller';

/** A channel's books (booking its events, reading them back), for the API, the consumer and reconciliation. */
@Module({
  imports: [LedgerModule],
  providers: [ChannelBooks],
  exports: [ChannelBooks],
})
export class ChannelBooksModule {}

/** Payment channels (MPP `session`): the facilitator's channel events booked on each channel's accounts, and their books read back. */
@Module({})
export class ChannelsModule {
  /** With `consume` (LEDGER_INGEST), the `channel-events` worker too. */
  static forRoot({ consume }: { consume: boolean }): DynamicModule {
    return {
      module: ChannelsModule,
      imports: [
        ChannelBooksModule,
        MerchantAuthModule,
        ...(consume ? [BullModule.registerQueue({ name: CHANNEL_EVENTS_QUEUE, defaultJobOptions: CHANNEL_EVENT_JOB_OPTIONS })] : []),
      ],
      controllers: [ChannelsController],
      providers: consume ? [ChannelEventsConsumer] : [],
    };
  }
}
