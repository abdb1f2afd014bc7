import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import type { Transfer } from '@mp/ledger';
import type { Page } from './account.store';
import { toTransfer, TRANSFER_ACCOUNTS_JOIN, TRANSFER_COLUMNS, type TransferRow } from './rows';

/** What became of a transfer's money: pending (held), posted, voided, or expired (a pending transfer that lapsed). */
export type TransferStatus = 'pending' | 'posted' | 'voided' | 'expired';
export const TRANSFER_STATUSES: readonly TransferStatus[] = ['pending', 'posted', 'voided', 'expired'];

export interface TransferRecord extends Transfer {
  status: TransferStatus;
}

export interface TransferFilter {
  /** the account's internal key (resolved from its id by the caller, within the merchant) */
  accountKey?: string;
  asset?: string;
  code?: number;
  from?: Date;
  to?: Date;
  status?: TransferStatus;
}

/** A position in (timestamp, seq) order; opaque to clients. */
export interface Position {
  ts: Date;
  seq: string;
}

export interface StatementEntry {
  transfer: Transfer;
  side: 'debit' | 'credit';
  /** the account's posted totals right after the transfer */
  debitsPosted: bigint;
  creditsPosted: bigint;
  counterpartyAccountId: string;
}

export interface PostedTotals {
  debitsPosted: bigint;
  creditsPosted: bigint;
}

/**
 * The status of a transfer `t` whose resolution (the post or void naming it) is `r`. A pending transfer is expired
 * once its timeout passed, even before the sweep released its amount (TigerBeetle: release may lag, never lead).
 */
const STATUS_SQL = `CASE
    WHEN t.flags & 2 = 0 THEN CASE WHEN t.flags & 8 <> 0 THEN 'voided' ELSE 'posted' END
    WHEN r.flags IS NOT NULL THEN CASE WHEN r.flags & 4 <> 0 THEN 'posted' ELSE 'voided' END
    WHEN t.expires_at IS NOT NULL AND t.expires_at <= clock_timestamp() THEN 'expired'
    ELSE 'pending' END`;

const RESOLUTION_JOIN = `LEFT JOIN ledger.transfers r ON r.merchant_id = t.merchant_id AND r.pending_id = t.id`;

type TransferRecordRow = TransferRow & { status: TransferStatus; seq: string; ts: Date };

/**
 * Reads of a merchant's transfers and statements. Every query carries the merchant's id. SQL: a transfer's status is
 * computed from its flag bits, its resolution (a self-join) and the database's clock, and an account's pages merge
 * its debit and credit indexes (UNION ALL), none of which Prisma Client can express.
 */
@Injectable()
export class TransferQueries {
  constructor(private readonly db: PrismaService) {}

  async lookup(merchantId: string, ids: readonly string[]): Promise<TransferRecord[]> {
    const rows = await this.db.$queryRawUnsafe<TransferRecordRow[]>(
      `SELECT ${TRANSFER_COLUMNS}, ${STATUS_SQL} AS status FROM ledger.transfers t ${TRANSFER_ACCOUNTS_JOIN} ${RESOLUTION_JOIN}
        WHERE t.merchant_id = $1::uuid AND t.id = ANY($2::uuid[])`,
      merchantId,
      [...new Set(ids)],
    );
    return rows.map(toRecord);
  }

