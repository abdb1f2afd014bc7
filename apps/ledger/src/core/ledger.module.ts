import { Module } from '@nestjs/common';
import { AccountStore } from './account.store';
import { BookQueries } from './book.queries';
import { ExpiryStore } from './expiry.store';
import { LedgerService } from './ledger.service';
import { PendingExpiry } from './pending-expiry';
import { ReceivingAddressStore } from './receiving-address.store';
import { TransferQueries } from './transfer.queries';
import { TransferStore } from './transfer.store';
import { TransferWriter } from './transfer-writer';
import { WritePool } from './write-pool';

/**
 * The double-entry core on PostgreSQL: accounts, transfers, statements, the expiry of pending transfers, reads of
 * the book by account code and the merchants' receiving addresses.
 * Only {@link LedgerService} leaves the module; its stores stay behind it, so another store (a TigerBeetle
 * cluster) could replace them. Needs LEDGER_CONFIG and PrismaService from the root module.
 */
@Module({
  providers: [
    WritePool,
    AccountStore,
    TransferStore,
    TransferQueries,
    BookQueries,
    ReceivingAddressStore,
    ExpiryStore,
    TransferWriter,
    PendingExpiry,
    LedgerService,
  ],
  exports: [LedgerService],
})
export class LedgerModule {}
