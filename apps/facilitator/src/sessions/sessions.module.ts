import { Module } from '@nestjs/common';
import { NetworksModule } from '../networks/networks.module';
import { EvmSessionRail } from './evm-session.rail';
import { SessionChannels } from './session-channels.repository';
import { SessionOperations } from './session-operations';
import { SessionsController } from './sessions.controller';
import { SessionsService } from './sessions.service';

/**
 * MPP evm sessions (issue 14 part 3) on the facilitator: the channel book and its outbox (SessionChannels), the
 * exactly-once channel transactions (SessionOperations), the rail MppModule offers for intent `session`, and the
 * merchant's charges and channel view (/mpp/sessions). The outbox relay runs in FacilitatorWorkersModule.
 */
@Module({
  imports: [NetworksModule],
  controllers: [SessionsController],
  providers: [SessionChannels, SessionOperations, EvmSessionRail, SessionsService],
  exports: [SessionChannels, EvmSessionRail],
})
export class SessionsModule {}
