import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, Module } from '@nestjs/common';
import { CHANNEL_EVENT_JOB_OPTIONS, CHANNEL_EVENTS_QUEUE } from '@mp/clients';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { LedgerModule } from '../core/ledger.module';
import { ChannelBooks } from './channel-books.service';
import { ChannelEventsConsumer } from './channel-events.consumer';
import { ChannelsController } from './channels.controller';

/** Payment channels (MPP `session`): the facilitator's channel events booked on each channel's accounts, and their books read back. */
@Module({
  imports: [LedgerModule, MerchantAuthModule],
  controllers: [ChannelsController],
  providers: [ChannelBooks],
  exports: [ChannelBooks],
})
export class ChannelsModule {
  /** With `consume` (LEDGER_INGEST), the `channel-events` worker too. */
  static forRoot({ consume }: { consume: boolean }): DynamicModule {
    if (!consume) return { module: ChannelsModule };
    return {
      module: ChannelsModule,
      imports: [BullModule.registerQueue({ name: CHANNEL_EVENTS_QUEUE, defaultJobOptions: CHANNEL_EVENT_JOB_OPTIONS })],
      providers: [ChannelEventsConsumer],
    };
  }
}
