import { type Account, type CreatedTransfer, type PendingResolution, type Transfer, type TransferInput } from './model';
import { AccountFlag, TransferFlag, has } from './flags';
import { MAX_ID, ZERO_ID } from './ids';
import { Journal, journaledSet } from './journal';
import { runChains } from './chains';
import { BALANCE_MAX } from './balances';
import { TRANSIENT_TRANSFER_RESULTS, type TransferResultCode } from './results';

export interface TransferResult {
  result: TransferResultCode;
  /** created: this batch's timestamp; exists: when the stored transfer was created */
  timestamp?: Date;
  /** id_already_failed: what the first attempt with this id failed with */
  firstResult?: TransferResultCode;
}

/** A transfer whose evaluation threw: a bug, answered `internal_error` and reported for the operator to see. */
export interface TransferProblem {
  id: string;
  error: unknown;
}

/** What a batch reads: the state of everything its transfers touch, locked for the batch's transaction. */
export interface TransferBatchState {
  /** the batch's clock (the database's, read after the accounts were locked) */
  now: Date;
  /** every account the transfers name, and the accounts of the pending transfers they post or void */
  accounts: Iterable<Account>;
  /** stored transfers with the batch's ids, and the pending transfers it posts or voids */
  transfers: Iterable<Transfer>;
  /** how the referenced pending transfers were resolved, if they were */
  resolutions: Iterable<[pendingId: string, PendingResolution]>;
  /** ids of the batch that failed before on a transient condition */
  failures: Iterable<[id: string, TransferResultCode]>;
}

/** What a batch changes, for the store to write in the same transaction. */
export interface TransferBatchChanges {
  transfers: CreatedTransfer[];
  /** accounts whose balances changed, with their new balances */
  accounts: Account[];
  /** pending transfers with a timeout: now awaiting expiry */
  timeoutsOpened: Transfer[];
  /** pending transfers (with a timeout) posted or voided: no longer awaiting expiry */
  timeoutsClosed: string[];
  /** ids that failed transiently, remembered so that they stay failed */
  failures: [string, TransferResultCode][];
}

const POST_OR_VOID = TransferFlag.post_pending_transfer | TransferFlag.void_pending_transfer;

/**
 * create_transfers over one merchant's ledger, as TigerBeetle defines it: single-phase and pending transfers,
 * posting (all or part) and voiding of pending transfers, expiry, linked chains, balance limits and idempotent
 * retries (results.ts lists every answer). Pure: it reads a locked snapshot and reports what to write. Call
 * {@link create} once per request, so that a chain never spans two requests.
 */
export class TransferBatch {
  private readonly now: Date;
  private readonly initial: Map<string, Account>;
  private readonly accounts: Map<string, Account>;
  private readonly transfers: Map<string, Transfer>;
  private readonly resolutions: Map<string, PendingResolution>;
  private readonly failures: Map<string, TransferResultCode>;
  private readonly journal = new Journal();
  private readonly created = new Map<string, CreatedTransfer>();
  private readonly opened = new Map<string, Transfer>();
  private readonly closed = new Map<string, true>();
  private readonly newFailures = new Map<string, TransferResultCode>();
  private readonly reported: TransferProblem[] = [];

  constructor(state: TransferBatchState) {
    this.now = state.now;
    this.initial = new Map([...state.accounts].map((a) => [a.id, a]));
    this.accounts = new Map(this.initial);
    this.transfers = new Map([...state.transfers].map((t) => [t.id, t]));
    this.resolutions = new Map(state.resolutions);
    this.failures = new Map(state.failures);
  }

  create(inputs: readonly TransferInput[]): TransferResult[] {
    const codes = runChains<TransferInput, TransferResultCode>({
      events: inputs,
      linked: (t) => has(t.flags, TransferFlag.linked),
      apply: (t) => this.guarded(t),
      mark: () => this.journal.mark(),
      rollback: (mark) => this.journal.rollback(mark),
      commit: () => this.journal.forget(),
      failed: (t, result) => {
        if (TRANSIENT_TRANSFER_RESULTS.has(result)) {
          this.failures.set(t.id, result);
          this.newFailures.set(t.id, result);
        }
      },
      failedCode: 'linked_event_failed',
      chainOpenCode: 'linked_event_chain_open',
    });
    return codes.map((result, i) => {
      const id = inputs[i].id;
      if (result === 'created' || result === 'exists') return { result, timestamp: this.transfers.get(id)!.timestamp };
      if (result === 'id_already_failed') return { result, firstResult: this.failures.get(id) };
      return { result };
    });
  }

