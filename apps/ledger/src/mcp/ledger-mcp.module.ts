import { Module } from '@nestjs/common';
import { MerchantAuthModule } from '../auth/merchant-auth.module';
import { BillingModule } from '../billing/billing.module';
import { LedgerModule } from '../core/ledger.module';
import { LedgerMcpController } from './ledger-mcp.controller';

/** The merchant's books and subscriptions as MCP tools (POST /mcp), beside the REST API and under the same API keys. */
@Module({
  imports: [LedgerModule, MerchantAuthModule, BillingModule],
  controllers: [LedgerMcpController],
})
export class LedgerMcpModule {}