  /**
   * Newest first, before the cursor. With an account, the debit side and the credit side are read from their own
   * indexes and merged, so a page costs the same on an account with a million transfers as on one with ten.
   */
  async list(merchantId: string, filter: TransferFilter, limit: number, before?: Position): Promise<Page<TransferRecord, Position>> {
    const params: unknown[] = [merchantId, limit + 1];
    const param = (value: unknown) => `$${params.push(value)}`;
    const where = ['t.merchant_id = $1::uuid'];
    if (filter.asset !== undefined) where.push(`t.asset = ${param(filter.asset)}`);
    if (filter.code !== undefined) where.push(`t.code = ${param(filter.code)}::int`);
    if (filter.from !== undefined) where.push(`t.ts >= ${param(filter.from)}::timestamptz`);
    if (filter.to !== undefined) where.push(`t.ts < ${param(filter.to)}::timestamptz`);
    if (filter.status !== undefined) where.push(`${STATUS_SQL} = ${param(filter.status)}`);
    if (before !== undefined) where.push(`(t.ts, t.seq) < (${param(before.ts)}::timestamptz, ${param(before.seq)}::bigint)`);
    const select = (side?: 'debit' | 'credit') => {
      const sideFilter = side ? ` AND t.${side}_account_key = ${param(filter.accountKey)}::bigint` : '';
      return `SELECT ${TRANSFER_COLUMNS}, ${STATUS_SQL} AS status, t.seq::text AS seq, t.ts
                FROM ledger.transfers t ${TRANSFER_ACCOUNTS_JOIN} ${RESOLUTION_JOIN}
               WHERE ${where.join(' AND ')}${sideFilter} ORDER BY t.ts DESC, t.seq DESC LIMIT $2`;
    };
    const sql =
      filter.accountKey === undefined
        ? select()
        : `SELECT * FROM ((${select('debit')}) UNION ALL (${select('credit')})) x ORDER BY ts DESC, seq::bigint DESC LIMIT $2`;
    const rows = await this.db.$queryRawUnsafe<TransferRecordRow[]>(sql, ...params);
    if (rows.length <= limit) return { rows: rows.map(toRecord) };
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return { rows: page.map(toRecord), next: { ts: last.ts, seq: last.seq } };
  }

  /** The account's posted totals just before `at`: from the last transfer that touched it earlier (zero if none). */
  async postedTotalsBefore(accountKey: string, at: Date): Promise<PostedTotals> {
    const side = (s: 'debit' | 'credit') =>
      `SELECT t.ts, t.seq, t.${s}_debits_posted AS dp, t.${s}_credits_posted AS cp FROM ledger.transfers t
        WHERE t.${s}_account_key = $1::bigint AND t.ts < $2::timestamptz ORDER BY t.ts DESC, t.seq DESC LIMIT 1`;
    const [row] = await this.db.$queryRawUnsafe<{ dp: string; cp: string }[]>(
      `SELECT dp::text AS dp, cp::text AS cp FROM ((${side('debit')}) UNION ALL (${side('credit')})) x ORDER BY ts DESC, seq DESC LIMIT 1`,
      accountKey,
      at,
    );
    return { debitsPosted: BigInt(row?.dp ?? 0), creditsPosted: BigInt(row?.cp ?? 0) };
  }

  /** The account's posted movements in [from, to), oldest first, after the cursor: single-phase transfers and posts. */
  async postings(accountKey: string, from: Date, to: Date, limit: number, after?: Position): Promise<Page<StatementEntry, Position>> {
    const params: unknown[] = [accountKey, from, to, limit + 1];
    const cursor = after ? ` AND (t.ts, t.seq) > ($5::timestamptz, $6::bigint)` : '';
    if (after) params.push(after.ts, after.seq);
    const side = (s: 'debit' | 'credit', other: 'debit' | 'credit') =>
      `SELECT ${TRANSFER_COLUMNS}, '${s}' AS side, t.${s}_debits_posted::text AS dp, t.${s}_credits_posted::text AS cp,
              ${other === 'debit' ? 'da' : 'ca'}.id::text AS counterparty, t.seq::text AS seq, t.ts
         FROM ledger.transfers t ${TRANSFER_ACCOUNTS_JOIN}
        WHERE t.${s}_account_key = $1::bigint AND t.ts >= $2::timestamptz AND t.ts < $3::timestamptz AND t.flags & 10 = 0${cursor}
        ORDER BY t.ts, t.seq LIMIT $4`;
    const rows = await this.db.$queryRawUnsafe<
      (TransferRow & { side: 'debit' | 'credit'; dp: string; cp: string; counterparty: string; seq: string; ts: Date })[]
    >(`SELECT * FROM ((${side('debit', 'credit')}) UNION ALL (${side('credit', 'debit')})) x ORDER BY ts, seq::bigint LIMIT $4`, ...params);
    const entries = rows.slice(0, limit).map((r) => ({
      transfer: toTransfer(r),
      side: r.side,
      debitsPosted: BigInt(r.dp),
      creditsPosted: BigInt(r.cp),
      counterpartyAccountId: r.counterparty,
    }));
    if (rows.length <= limit) return { rows: entries };
    const last = rows[limit - 1];
    return { rows: entries, next: { ts: last.ts, seq: last.seq } };
  }
}

function toRecord(row: TransferRecordRow): TransferRecord {
  return { ...toTransfer(row), status: row.status };
}
