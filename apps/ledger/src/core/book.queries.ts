import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { TransferCode, TransferFlag } from '@mp/ledger';

/** How a pending transfer was resolved: the post or void that names it. */
export interface TransferResolution {
  flags: number;
  /** a post's amount posted, a void's amount released */
  amount: bigint;
  reference: string | null;
  ts: Date;
}

/** A transfer on an account of one code, as seen from that account, with its resolution when it was pending. */
export interface AccountCodeTransfer {
  id: string;
  asset: string;
  code: number;
  flags: number;
  amount: bigint;
  reference: string | null;
  ts: Date;
  expiresAt: Date | null;
  /** the transfer credits an account of the code (money in); else it debits one */
  credits: boolean;
  /** undefined while pending (or expired), and for single-phase transfers */
  resolution?: TransferResolution;
}

/** A correcting transfer (code 9, single-phase): `corrects` is the id of the transfer it corrects (its `reference`). */
export interface CorrectionTransfer extends AccountCodeTransfer {
  corrects: string;
}

export interface AccountCodeTransferQuery {
  /** the transfers touch an account of this code, on either side */
  accountCode: number;
  /** transfer codes to include; posts and voids are never included themselves, only as resolutions */
  codes: readonly number[];
  /** a transfer is included when it was created before `to` and resolved (or, unresolved, created) in [from, to) */
  period: { from: Date; to: Date };
}

interface AccountCodeTransferRow {
  id: string;
  asset: string;
  code: number;
  flags: number;
  amount: string;
  reference: string | null;
  ts: Date;
  expiresAt: Date | null;
  credits: boolean;
  resolutionFlags: number | null;
  resolutionAmount: string | null;
  resolutionReference: string | null;
  resolutionTs: Date | null;
}

/**
 * Reads of a merchant's book by account code, for reconciliation and reports: the transfers on the merchant's
 * accounts of one code with what resolved them, their corrections, and which assets and merchants have such
 * accounts. Every per-merchant query carries the merchant's id. The transfer reads are SQL: a self-join on the
 * pending id, flag bits and a recursive walk of corrections, which Prisma Client cannot express.
 */
@Injectable()
export class BookQueries {
  constructor(private readonly db: PrismaService) {}

  async transfersOnAccountCode(merchantId: string, query: AccountCodeTransferQuery): Promise<AccountCodeTransfer[]> {
    const rows = await this.db.$queryRawUnsafe<AccountCodeTransferRow[]>(
      `${selectOnAccountCode()} t.merchant_id = $1::uuid AND t.code = ANY($5::int[]) AND t.flags & $4 = 0 AND t.ts < $3
         AND coalesce(r.ts, t.ts) >= $2 AND coalesce(r.ts, t.ts) < $3`,
      merchantId,
      query.period.from,
      query.period.to,
      TransferFlag.post_pending_transfer | TransferFlag.void_pending_transfer,
      [...query.codes],
      query.accountCode,
    );
    return rows.map(toAccountCodeTransfer);
  }

  /** The single-phase corrections of `ids` on an account of the code, and the corrections of those, whenever booked. */
  async corrections(merchantId: string, accountCode: number, ids: readonly string[]): Promise<CorrectionTransfer[]> {
    const rows = await this.db.$queryRawUnsafe<(AccountCodeTransferRow & { corrects: string })[]>(
      `WITH RECURSIVE corrections AS (
         SELECT c.id FROM ledger.transfers c
         WHERE c.merchant_id = $1::uuid AND c.code = ${TransferCode.correction} AND c.flags = 0 AND c.reference = ANY($2::text[])
         UNION
         SELECT c.id FROM ledger.transfers c JOIN corrections p ON c.reference = p.id::text
         WHERE c.merchant_id = $1::uuid AND c.code = ${TransferCode.correction} AND c.flags = 0)
       ${selectOnAccountCode('JOIN corrections k ON k.id = t.id', '$3')} t.merchant_id = $1::uuid`,
      merchantId,
      [...ids],
      accountCode,
    );
    return rows.map((row) => ({ ...toAccountCodeTransfer(row), corrects: row.corrects }));
  }

  /** The assets of the merchant's accounts of the code, sorted. */
  async accountAssets(merchantId: string, accountCode: number): Promise<string[]> {
    const rows = await this.db.ledgerAccount.findMany({
      where: { merchantId, code: accountCode },
      distinct: ['asset'],
      orderBy: { asset: 'asc' },
      select: { asset: true },
    });
    return rows.map((r) => r.asset);
  }

  /** The merchants with an account of the code, sorted. */
  async merchantsWithAccountCode(accountCode: number): Promise<string[]> {
    const rows = await this.db.ledgerAccount.findMany({ where: { code: accountCode }, distinct: ['merchantId'], select: { merchantId: true } });
    // sorted as text, the order the callers walk merchants in
    return rows.map((r) => r.merchantId).sort();
  }
}

/**
 * Transfers on an account of the code (parameter `codeParam`, $6 unless told), with what resolved each when it was
 * pending; the caller appends its conditions.
 */
const selectOnAccountCode = (join = '', codeParam = '$6') => `
  SELECT t.id::text AS id, t.asset, t.code, t.flags, t.amount::text AS amount, t.reference, t.ts, t.expires_at AS "expiresAt",
         ca.code = ${codeParam}::int AS credits, t.reference AS corrects,
         r.flags AS "resolutionFlags", r.amount::text AS "resolutionAmount", r.reference AS "resolutionReference", r.ts AS "resolutionTs"
  FROM ledger.transfers t
  JOIN ledger.accounts ca ON ca.key = t.credit_account_key
  JOIN ledger.accounts da ON da.key = t.debit_account_key
  LEFT JOIN ledger.transfers r ON r.merchant_id = t.merchant_id AND r.pending_id = t.id
  ${join}
  WHERE (ca.code = ${codeParam}::int OR da.code = ${codeParam}::int) AND`;

function toAccountCodeTransfer(row: AccountCodeTransferRow): AccountCodeTransfer {
  return {
    id: row.id,
    asset: row.asset,
    code: row.code,
    flags: row.flags,
    amount: BigInt(row.amount),
    reference: row.reference,
    ts: row.ts,
    expiresAt: row.expiresAt,
    credits: row.credits,
    resolution:
      row.resolutionFlags === null
        ? undefined
        : { flags: row.resolutionFlags, amount: BigInt(row.resolutionAmount!), reference: row.resolutionReference, ts: row.resolutionTs! },
  };
}
