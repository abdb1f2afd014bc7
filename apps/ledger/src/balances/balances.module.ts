import { Module } from '@nestjs/common';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { LedgerModule } from '../core/ledger.module';
import { BalancesController } from './balances.controller';
import { PrepaidBalances } from './prepaid-balances.service';

/** Prepaid balances: payers fund them with settled payments, metered calls spend from them (issue 14). */
@Module({
  imports: [LedgerModule, MerchantAuthModule],
  controllers: [BalancesController],
  providers: [PrepaidBalances],
  exports: [PrepaidBalances],
})
export class BalancesModule {}