  get changes(): TransferBatchChanges {
    return {
      transfers: [...this.created.values()],
      accounts: [...this.accounts.values()].filter((a) => balancesChanged(a, this.initial.get(a.id)!)),
      timeoutsOpened: [...this.opened.values()],
      timeoutsClosed: [...this.closed.keys()],
      failures: [...this.newFailures],
    };
  }

  /** Transfers whose evaluation threw (each answered `internal_error`); empty unless the rules have a bug. */
  get problems(): readonly TransferProblem[] {
    return this.reported;
  }

  /**
   * The last resort: an exception while judging one transfer is that transfer's `internal_error` (its chain fails
   * with it, the rest of the batch goes on) and a reported problem, never a failed request. Whatever it changed
   * before throwing is undone.
   */
  private guarded(t: TransferInput): TransferResultCode {
    const mark = this.journal.mark();
    try {
      return this.createOne(t);
    } catch (error) {
      this.journal.rollback(mark);
      this.reported.push({ id: t.id, error });
      return 'internal_error';
    }
  }

  private createOne(t: TransferInput): TransferResultCode {
    if (t.id === ZERO_ID) return 'id_must_not_be_zero';
    if (t.id === MAX_ID) return 'id_must_not_be_int_max';
    const existing = this.transfers.get(t.id);
    if (existing) return this.compareExisting(t, existing);
    if (this.failures.has(t.id)) return 'id_already_failed';
    if (t.flags & POST_OR_VOID) return this.postOrVoid(t);

    if (!t.debitAccountId || t.debitAccountId === ZERO_ID) return 'debit_account_id_must_not_be_zero';
    if (t.debitAccountId === MAX_ID) return 'debit_account_id_must_not_be_int_max';
    if (!t.creditAccountId || t.creditAccountId === ZERO_ID) return 'credit_account_id_must_not_be_zero';
    if (t.creditAccountId === MAX_ID) return 'credit_account_id_must_not_be_int_max';
    if (t.debitAccountId === t.creditAccountId) return 'accounts_must_be_different';
    if (t.pendingId !== undefined && t.pendingId !== ZERO_ID) return 'pending_id_must_be_zero';
    const pending = has(t.flags, TransferFlag.pending);
    if (!pending && t.timeout) return 'timeout_reserved_for_pending_transfer';
    if (!t.asset) return 'ledger_must_not_be_zero';
    if (!t.code) return 'code_must_not_be_zero';
    const amount = t.amount ?? 0n;
    if (amount === 0n) return 'amount_must_not_be_zero';

    const dr = this.accounts.get(t.debitAccountId);
    if (!dr) return 'debit_account_not_found';
    const cr = this.accounts.get(t.creditAccountId);
    if (!cr) return 'credit_account_not_found';
    if (dr.asset !== cr.asset) return 'accounts_must_have_the_same_ledger';
    if (t.asset !== dr.asset) return 'transfer_must_have_the_same_ledger_as_accounts';

    if (pending && dr.debitsPending + amount > BALANCE_MAX) return 'overflows_debits_pending';
    if (pending && cr.creditsPending + amount > BALANCE_MAX) return 'overflows_credits_pending';
    if (dr.debitsPosted + amount > BALANCE_MAX) return 'overflows_debits_posted';
    if (cr.creditsPosted + amount > BALANCE_MAX) return 'overflows_credits_posted';
    if (dr.debitsPending + dr.debitsPosted + amount > BALANCE_MAX) return 'overflows_debits';
    if (cr.creditsPending + cr.creditsPosted + amount > BALANCE_MAX) return 'overflows_credits';
    if (has(dr.flags, AccountFlag.debits_must_not_exceed_credits) && dr.debitsPending + dr.debitsPosted + amount > dr.creditsPosted) {
      return 'exceeds_credits';
    }
    if (has(cr.flags, AccountFlag.credits_must_not_exceed_debits) && cr.creditsPending + cr.creditsPosted + amount > cr.debitsPosted) {
      return 'exceeds_debits';
    }

    const timeout = t.timeout ?? 0;
    const transfer: Transfer = {
      id: t.id,
      debitAccountId: dr.id,
      creditAccountId: cr.id,
      amount,
      pendingId: null,
      asset: dr.asset,
      code: t.code,
      flags: t.flags,
      timeout,
      reference: t.reference ?? null,
      timestamp: this.now,
      expiresAt: pending && timeout > 0 ? new Date(this.now.getTime() + timeout * 1000) : null,
    };
    const [dr2, cr2] = pending
      ? [
          { ...dr, debitsPending: dr.debitsPending + amount },
          { ...cr, creditsPending: cr.creditsPending + amount },
        ]
      : [
          { ...dr, debitsPosted: dr.debitsPosted + amount },
          { ...cr, creditsPosted: cr.creditsPosted + amount },
        ];
    this.record(transfer, dr2, cr2);
    if (transfer.expiresAt) journaledSet(this.journal, this.opened, transfer.id, transfer);
    return 'created';
  }

