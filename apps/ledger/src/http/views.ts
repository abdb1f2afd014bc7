import {
  ACCOUNT_RESULT_MESSAGES,
  AccountFlag,
  decodeFlags,
  TRANSFER_RESULT_MESSAGES,
  TransferFlag,
  type AccountInput,
  type AccountResult,
  type Transfer,
  type TransferInput,
  type TransferResult,
} from '@mp/ledger';
import { formatUnits } from '@mp/money';
import type { AssetInfo } from '@mp/reconciliation';
import type { LedgerAccount, Statement, TransferRecord } from '../core/ledger.service';

/** JSON shapes of the API: amounts and balances are decimal strings of atomic units, times ISO 8601, ids UUIDs. */

export function accountView(a: LedgerAccount) {
  return {
    id: a.id,
    asset: a.asset,
    code: a.code,
    flags: decodeFlags(a.flags, AccountFlag),
    normalBalance: a.normalBalance,
    reference: a.reference,
    createdAt: a.createdAt.toISOString(),
    debitsPending: a.debitsPending.toString(),
    debitsPosted: a.debitsPosted.toString(),
    creditsPending: a.creditsPending.toString(),
    creditsPosted: a.creditsPosted.toString(),
    balances: { posted: a.balances.posted.toString(), pending: a.balances.pending.toString(), available: a.balances.available.toString() },
  };
}

function transferFields(t: Transfer) {
  return {
    id: t.id,
    debitAccountId: t.debitAccountId,
    creditAccountId: t.creditAccountId,
    amount: t.amount.toString(),
    asset: t.asset,
    code: t.code,
    flags: decodeFlags(t.flags, TransferFlag),
    pendingId: t.pendingId,
    timeout: t.timeout,
    expiresAt: t.expiresAt?.toISOString() ?? null,
    reference: t.reference,
    timestamp: t.timestamp.toISOString(),
  };
}

export function transferView(t: TransferRecord) {
  return { ...transferFields(t), status: t.status };
}

export function accountResultView(input: AccountInput, r: AccountResult, index: number) {
  return { index, id: input.id, result: r.result, message: ACCOUNT_RESULT_MESSAGES[r.result] };
}

export function transferResultView(input: TransferInput, r: TransferResult, index: number) {
  return {
    index,
    id: input.id,
    result: r.result,
    message: TRANSFER_RESULT_MESSAGES[r.result],
    ...(r.timestamp && { timestamp: r.timestamp.toISOString() }),
    ...(r.firstResult && { firstResult: r.firstResult }),
  };
}

/**
 * A statement; beside each atomic amount and balance the same in decimals of the asset (`amountDecimal`,
 * `balanceDecimal`, e.g. "12.345678"), with `assetSymbol` and `assetDecimals`: all null when the asset is not known.
 */
export function statementView(s: Statement, nextCursor: string | null, asset?: AssetInfo) {
  const decimal = (amount: bigint) => (asset ? formatUnits(amount, asset.decimals) : null);
  const snapshot = (p: Statement['opening']) => ({
    debitsPosted: p.debitsPosted.toString(),
    creditsPosted: p.creditsPosted.toString(),
    balance: p.balance.toString(),
    balanceDecimal: decimal(p.balance),
  });
  return {
    account: accountView(s.account),
    assetSymbol: asset?.symbol ?? null,
    assetDecimals: asset?.decimals ?? null,
    from: s.from.toISOString(),
    to: s.to.toISOString(),
    opening: snapshot(s.opening),
    closing: snapshot(s.closing),
    entries: s.entries.map((e) => ({
      transferId: e.transfer.id,
      timestamp: e.transfer.timestamp.toISOString(),
      side: e.side,
      amount: e.transfer.amount.toString(),
      amountDecimal: decimal(e.transfer.amount),
      counterpartyAccountId: e.counterpartyAccountId,
      code: e.transfer.code,
      pendingId: e.transfer.pendingId,
      reference: e.transfer.reference,
      balance: e.balance.toString(),
      balanceDecimal: decimal(e.balance),
    })),
    nextCursor,
  };
}
