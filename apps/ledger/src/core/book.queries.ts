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

/** Which accounts an audit reads, and how they are funded. */
export interface AccountAuditQuery {
  accountCode: number;
  /** the code of the transfers that fund such an account (credit it): each is checked against its payments */
  fundedBy: number;
  /** the code of the payments a funding transfer's reference names */
  fundingCode: number;
}

/** An account as stored and as its own transfers add up, with the transfers that funded it and the payments they name. */
export interface AccountAudit {
  id: string;
  asset: string;
  reference: string | null;
  /** credits posted − debits posted, as stored */
  stored: bigint;
  /** debits pending, as stored */
  held: bigint;
  /** the same posted balance recomputed from every single-phase transfer and post that touches the account */
  recomputed: bigint;
  fundings: {
    id: string;
    amount: bigint;
    reference: string;
    ts: Date;
    /** the amounts of the merchant's posted payments (single-phase, or posts) of the asset with that reference */
    payments: bigint[];
  }[];
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

  /**
   * Every account of `accountCode` with its stored totals and its posted balance recomputed from the transfers that
   * touch it (pending transfers and voids move nothing posted), its funding transfers (`fundedBy`, crediting it) and,
   * for each, the posted payments (`fundingCode`, single-phase or posts; a post carries the settlement's reference) of
   * its asset booked under its reference.
   */
  async accountAudits(merchantId: string, query: AccountAuditQuery): Promise<AccountAudit[]> {
    const unposted = TransferFlag.pending | TransferFlag.void_pending_transfer;
    const accounts = await this.db.$queryRawUnsafe<
      { key: bigint; id: string; asset: string; reference: string | null; stored: string; held: string; recomputed: string }[]
    >(
      `SELECT a.key, a.id::text AS id, a.asset, a.reference, (a.credits_posted - a.debits_posted)::text AS stored, a.debits_pending::text AS held,
              COALESCE((SELECT sum(CASE WHEN t.credit_account_key = a.key THEN t.amount ELSE -t.amount END)
                          FROM ledger.transfers t
                         WHERE t.merchant_id = a.merchant_id AND (t.debit_account_key = a.key OR t.credit_account_key = a.key) AND t.flags & $3 = 0), 0)::text AS recomputed
         FROM ledger.accounts a
        WHERE a.merchant_id = $1::uuid AND a.code = $2
        ORDER BY a.asset, a.reference`,
      merchantId,
      query.accountCode,
      unposted,
    );
    if (accounts.length === 0) return [];
    const fundings = await this.db.$queryRawUnsafe<{ account: bigint; id: string; amount: string; reference: string | null; ts: Date; asset: string }[]>(
      `SELECT t.credit_account_key AS account, t.id::text AS id, t.amount::text AS amount, t.reference, t.ts, t.asset
         FROM ledger.transfers t
        WHERE t.merchant_id = $1::uuid AND t.code = $2 AND t.flags & $3 = 0 AND t.credit_account_key = ANY($4::bigint[])
        ORDER BY t.ts, t.seq`,
      merchantId,
      query.fundedBy,
      unposted,
      accounts.map((a) => a.key),
    );
    const references = [...new Set(fundings.map((f) => f.reference).filter((r): r is string => r !== null))];
    const payments = references.length
      ? await this.db.$queryRawUnsafe<{ asset: string; reference: string; amount: string }[]>(
          `SELECT t.asset, t.reference, t.amount::text AS amount FROM ledger.transfers t
            WHERE t.merchant_id = $1::uuid AND t.code = $2 AND t.flags & $3 = 0 AND t.reference = ANY($4::text[])`,
          merchantId,
          query.fundingCode,
          unposted,
          references,
        )
      : [];
    const paid = new Map<string, bigint[]>();
    for (const p of payments) paid.set(`${p.asset}|${p.reference}`, [...(paid.get(`${p.asset}|${p.reference}`) ?? []), BigInt(p.amount)]);
    return accounts.map((a) => ({
      id: a.id,
      asset: a.asset,
      reference: a.reference,
      stored: BigInt(a.stored),
      held: BigInt(a.held),
      recomputed: BigInt(a.recomputed),
      fundings: fundings
        .filter((f) => f.account === a.key)
        .map((f) => ({ id: f.id, amount: BigInt(f.amount), reference: f.reference ?? '', ts: f.ts, payments: paid.get(`${f.asset}|${f.reference}`) ?? [] })),
    }));
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
