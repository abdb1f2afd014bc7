import { Module } from '@nestjs/common';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { LedgerModule } from '../core/ledger.module';
import { AccountsController } from './accounts.controller';
import { StatementsController } from './statements.controller';
import { TransfersController } from './transfers.controller';

/** The ledger's REST API: thin controllers over LedgerService, every route scoped by the merchant's API key. */
@Module({
  imports: [LedgerModule, MerchantAuthModule],
  controllers: [AccountsController, TransfersController, StatementsController],
})
export class LedgerHttpModule {}
