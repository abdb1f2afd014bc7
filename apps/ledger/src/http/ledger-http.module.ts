import { Module } from '@nestjs/common';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { LedgerModule } from '../core/ledger.module';
import { AccountsController } from './accounts.controller';
import { StatementsController } from './statements.controller';
import { TransferBatchPipe } from './requests';
import { TransfersController } from './transfers.controller';

/** The ledger's REST API: thin controllers over LedgerService, every route scoped by the merchant's API key. */
@Module({
  imports: [LedgerModule, MerchantAuthModule],
  controllers: [AccountsController, TransfersController, StatementsController],
  // also a provider: POST /transfers is served below the framework too (transfers.hot-routes.ts)
  providers: [TransferBatchPipe],
})
export class LedgerHttpModule {}
