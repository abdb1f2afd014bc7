import type { Balances, NormalBalance } from './balances';
import type { LedgerId } from './ids';

/** An account as the rules see it: identity, limits and balances. Ids are scoped to one merchant. */
export interface Account extends Balances {
  id: LedgerId;
  asset: string;
  code: number;
  /** AccountFlag bits */
  flags: number;
  normalBalance: NormalBalance;
  reference: string | null;
}

export interface AccountInput {
  id: LedgerId;
  asset: string;
  code: number;
  flags: number;
  /** default: debit when credits_must_not_exceed_debits is set, credit otherwise */
  normalBalance?: NormalBalance;
  reference?: string;
}

/**
 * A transfer as submitted. Optional members are TigerBeetle's zero values: a post or void inherits the pending
 * transfer's accounts, asset and code, a post without amount posts the whole pending amount.
 */
export interface TransferInput {
  id: LedgerId;
  debitAccountId?: LedgerId;
  creditAccountId?: LedgerId;
  amount?: bigint;
  pendingId?: LedgerId;
  asset?: string;
  code?: number;
  /** TransferFlag bits */
  flags: number;
  /** seconds a pending transfer holds its amount before it expires; 0: until posted or voided */
  timeout?: number;
  reference?: string;
}

/** A stored transfer: immutable. Post and void transfers carry their pending transfer's accounts and asset. */
export interface Transfer {
  id: LedgerId;
  debitAccountId: LedgerId;
  creditAccountId: LedgerId;
  amount: bigint;
  pendingId: LedgerId | null;
  asset: string;
  code: number;
  flags: number;
  timeout: number;
  reference: string | null;
  timestamp: Date;
  /** pending transfers with a timeout: when the reservation lapses */
  expiresAt: Date | null;
}

/** What became of a pending transfer, once it is no longer pending. */
export type PendingResolution = 'posted' | 'voided';

/** A transfer the batch creates, with both accounts' posted totals right after it (for statements). */
export interface CreatedTransfer extends Transfer {
  debitAccountPosted: { debits: bigint; credits: bigint };
  creditAccountPosted: { debits: bigint; credits: bigint };
}
