import { Injectable } from '@nestjs/common';
import { isUniqueViolation } from '@mp/db';
import {
  postedBalance,
  summarize,
  TransferFlag,
  type AccountInput,
  type AccountResult,
  type Balances,
  type BalanceSummary,
  type TransferInput,
  type TransferResult,
} from '@mp/ledger';
import { AccountStore, type AccountFilter, type Page } from './account.store';
import {
  BookQueries,
  type AccountAudit,
  type AccountAuditQuery,
  type AccountCodeTransfer,
  type AccountCodeTransferQuery,
  type CorrectionTransfer,
} from './book.queries';
import { PendingExpiry } from './pending-expiry';
import { ReceivingAddressStore, type ReceivingAddress } from './receiving-address.store';
import type { StoredAccount } from './rows';
import { TransferQueries, type Position, type StatementEntry, type TransferFilter, type TransferRecord } from './transfer.queries';
import { TransferWriter } from './transfer-writer';

export type { AccountAudit, AccountAuditQuery, AccountCodeTransfer, AccountCodeTransferQuery, CorrectionTransfer, TransferResolution } from './book.queries';
export type { ReceivingAddress } from './receiving-address.store';
// What the HTTP layer names of a transfer and a page position: the core's types, handed out here, the one way out.
export type { Position, TransferRecord, TransferStatus } from './transfer.queries';
export { TRANSFER_STATUSES } from './transfer.queries';

export type LedgerAccount = StoredAccount & { balances: BalanceSummary };

export interface TransferListFilter extends Omit<TransferFilter, 'accountKey'> {
  accountId?: string;
}

export interface PostedSnapshot {
  debitsPosted: bigint;
  creditsPosted: bigint;
  /** posted balance on the account's normal side */
  balance: bigint;
}

export interface Statement {
  account: LedgerAccount;
  from: Date;
  to: Date;
  opening: PostedSnapshot;
  closing: PostedSnapshot;
  /** this page's postings, each with the account's posted balance right after it */
  entries: (StatementEntry & { balance: bigint })[];
  next?: Position;
}

/**
 * The ledger's application API, for the HTTP controllers and for the rest of the app (settlement ingestion,
 * subscriptions, reconciliation): every call is scoped to one merchant, ids are the merchant's own, and results
 * follow TigerBeetle's create_accounts / create_transfers.
 */
@Injectable()
export class LedgerService {
  constructor(
    private readonly accounts: AccountStore,
    private readonly writer: TransferWriter,
    private readonly transfers: TransferQueries,
    private readonly expiry: PendingExpiry,
    private readonly book: BookQueries,
    private readonly receivingAddresses: ReceivingAddressStore,
  ) {}

