import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService } from '@mp/db';
import { AccountBatch, type AccountInput, type AccountResult } from '@mp/ledger';
import { toAccount, type StoredAccount } from './rows';

export interface AccountFilter {
  asset?: string;
  code?: number;
}

export interface Page<T, C> {
  rows: T[];
  /** where the next page starts; undefined on the last page */
  next?: C;
}

/** A merchant's accounts. Every query carries the merchant's id: another merchant's account does not exist here. */
@Injectable()
export class AccountStore {
  constructor(private readonly db: PrismaService) {}

  /**
   * create_accounts: the rules decide each account's result against the stored ones, then the new accounts are
   * inserted in one statement, so a linked chain is created whole or not at all. A concurrent creation of one of
   * the ids fails that statement on the unique index, and the caller retries (it then answers exists).
   */
  async create(merchantId: string, inputs: readonly AccountInput[]): Promise<AccountResult[]> {
    const existing = await this.lookup(
      merchantId,
      inputs.map((a) => a.id),
    );
    const batch = new AccountBatch(existing);
    const results = batch.create(inputs);
    const fresh = batch.created;
    if (fresh.length) {
      await this.db.ledgerAccount.createMany({
        data: fresh.map((a) => ({
          merchantId,
          id: a.id,
          asset: a.asset,
          code: a.code,
          flags: a.flags,
          normalBalance: a.normalBalance,
          reference: a.reference,
        })),
      });
    }
    return results;
  }

  async lookup(merchantId: string, ids: readonly string[]): Promise<StoredAccount[]> {
    const rows = await this.db.ledgerAccount.findMany({ where: { merchantId, id: { in: [...new Set(ids)] } } });
    return rows.map(storedAccount);
  }

  /** Newest first, after the cursor (an account key, exclusive). */
  async list(merchantId: string, filter: AccountFilter, limit: number, before?: string): Promise<Page<StoredAccount, string>> {
    const rows = await this.db.ledgerAccount.findMany({
      where: { merchantId, asset: filter.asset, code: filter.code, ...(before !== undefined && { key: { lt: BigInt(before) } }) },
      orderBy: { key: 'desc' },
      take: limit + 1,
    });
    const accounts = rows.map(storedAccount);
    if (accounts.length <= limit) return { rows: accounts };
    const page = accounts.slice(0, limit);
    return { rows: page, next: page[page.length - 1].key };
  }
}

/** An account as Prisma Client reads it, through the one mapper from rows to the rules' accounts. */
function storedAccount(a: Prisma.LedgerAccountGetPayload<object>): StoredAccount {
  return toAccount({
    ...a,
    key: a.key.toString(),
    normalBalance: a.normalBalance as StoredAccount['normalBalance'],
    debitsPending: a.debitsPending.toFixed(),
    debitsPosted: a.debitsPosted.toFixed(),
    creditsPending: a.creditsPending.toFixed(),
    creditsPosted: a.creditsPosted.toFixed(),
  });
}