  private postOrVoid(t: TransferInput): TransferResultCode {
    const post = has(t.flags, TransferFlag.post_pending_transfer);
    if ((post && has(t.flags, TransferFlag.void_pending_transfer)) || has(t.flags, TransferFlag.pending)) return 'flags_are_mutually_exclusive';
    if (!t.pendingId || t.pendingId === ZERO_ID) return 'pending_id_must_not_be_zero';
    if (t.pendingId === MAX_ID) return 'pending_id_must_not_be_int_max';
    if (t.pendingId === t.id) return 'pending_id_must_be_different';
    if (t.timeout) return 'timeout_reserved_for_pending_transfer';
    const p = this.transfers.get(t.pendingId);
    if (!p) return 'pending_transfer_not_found';
    if (!has(p.flags, TransferFlag.pending)) return 'pending_transfer_not_pending';
    if (t.debitAccountId && t.debitAccountId !== ZERO_ID && t.debitAccountId !== p.debitAccountId) return 'pending_transfer_has_different_debit_account_id';
    if (t.creditAccountId && t.creditAccountId !== ZERO_ID && t.creditAccountId !== p.creditAccountId)
      return 'pending_transfer_has_different_credit_account_id';
    if (t.asset && t.asset !== p.asset) return 'pending_transfer_has_different_ledger';
    if (t.code && t.code !== p.code) return 'pending_transfer_has_different_code';

    // A void releases the whole pending amount (0 or absent means "all", as in TigerBeetle); a post may take part.
    const amount = post ? (t.amount ?? p.amount) : t.amount || p.amount;
    if (post && amount === 0n) return 'amount_must_not_be_zero';
    if (amount > p.amount) return 'exceeds_pending_transfer_amount';
    if (!post && amount < p.amount) return 'pending_transfer_has_different_amount';
    const resolution = this.resolutions.get(p.id);
    if (resolution === 'posted') return 'pending_transfer_already_posted';
    if (resolution === 'voided') return 'pending_transfer_already_voided';
    if (p.expiresAt && p.expiresAt.getTime() <= this.now.getTime()) return 'pending_transfer_expired';

    const dr = this.lockedAccount(p.debitAccountId);
    const cr = this.lockedAccount(p.creditAccountId);
    if (post && dr.debitsPosted + amount > BALANCE_MAX) return 'overflows_debits_posted';
    if (post && cr.creditsPosted + amount > BALANCE_MAX) return 'overflows_credits_posted';

    const transfer: Transfer = {
      id: t.id,
      debitAccountId: p.debitAccountId,
      creditAccountId: p.creditAccountId,
      amount,
      pendingId: p.id,
      asset: p.asset,
      code: p.code,
      flags: t.flags,
      timeout: 0,
      reference: t.reference ?? p.reference,
      timestamp: this.now,
      expiresAt: null,
    };
    const posted = post ? amount : 0n;
    this.record(
      transfer,
      { ...dr, debitsPending: dr.debitsPending - p.amount, debitsPosted: dr.debitsPosted + posted },
      { ...cr, creditsPending: cr.creditsPending - p.amount, creditsPosted: cr.creditsPosted + posted },
    );
    journaledSet(this.journal, this.resolutions, p.id, post ? 'posted' : 'voided');
    if (p.expiresAt) {
      if (this.opened.has(p.id)) {
        const opened = this.opened.get(p.id)!;
        this.opened.delete(p.id);
        this.journal.record(() => this.opened.set(p.id, opened));
      } else journaledSet(this.journal, this.closed, p.id, true);
    }
    return 'created';
  }