  /** One result per account, in order. A batch that races another creating the same id is simply run again. */
  async createAccounts(merchantId: string, accounts: AccountInput[]): Promise<AccountResult[]> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.accounts.create(merchantId, accounts);
      } catch (error) {
        if (attempt >= 3 || !isUniqueViolation(error)) throw error;
      }
    }
  }

  async lookupAccounts(merchantId: string, ids: string[]): Promise<LedgerAccount[]> {
    return (await this.accounts.lookup(merchantId, ids)).map(withBalances);
  }

  /** An account's four totals and the balances read from them; undefined when the merchant has no such account. */
  async balances(merchantId: string, accountId: string): Promise<(Balances & BalanceSummary) | undefined> {
    const [account] = await this.lookupAccounts(merchantId, [accountId]);
    return (
      account && {
        debitsPending: account.debitsPending,
        debitsPosted: account.debitsPosted,
        creditsPending: account.creditsPending,
        creditsPosted: account.creditsPosted,
        ...account.balances,
      }
    );
  }

  async listAccounts(merchantId: string, filter: AccountFilter, limit: number, before?: string): Promise<Page<LedgerAccount, string>> {
    const page = await this.accounts.list(merchantId, filter, limit, before);
    return { rows: page.rows.map(withBalances), next: page.next };
  }

  /** One result per transfer, in order; linked chains succeed or fail together, nothing else is partial. */
  createTransfers(merchantId: string, transfers: TransferInput[]): Promise<TransferResult[]> {
    return this.writer.submit(merchantId, transfers);
  }

  /** Posts a pending transfer: all of it, or `amount` of it (the rest is released). */
  async postPending(merchantId: string, post: { id: string; pendingId: string; amount?: bigint; reference?: string }): Promise<TransferResult> {
    const [result] = await this.createTransfers(merchantId, [{ ...post, flags: TransferFlag.post_pending_transfer }]);
    return result;
  }

  /** Voids a pending transfer: its whole amount is released. */
  async voidPending(merchantId: string, cancel: { id: string; pendingId: string; reference?: string }): Promise<TransferResult> {
    const [result] = await this.createTransfers(merchantId, [{ ...cancel, flags: TransferFlag.void_pending_transfer }]);
    return result;
  }

  lookupTransfers(merchantId: string, ids: string[]): Promise<TransferRecord[]> {
    return this.transfers.lookup(merchantId, ids);
  }

  /** Undefined when the filter names an account the merchant does not have. */
  async listTransfers(merchantId: string, filter: TransferListFilter, limit: number, before?: Position): Promise<Page<TransferRecord, Position> | undefined> {
    const { accountId, ...rest } = filter;
    if (accountId === undefined) return this.transfers.list(merchantId, rest, limit, before);
    const [account] = await this.accounts.lookup(merchantId, [accountId]);
    return account && this.transfers.list(merchantId, { ...rest, accountKey: account.key }, limit, before);
  }

  /**
   * An account's posted movements in [from, to): the posted balance before the period, each posting with the
   * balance after it, and the balance at the end of the period (closing − opening = the period's postings, whatever
   * the page). Undefined when the merchant has no such account.
   */
  async statement(merchantId: string, accountId: string, period: { from: Date; to: Date }, limit: number, after?: Position): Promise<Statement | undefined> {
    const [stored] = await this.accounts.lookup(merchantId, [accountId]);
    if (!stored) return undefined;
    const account = withBalances(stored);
    const snapshot = ({ debitsPosted, creditsPosted }: { debitsPosted: bigint; creditsPosted: bigint }): PostedSnapshot => ({
      debitsPosted,
      creditsPosted,
      balance: postedBalance(account.normalBalance, debitsPosted, creditsPosted),
    });
    const [opening, closing, page] = await Promise.all([
      this.transfers.postedTotalsBefore(account.key, period.from),
      this.transfers.postedTotalsBefore(account.key, period.to),
      this.transfers.postings(account.key, period.from, period.to, limit, after),
    ]);
    return {
      account,
      ...period,
      opening: snapshot(opening),
      closing: snapshot(closing),
      entries: page.rows.map((e) => ({ ...e, balance: postedBalance(account.normalBalance, e.debitsPosted, e.creditsPosted) })),
      next: page.next,
    };
  }

  /** Releases reservations whose timeout passed now rather than at the next sweep; returns how many. */
  expirePendingTransfers(): Promise<number> {
    return this.expiry.sweep();
  }

  /**
   * The merchant's transfers of `query.codes` that touch an account of `query.accountCode`, each with `credits` (it
   * credits such an account) and, for a pending transfer, the post or void that resolved it. A transfer is in the
   * period when it was created before `to` and resolved, or (unresolved or single-phase) created, in [from, to).
   * Posts and voids are never returned themselves: they are their pending transfer's `resolution`.
   */
  accountCodeTransfers(merchantId: string, query: AccountCodeTransferQuery): Promise<AccountCodeTransfer[]> {
    return this.book.transfersOnAccountCode(merchantId, query);
  }

  /**
   * The correcting transfers (code 9, single-phase, `reference` = the id they correct) of the transfers `ids` that
   * touch an account of `accountCode`, and transitively the corrections of those, whenever they were booked.
   */
  correctionsOf(merchantId: string, accountCode: number, ids: readonly string[]): Promise<CorrectionTransfer[]> {
    return this.book.corrections(merchantId, accountCode, ids);
  }

  /**
   * The merchant's accounts of `query.accountCode` as stored and as their own transfers add up, with the transfers that
   * funded them and the posted payments those name (balance reconciliation).
   */
  accountAudits(merchantId: string, query: AccountAuditQuery): Promise<AccountAudit[]> {
    return this.book.accountAudits(merchantId, query);
  }

  /** The assets the merchant has an account of `accountCode` in, sorted. */
  accountAssets(merchantId: string, accountCode: number): Promise<string[]> {
    return this.book.accountAssets(merchantId, accountCode);
  }

  /** Every merchant with an account of `accountCode`, sorted. */
  merchantsWithAccountCode(accountCode: number): Promise<string[]> {
    return this.book.merchantsWithAccountCode(accountCode);
  }

  /** Records that the merchant is paid on chain at `address` on `network` (stored lowercase); idempotent. */
  rememberReceivingAddress(merchantId: string, network: string, address: string): Promise<void> {
    return this.receivingAddresses.remember(merchantId, network, address);
  }

  /** Where the merchant has been paid on chain, by network then address. */
  receivingAddressesOf(merchantId: string): Promise<ReceivingAddress[]> {
    return this.receivingAddresses.list(merchantId);
  }
}

function withBalances(account: StoredAccount): LedgerAccount {
  return { ...account, balances: summarize(account, account.normalBalance) };
}
