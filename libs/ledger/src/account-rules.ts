import { type Account, type AccountInput } from './model';
import { AccountFlag, has } from './flags';
import { MAX_ID, ZERO_ID } from './ids';
import { Journal, journaledSet } from './journal';
import { runChains } from './chains';
import type { AccountResultCode } from './results';
import type { NormalBalance } from './balances';

export interface AccountResult {
  result: AccountResultCode;
}

/** The normal side an account gets when the caller names none: its limit flag tells, else credit. */
export function defaultNormalBalance(flags: number): NormalBalance {
  return has(flags, AccountFlag.credits_must_not_exceed_debits) ? 'debit' : 'credit';
}

/**
 * create_accounts over one merchant's accounts. `existing` holds the stored accounts with the batch's ids; the
 * accounts to insert are in {@link created} afterwards, in request order.
 */
export class AccountBatch {
  private readonly accounts: Map<string, Account>;
  private readonly journal = new Journal();
  private readonly fresh = new Map<string, Account>();

  constructor(existing: Iterable<Account>) {
    this.accounts = new Map([...existing].map((a) => [a.id, a]));
  }

  create(inputs: readonly AccountInput[]): AccountResult[] {
    return runChains<AccountInput, AccountResultCode>({
      events: inputs,
      linked: (a) => has(a.flags, AccountFlag.linked),
      apply: (a) => this.createOne(a),
      mark: () => this.journal.mark(),
      rollback: (mark) => this.journal.rollback(mark),
      commit: () => this.journal.forget(),
      failedCode: 'linked_event_failed',
      chainOpenCode: 'linked_event_chain_open',
    }).map((result) => ({ result }));
  }

  get created(): Account[] {
    return [...this.fresh.values()];
  }

  private createOne(input: AccountInput): AccountResultCode {
    if (input.id === ZERO_ID) return 'id_must_not_be_zero';
    if (input.id === MAX_ID) return 'id_must_not_be_int_max';
    const existing = this.accounts.get(input.id);
    if (existing) return compareAccount(input, existing);
    if (has(input.flags, AccountFlag.debits_must_not_exceed_credits) && has(input.flags, AccountFlag.credits_must_not_exceed_debits)) {
      return 'flags_are_mutually_exclusive';
    }
    if (input.code === 0) return 'code_must_not_be_zero';
    const account: Account = {
      id: input.id,
      asset: input.asset,
      code: input.code,
      flags: input.flags,
      normalBalance: input.normalBalance ?? defaultNormalBalance(input.flags),
      reference: input.reference ?? null,
      debitsPending: 0n,
      debitsPosted: 0n,
      creditsPending: 0n,
      creditsPosted: 0n,
    };
    journaledSet(this.journal, this.accounts, account.id, account);
    journaledSet(this.journal, this.fresh, account.id, account);
    return 'created';
  }
}

function compareAccount(input: AccountInput, e: Account): AccountResultCode {
  if (input.flags !== e.flags) return 'exists_with_different_flags';
  if ((input.reference ?? null) !== e.reference) return 'exists_with_different_reference';
  if (input.asset !== e.asset) return 'exists_with_different_ledger';
  if (input.code !== e.code) return 'exists_with_different_code';
  if ((input.normalBalance ?? defaultNormalBalance(input.flags)) !== e.normalBalance) return 'exists_with_different_normal_balance';
  return 'exists';
}