  private compareExisting(t: TransferInput, e: Transfer): TransferResultCode {
    if (t.flags !== e.flags) return 'exists_with_different_flags';
    if ((t.pendingId ?? null) !== e.pendingId) return 'exists_with_different_pending_id';
    if ((t.timeout ?? 0) !== e.timeout) return 'exists_with_different_timeout';
    if (e.pendingId === null) {
      if (t.debitAccountId !== e.debitAccountId) return 'exists_with_different_debit_account_id';
      if (t.creditAccountId !== e.creditAccountId) return 'exists_with_different_credit_account_id';
      if (t.amount !== e.amount) return 'exists_with_different_amount';
      if ((t.reference ?? null) !== e.reference) return 'exists_with_different_reference';
      if (t.asset !== e.asset) return 'exists_with_different_ledger';
      if (t.code !== e.code) return 'exists_with_different_code';
      return 'exists';
    }
    // A post or void: fields left out were inherited from the pending transfer, so only given ones must match.
    const p = this.transfers.get(e.pendingId);
    if (t.debitAccountId && t.debitAccountId !== e.debitAccountId) return 'exists_with_different_debit_account_id';
    if (t.creditAccountId && t.creditAccountId !== e.creditAccountId) return 'exists_with_different_credit_account_id';
    const wholeAmount = has(t.flags, TransferFlag.void_pending_transfer) ? !t.amount : t.amount === undefined;
    if (wholeAmount ? p !== undefined && e.amount !== p.amount : t.amount !== e.amount) return 'exists_with_different_amount';
    if (t.reference === undefined ? p !== undefined && e.reference !== p.reference : t.reference !== e.reference) return 'exists_with_different_reference';
    if (t.asset && t.asset !== e.asset) return 'exists_with_different_ledger';
    if (t.code && t.code !== e.code) return 'exists_with_different_code';
    return 'exists';
  }

  private record(transfer: Transfer, dr: Account, cr: Account): void {
    journaledSet(this.journal, this.accounts, dr.id, dr);
    journaledSet(this.journal, this.accounts, cr.id, cr);
    journaledSet(this.journal, this.transfers, transfer.id, transfer);
    journaledSet(this.journal, this.created, transfer.id, {
      ...transfer,
      debitAccountPosted: { debits: dr.debitsPosted, credits: dr.creditsPosted },
      creditAccountPosted: { debits: cr.debitsPosted, credits: cr.creditsPosted },
    });
  }

  private lockedAccount(id: string): Account {
    const account = this.accounts.get(id);
    // The store locks the accounts of every pending transfer a batch reads; missing one is a bug, not an input
    // (answered internal_error by the guard above).
    if (!account) throw new Error(`account ${id} of a pending transfer was not loaded`);
    return account;
  }
}

/**
 * Releases the reservations of expired pending transfers: the pending totals fall by their amounts, nothing is
 * posted. Returns the accounts they touched, with their new balances.
 */
export function releaseExpired(accounts: Iterable<Account>, expired: Iterable<Pick<Transfer, 'debitAccountId' | 'creditAccountId' | 'amount'>>): Account[] {
  const byId = new Map([...accounts].map((a) => [a.id, a]));
  const touched = new Map<string, Account>();
  const take = (id: string) => touched.get(id) ?? { ...byId.get(id)! };
  for (const p of expired) {
    const dr = take(p.debitAccountId);
    dr.debitsPending -= p.amount;
    touched.set(dr.id, dr);
    const cr = take(p.creditAccountId);
    cr.creditsPending -= p.amount;
    touched.set(cr.id, cr);
  }
  return [...touched.values()];
}

function balancesChanged(a: Account, b: Account): boolean {
  return (
    a.debitsPending !== b.debitsPending || a.debitsPosted !== b.debitsPosted || a.creditsPending !== b.creditsPending || a.creditsPosted !== b.creditsPosted
  );
}
