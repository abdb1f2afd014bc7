/**
 * Reconciliation compares two views of the same money: what the ledger booked and what the outside world (the chain,
 * Stripe) shows. Amounts are bigint atomic units of their asset, positive: the kind says the direction. Breaks are
 * resolved by correcting transfers in the ledger, never by editing one.
 */

/** Where a movement of money happened. */
export type EntrySource = 'chain' | 'stripe';
export const ENTRY_SOURCES: readonly EntrySource[] = ['chain', 'stripe'];

/** payment: money in; refund, fee and gas: money out. */
export type EntryKind = 'payment' | 'refund' | 'fee' | 'gas';
export const ENTRY_KINDS: readonly EntryKind[] = ['payment', 'refund', 'fee', 'gas'];

/** What a balance check's row is about: a payment channel, or a payer's prepaid balance. */
export type BalanceSubject = 'channel' | 'prepaid';

/** A row's entry kind: a movement's, or the balance a balance check looked at. */
export type RowEntryKind = EntryKind | BalanceSubject;

/**
 * The breaks of the balance checks (balances.ts), where the books' state is matched against the escrow's and against
 * the book's own transfers rather than movement against movement:
 * - channel_deposit_mismatch / channel_settled_mismatch: the escrow's `getChannel` shows another deposit or settled;
 *   for an x402 batch channel, the contract's `channels` balance is not deposit − refunded, or the receiver's totals
 *   (`receivers`) leave the channel settled more than claimed, or less than claimed − what the receiver is still owed;
 * - channel_claimed_mismatch: an x402 batch channel's claimed total on the contract is not the books' claimed;
 * - channel_refunded_mismatch: finalized, the escrow gave back deposit − settled, the books another refund;
 * - channel_not_finalized: closed in the books, not finalized on chain;
 * - channel_closed_on_chain_not_in_books: finalized on chain, open or closing in the books;
 * - channel_not_on_chain: the escrow has no such channel;
 * - channel_unknown_to_books: a channel to the merchant's payee on the escrow (ChannelOpened, or the batch-settlement
 *   contract's ChannelCreated to one of its receivers) the books do not know;
 * - prepaid_funding_missing: a top-up whose funding payment is not a confirmed payment of that asset in the books;
 * - prepaid_funding_mismatch: the funding payment moved another amount than the top-up credited;
 * - prepaid_balance_mismatch: the balance stored is not top-ups − charges − captured holds as its transfers say;
 * - prepaid_negative: the balance (or what holds leave of it) is below zero.
 */
export type ChannelBreakKind =
  | 'channel_deposit_mismatch'
  | 'channel_settled_mismatch'
  | 'channel_claimed_mismatch'
  | 'channel_refunded_mismatch'
  | 'channel_not_finalized'
  | 'channel_closed_on_chain_not_in_books'
  | 'channel_not_on_chain'
  | 'channel_unknown_to_books';
export type PrepaidBreakKind = 'prepaid_funding_missing' | 'prepaid_funding_mismatch' | 'prepaid_balance_mismatch' | 'prepaid_negative';
export const CHANNEL_BREAK_KINDS: readonly ChannelBreakKind[] = [
  'channel_deposit_mismatch',
  'channel_settled_mismatch',
  'channel_claimed_mismatch',
  'channel_refunded_mismatch',
  'channel_not_finalized',
  'channel_closed_on_chain_not_in_books',
  'channel_not_on_chain',
  'channel_unknown_to_books',
];
export const PREPAID_BREAK_KINDS: readonly PrepaidBreakKind[] = [
  'prepaid_funding_missing',
  'prepaid_funding_mismatch',
  'prepaid_balance_mismatch',
  'prepaid_negative',
];

/** over_refund: the refunds booked against one payment add up to more than it captured (see `refundedTotals`) */
export type BreakKind = 'missing_in_ledger' | 'missing_externally' | 'amount_mismatch' | 'duplicate' | 'over_refund' | ChannelBreakKind | PrepaidBreakKind;
export const BREAK_KINDS: readonly BreakKind[] = [
  'missing_in_ledger',
  'missing_externally',
  'amount_mismatch',
  'duplicate',
  'over_refund',
  ...CHANNEL_BREAK_KINDS,
  ...PREPAID_BREAK_KINDS,
];

export type RowKind = 'matched' | 'pending' | BreakKind;
export const ROW_KINDS: readonly RowKind[] = ['matched', 'pending', ...BREAK_KINDS];

export function isBreak(kind: RowKind): kind is BreakKind {
  return kind !== 'matched' && kind !== 'pending';
}

/** A half-open interval [from, to). */
export interface Period {
  from: Date;
  to: Date;
}

/**
 * One movement as the ledger booked it. Amounts are positive, except a correction's (see `corrects`).
 *
 * `reference` names the external movement, in one of these forms:
 * - chain: `<txHash>:<logIndex>` (one Transfer log), or just `<txHash>` when the ledger knows only the transaction
 *   (e.g. from the facilitator's settlement); it then matches a Transfer log of that transaction to the merchant of
 *   the same asset, the one with the same amount first;
 * - stripe: the PaymentIntent id (`pi_…`) or the MPP challenge id (`metadata.challenge_id`) of a payment, the refund
 *   id (`re_…`) or its PaymentIntent id for a refund, the balance transaction id (`txn_…`) or the PaymentIntent id for
 *   a Stripe fee.
 */
