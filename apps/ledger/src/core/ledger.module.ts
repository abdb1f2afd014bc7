import { Module } from '@nestjs/common';
import { AccountStore } from './account.store';
import { ExpiryStore } from './expiry.store';
import { LedgerService } from './ledger.service';
import { PendingExpiry } from './pending-expiry';
import { TransferQueries } from './transfer.queries';
import { TransferStore } from './transfer.store';
import { TransferWriter } from './transfer-writer';
import { WritePool } from './write-pool';

/**
 * The double-entry core on PostgreSQL: accounts, transfers, statements and the expiry of pending transfers.
 * Only {@link LedgerService} leaves the module; its stores stay behind it, so another store (a TigerBeetle
 * cluster) could replace them. Needs LEDGER_CONFIG and PrismaService from the root module.
 */
@Module({
  providers: [WritePool, AccountStore, TransferStore, TransferQueries, ExpiryStore, TransferWriter, PendingExpiry, LedgerService],
  exports: [LedgerService],
})
export class LedgerModule {}
