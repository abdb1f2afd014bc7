import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { AccountBatch, type AccountInput, type AccountResult } from '@mp/ledger';
import { ACCOUNT_COLUMNS, toAccount, type AccountRow, type StoredAccount } from './rows';

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
    const existing = await this.lookup(merchantId, inputs.map((a) => a.id));
    const batch = new AccountBatch(existing);
    const results = batch.create(inputs);
    const fresh = batch.created;
    if (fresh.length) {
      await this.db.$executeRawUnsafe(
        `INSERT INTO ledger.accounts (merchant_id, id, asset, code, flags, normal_balance, reference)
         SELECT $1::uuid, u.id, u.asset, u.code, u.flags, u.normal_balance, u.reference
           FROM unnest($2::uuid[], $3::text[], $4::int[], $5::smallint[], $6::text[], $7::text[]) AS u(id, asset, code, flags, normal_balance, reference)`,
        merchantId,
        fresh.map((a) => a.id),
        fresh.map((a) => a.asset),
        fresh.map((a) => a.code),
        fresh.map((a) => a.flags),
        fresh.map((a) => a.normalBalance),
        fresh.map((a) => a.reference),
      );
    }
    return results;
  }

  async lookup(merchantId: string, ids: readonly string[]): Promise<StoredAccount[]> {
    const rows = await this.db.$queryRawUnsafe<AccountRow[]>(
      `SELECT ${ACCOUNT_COLUMNS} FROM ledger.accounts a WHERE a.merchant_id = $1::uuid AND a.id = ANY($2::uuid[])`,
      merchantId,
      [...new Set(ids)],
    );
    return rows.map(toAccount);
  }

  /** Newest first, after the cursor (an account key, exclusive). */
  async list(merchantId: string, filter: AccountFilter, limit: number, before?: string): Promise<Page<StoredAccount, string>> {
    const params: unknown[] = [merchantId, limit + 1];
    const where = ['a.merchant_id = $1::uuid'];
    const param = (value: unknown) => `$${params.push(value)}`;
    if (filter.asset !== undefined) where.push(`a.asset = ${param(filter.asset)}`);
    if (filter.code !== undefined) where.push(`a.code = ${param(filter.code)}::int`);
    if (before !== undefined) where.push(`a.key < ${param(before)}::bigint`);
    const rows = await this.db.$queryRawUnsafe<AccountRow[]>(
      `SELECT ${ACCOUNT_COLUMNS} FROM ledger.accounts a WHERE ${where.join(' AND ')} ORDER BY a.key DESC LIMIT $2`,
      ...params,
    );
    const accounts = rows.map(toAccount);
    if (accounts.length <= limit) return { rows: accounts };
    const page = accounts.slice(0, limit);
    return { rows: page, next: page[page.length - 1].key };
  }
}
