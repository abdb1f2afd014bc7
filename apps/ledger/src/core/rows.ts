import type { Account, NormalBalance, Transfer } from '@mp/ledger';

/**
 * Rows as the SQL here returns them: money as text (never through a JS number), timestamps as Date or ISO text.
 * These mappers are the only place the ledger converts between them and the rules' bigint objects.
 */
export interface AccountRow {
  key: string;
  merchantId: string;
  id: string;
  asset: string;
  code: number;
  flags: number;
  normalBalance: NormalBalance;
  reference: string | null;
  debitsPending: string;
  debitsPosted: string;
  creditsPending: string;
  creditsPosted: string;
  createdAt: string | Date;
}

export interface TransferRow {
  merchantId: string;
  id: string;
  debitAccountId: string;
  creditAccountId: string;
  amount: string;
  pendingId: string | null;
  asset: string;
  code: number;
  flags: number;
  timeout: number;
  expiresAt: string | Date | null;
  reference: string | null;
  timestamp: string | Date;
}

/** An account with what the store needs besides the rules' view: its merchant, lock key and creation time. */
export interface StoredAccount extends Account {
  merchantId: string;
  key: string;
  createdAt: Date;
}

export function toAccount(row: AccountRow): StoredAccount {
  return {
    key: row.key,
    merchantId: row.merchantId,
    id: row.id,
    asset: row.asset,
    code: row.code,
    flags: row.flags,
    normalBalance: row.normalBalance,
    reference: row.reference,
    debitsPending: BigInt(row.debitsPending),
    debitsPosted: BigInt(row.debitsPosted),
    creditsPending: BigInt(row.creditsPending),
    creditsPosted: BigInt(row.creditsPosted),
    createdAt: new Date(row.createdAt),
  };
}

export function toTransfer(row: TransferRow): Transfer {
  return {
    id: row.id,
    debitAccountId: row.debitAccountId,
    creditAccountId: row.creditAccountId,
    amount: BigInt(row.amount),
    pendingId: row.pendingId,
    asset: row.asset,
    code: row.code,
    flags: row.flags,
    timeout: row.timeout,
    reference: row.reference,
    timestamp: new Date(row.timestamp),
    expiresAt: row.expiresAt === null ? null : new Date(row.expiresAt),
  };
}

/** `ledger.accounts a` as a JSON object of an {@link AccountRow}, for json_agg (numbers as text, so nothing is rounded on the way). */
export const ACCOUNT_JSON = `json_build_object('key', a.key::text, 'merchantId', a.merchant_id, 'id', a.id, 'asset', a.asset, 'code', a.code,
  'flags', a.flags, 'normalBalance', a.normal_balance, 'reference', a.reference, 'debitsPending', a.debits_pending::text,
  'debitsPosted', a.debits_posted::text, 'creditsPending', a.credits_pending::text, 'creditsPosted', a.credits_posted::text, 'createdAt', a.created_at)`;

/** A transfer `t` with its accounts `da` and `ca` as a JSON {@link TransferRow}. */
export const TRANSFER_JSON = `json_build_object('merchantId', t.merchant_id, 'id', t.id, 'debitAccountId', da.id, 'creditAccountId', ca.id,
  'amount', t.amount::text, 'pendingId', t.pending_id, 'asset', t.asset, 'code', t.code, 'flags', t.flags, 'timeout', t.timeout,
  'expiresAt', t.expires_at, 'reference', t.reference, 'timestamp', t.ts)`;

/** Joins a transfer `t` to its accounts, for {@link TRANSFER_JSON} and {@link TRANSFER_COLUMNS}. */
export const TRANSFER_ACCOUNTS_JOIN = `JOIN ledger.accounts da ON da.key = t.debit_account_key JOIN ledger.accounts ca ON ca.key = t.credit_account_key`;

/** SELECT list of a transfer `t` (joined as above) as a {@link TransferRow}. */
export const TRANSFER_COLUMNS = `t.merchant_id::text AS "merchantId", t.id::text AS id, da.id::text AS "debitAccountId", ca.id::text AS "creditAccountId",
  t.amount::text AS amount, t.pending_id::text AS "pendingId", t.asset, t.code, t.flags, t.timeout, t.expires_at AS "expiresAt",
  t.reference, t.ts AS "timestamp"`;

/** Groups items by merchant, keeping their order. */
export function byMerchant<T extends { merchantId: string }>(items: Iterable<T>): Map<string, T[]> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const group = groups.get(item.merchantId);
    if (group) group.push(item);
    else groups.set(item.merchantId, [item]);
  }
  return groups;
}
