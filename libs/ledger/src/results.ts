/**
 * Every answer create_accounts and create_transfers can give, one per event, as TigerBeetle names them. The
 * messages are the one place their wording lives. When several apply, the first in evaluation order is given
 * (see account-rules.ts and transfer-rules.ts).
 */
export const ACCOUNT_RESULT_MESSAGES = {
  created: 'the account was created',
  exists: 'an identical account with this id already exists; nothing was changed',
  linked_event_failed: 'not created: another account in its linked chain failed, so the whole chain failed',
  linked_event_chain_open: 'not created: the last account of the request has the linked flag, so its chain never closes',
  id_must_not_be_zero: 'not created: the id 0 is reserved',
  id_must_not_be_int_max: 'not created: the id 2^128-1 is reserved',
  flags_are_mutually_exclusive: 'not created: debits_must_not_exceed_credits and credits_must_not_exceed_debits cannot both be set',
  code_must_not_be_zero: 'not created: code must be 1 to 65535',
  exists_with_different_flags: 'an account with this id already exists with different flags',
  exists_with_different_reference: 'an account with this id already exists with a different reference',
  exists_with_different_ledger: 'an account with this id already exists with a different asset',
  exists_with_different_code: 'an account with this id already exists with a different code',
  exists_with_different_normal_balance: 'an account with this id already exists with a different normal balance',
} as const;

export const TRANSFER_RESULT_MESSAGES = {
  created: 'the transfer was created',
  exists: 'an identical transfer with this id already exists; nothing was changed (treat it as created)',
  linked_event_failed: 'not created: another transfer in its linked chain failed, so the whole chain failed',
  linked_event_chain_open: 'not created: the last transfer of the request has the linked flag, so its chain never closes',
  id_must_not_be_zero: 'not created: the id 0 is reserved',
  id_must_not_be_int_max: 'not created: the id 2^128-1 is reserved',
  id_already_failed: 'not created: a transfer with this id already failed on a condition that could change (see firstResult); retry with a new id',
  exists_with_different_flags: 'a transfer with this id already exists with different flags',
  exists_with_different_pending_id: 'a transfer with this id already exists with a different pendingId',
  exists_with_different_timeout: 'a transfer with this id already exists with a different timeout',
  exists_with_different_debit_account_id: 'a transfer with this id already exists with a different debit account',
  exists_with_different_credit_account_id: 'a transfer with this id already exists with a different credit account',
  exists_with_different_amount: 'a transfer with this id already exists with a different amount',
  exists_with_different_reference: 'a transfer with this id already exists with a different reference',
  exists_with_different_ledger: 'a transfer with this id already exists with a different asset',
  exists_with_different_code: 'a transfer with this id already exists with a different code',
  flags_are_mutually_exclusive: 'not created: pending, post_pending_transfer and void_pending_transfer exclude one another',
  debit_account_id_must_not_be_zero: 'not created: debitAccountId is required (and must not be 0)',
  debit_account_id_must_not_be_int_max: 'not created: the debit account id 2^128-1 is reserved',
  credit_account_id_must_not_be_zero: 'not created: creditAccountId is required (and must not be 0)',
  credit_account_id_must_not_be_int_max: 'not created: the credit account id 2^128-1 is reserved',
  accounts_must_be_different: 'not created: an account cannot transfer to itself',
  pending_id_must_be_zero: 'not created: only a post_pending_transfer or void_pending_transfer may name a pendingId',
  pending_id_must_not_be_zero: 'not created: a post or void must name the pending transfer in pendingId',
  pending_id_must_not_be_int_max: 'not created: the pending id 2^128-1 is reserved',
  pending_id_must_be_different: 'not created: a transfer cannot post or void itself',
  timeout_reserved_for_pending_transfer: 'not created: only pending transfers have a timeout',
  ledger_must_not_be_zero: 'not created: asset is required',
  code_must_not_be_zero: 'not created: code is required (1 to 65535)',
  amount_must_not_be_zero: 'not created: amount must be greater than zero',
  debit_account_not_found: 'not created: the debit account does not exist',
  credit_account_not_found: 'not created: the credit account does not exist',
  accounts_must_have_the_same_ledger: 'not created: the debit and credit accounts hold different assets',
  transfer_must_have_the_same_ledger_as_accounts: "not created: the transfer's asset differs from its accounts' asset",
  pending_transfer_not_found: 'not created: the pending transfer does not exist',
  pending_transfer_not_pending: 'not created: the transfer named by pendingId is not a pending transfer',
  pending_transfer_has_different_debit_account_id: 'not created: the pending transfer has a different debit account',
  pending_transfer_has_different_credit_account_id: 'not created: the pending transfer has a different credit account',
  pending_transfer_has_different_ledger: 'not created: the pending transfer has a different asset',
  pending_transfer_has_different_code: 'not created: the pending transfer has a different code',
  exceeds_pending_transfer_amount: 'not created: the amount exceeds the pending amount',
  pending_transfer_has_different_amount: 'not created: a void releases the whole pending amount; omit amount or give exactly the pending amount',
  pending_transfer_already_posted: 'not created: the pending transfer was already posted',
  pending_transfer_already_voided: 'not created: the pending transfer was already voided',
  pending_transfer_expired: 'not created: the pending transfer expired (its timeout passed)',
  overflows_debits_pending: "not created: the debit account's debits pending would overflow",
  overflows_credits_pending: "not created: the credit account's credits pending would overflow",
  overflows_debits_posted: "not created: the debit account's debits posted would overflow",
  overflows_credits_posted: "not created: the credit account's credits posted would overflow",
  overflows_debits: "not created: the debit account's debits would overflow",
  overflows_credits: "not created: the credit account's credits would overflow",
  exceeds_credits: 'not created: the debit account has debits_must_not_exceed_credits and not enough credits for this amount',
  exceeds_debits: 'not created: the credit account has credits_must_not_exceed_debits and not enough debits for this amount',
  internal_error:
    'not created: the ledger failed unexpectedly while judging this transfer (logged with its id); nothing of it was applied, and retrying the same id is safe',
} as const;

export type AccountResultCode = keyof typeof ACCOUNT_RESULT_MESSAGES;
export type TransferResultCode = keyof typeof TRANSFER_RESULT_MESSAGES;

/** Whether an event's result leaves its chain intact: `exists` does (a retried chain answers `exists` throughout). */
export const isSuccess = (code: string): boolean => code === 'created' || code === 'exists';

/**
 * Failures that depend on state that can change (an account created later, credits arriving): retrying the very
 * same transfer could succeed later, so, as in TigerBeetle, the id is remembered as failed and every retry answers
 * `id_already_failed`; a new attempt needs a new id. Every other failure is deterministic (it follows from the
 * request and from immutable records), so retrying gives the same answer again without anything stored.
 */
export const TRANSIENT_TRANSFER_RESULTS: ReadonlySet<TransferResultCode> = new Set([
  'debit_account_not_found',
  'credit_account_not_found',
  'pending_transfer_not_found',
  'exceeds_credits',
  'exceeds_debits',
]);