export interface LedgerEntry {
  id: string;
  merchantId: string;
  source: EntrySource;
  /** `eip155:31337/0x…` (token address lowercase) or `stripe/usd` */
  asset: string;
  reference: string;
  kind: EntryKind;
  amount: bigint;
  /** pending: a two-phase transfer not yet posted or voided */
  state: 'pending' | 'posted';
  occurredAt: Date;
  /**
   * A correcting transfer: the id of the entry it corrects. Its amount is added to that entry's, negative to take
   * away (a full reversal leaves nothing to reconcile). It counts in the period of the entry it corrects, however
   * much later it was booked; without that entry among the input it is left to that entry's period.
   */
  corrects?: string;
  /** a subscription's charge (issue 13): which subscription, which period and which try, as the ledger recorded it */
  subscription?: SubscriptionCharge;
}

/** The charge of one period of a subscription, as the payment snapshot names it. */
export interface SubscriptionCharge {
  id: string;
  periodIndex: number;
  attempt: number;
}

/**
 * What the external side knows about the payment a refund gives back, so that the refunds booked against one payment
 * can be added up: the payment's own reference (a PaymentIntent) and what it captured, atomic units as a decimal string.
 * Kept in an external refund's `details` under these keys.
 */
export const REFUND_OF_DETAIL = 'refundOf';
export const CAPTURED_DETAIL = 'captured';

/** One movement as the chain or Stripe shows it. */
export interface ExternalEntry {
  source: EntrySource;
  asset: string;
  /** its own unique id: `<txHash>:<logIndex>`, `pi_…`, `re_…`, `txn_…` */
  reference: string;
  /** other ids unique to this movement that a ledger entry may name instead (a PaymentIntent's challenge id) */
  aliases?: string[];
  /** what holds it, when that may hold several (a transaction's logs, a PaymentIntent's refunds) */
  container?: string;
  kind: EntryKind;
  amount: bigint;
  occurredAt: Date;
  /** what an operator needs to find it: block, from, to, charge, metadata… */
  details: Record<string, string>;
}

export interface ReconRow {
  /** stable across runs: the same break found again has the same key */
  key: string;
  kind: RowKind;
  source: EntrySource;
  asset: string;
  entryKind: RowEntryKind;
  /** the external reference when there is one, else the ledger's; a balance check's: the channel id, the payer, the top-up's payment */
  reference: string;
  /** the ledger entry's time when there is one (it decides the row's period), else the external entry's */
  occurredAt: Date;
  /** as corrected: its amount is the booking plus its corrections */
  ledger?: LedgerEntry;
  /** ids of the correcting entries folded into `ledger` */
  corrections?: string[];
  external?: ExternalEntry;
  /** amount_mismatch: external − ledger */
  difference?: bigint;
  /** duplicate: the key of the entry this one repeats (a ledger entry id, or an external reference) */
  duplicateOf?: string;
  /** over_refund: the ledger refunds (ids) that together give back more than the payment (`reference`) captured */
  refunds?: string[];
  /** over_refund: what the payment captured, and what the ledger refunded of it */
  captured?: bigint;
  refunded?: bigint;
  /** a balance check's break: what the books say, and what the chain (or the book's own transfers) says; `difference` = actual − expected */
  expected?: bigint;
  actual?: bigint;
  /** a balance check's break: what an operator needs to find it (channel, escrow, payer, block, figure…) */
  details?: Record<string, string>;
}

/** Count and signed net amount (payments in, everything else out). */
export interface Tally {
  count: number;
  net: bigint;
}

export interface AssetTotals {
  asset: string;
  source: EntrySource;
  ledger: Tally;
  external: Tally;
  matched: Tally;
  pending: number;
  breaks: Record<BreakKind, number>;
  /** external.net − ledger.net */
  difference: bigint;
}

/** What the balance checks looked at (each channel and prepaid balance once, as of the run). */
export interface BalanceChecks {
  channels: number;
  prepaidBalances: number;
  topUps: number;
  /** the block the escrows were read at, per network */
  blocks?: Record<string, string>;
}

export interface ReconSummary {
  period: Period;
  generatedAt: Date;
  rows: number;
  counts: Record<RowKind, number>;
  breaks: number;
  ledgerEntries: number;
  externalEntries: number;
  /** correcting entries folded into the entries they correct (fully reversed entries have no row) */
  corrections: number;
  /** what the balance checks covered, when the run made them */
  checked?: BalanceChecks;
}

export interface ReconReport {
  rows: ReconRow[];
  /** subscriptions' failed attempts and cancellations of the period: shown, never breaks (no money moved) */
  subscriptionEvents?: SubscriptionEvent[];
  totals: AssetTotals[];
  summary: ReconSummary;
}

/** How to show an asset's amounts to people. */
export interface AssetInfo {
  asset: string;
  symbol: string;
  decimals: number;
}

/** Money in is positive, money out negative. */
export function signed(kind: EntryKind, amount: bigint): bigint {
  return kind === 'payment' ? amount : -amount;
}

/**
 * A subscription event of the period that moved no money, for the report's subscriptions section: a charge attempt
 * that failed, was refused or voided, or a cancellation (requested or done).
 */
export interface SubscriptionEvent {
  subscriptionId: string;
  /** charge_failed, charge_refused, charge_voided, cancel_requested, canceled */
  kind: SubscriptionEventKind;
  at: Date;
  asset: string;
  periodIndex?: number;
  attempt?: number;
  /** the charge's amount, atomic units */
  amount?: bigint;
  /** the failure or refusal reason, or who canceled and when it takes effect */
  detail?: string;
}

export type SubscriptionEventKind = 'charge_failed' | 'charge_refused' | 'charge_voided' | 'cancel_requested' | 'canceled';
