import { createHash } from 'node:crypto';
import type { NormalBalance } from './balances';
import { AccountFlag } from './flags';
import type { LedgerId } from './ids';
import type { AccountInput } from './model';

/**
 * The chart of accounts the ledger books the facilitator's payments on, per merchant and asset, and the codes that
 * say what a transfer is. A merchant may book on these accounts through the API too (a correction, a refund):
 * reconciliation reads every transfer that touches a revenue account, whoever wrote it.
 */
export const AccountCode = {
  /** money on its way from payers: debited by every payment (a debit-normal account, it goes as negative as payments) */
  payerClearing: 100,
  /** the merchant's takings in the asset: credited by payments, debited by refunds, fees and corrections */
  revenue: 200,
  /** network fees the facilitator paid to settle the merchant's payments, in the chain's native asset */
  gasExpense: 300,
  /** where that gas came from: the facilitator's settlement wallets */
  gasFunding: 310,
  /** what payment processors kept (Stripe's fee on each charge), in the payment's asset */
  processorFees: 320,
  /**
   * a payer's prepaid balance with the merchant (one account per payer and asset, its reference the payer): what the
   * merchant owes the payer in service, credited by top-ups, debited by what the payer's calls spend. A liability that
   * may not go below zero (debits_must_not_exceed_credits), so a hold or charge beyond it is refused.
   */
  prepaid: 400,
  /**
   * A payment channel's accounts (MPP `session`, one set per channel, its reference the channel id; see
   * {@link channelAccount}). Each figure is one account's balance: the escrow's holding (debit-normal, may not go
   * below zero: settled + refunded <= deposit), the payer's deposits, the vouchers accepted (debit-normal) against what
   * is still unspent of them (credit-normal, may not go below zero: spent <= accepted), what the merchant charged, what
   * the escrow paid out to the payee and what it gave back to the payer.
   */
  channelEscrow: 500,
  channelDeposit: 501,
  channelAccepted: 502,
  channelUnspent: 503,
  channelSpent: 504,
  channelSettled: 505,
  channelRefunded: 506,
} as const;
export type AccountRole = keyof typeof AccountCode;

/** Transfer codes (TigerBeetle's `code`: why the money moved). */
export const TransferCode = {
  payment: 1,
  refund: 2,
  fee: 3,
  gas: 4,
  /** a payment that funds a prepaid balance: moved from revenue (not earned yet) to the payer's balance */
  topUp: 5,
  /** what a metered call spent from a prepaid balance: earned, back to revenue (a hold, then its capture) */
  usage: 6,
  /** corrects an earlier transfer named in its `reference` (the transfer's id): its amount adds to that one's */
  correction: 9,
  /** a payment channel's deposit (open, top-up): escrow <- deposit */
  channelDeposit: 10,
  /** a voucher raised the channel's accepted cumulative: accepted <- unspent */
  channelVoucher: 11,
  /** the merchant charged delivered units against the channel: unspent <- spent */
  channelSpend: 12,
  /** the escrow paid the payee on chain (settle, or close): settled <- escrow */
  channelSettle: 13,
  /** the escrow gave the rest back to the payer when the channel closed: refunded <- escrow */
  channelRefund: 14,
} as const;
export type TransferKind = keyof typeof TransferCode;

/** A chain's native coin as an asset (CAIP-19 slip44:60 is ether): `eip155:8453/slip44:60`. */
export const nativeAsset = (network: string): string => `${network}/slip44:60`;

/** The id of the merchant's account in a role and asset: the same everywhere, so booking twice finds it again. */
export function chartAccountId(role: AccountRole, asset: string): LedgerId {
  return hashId(`account:${role}:${asset}`);
}

/**
 * The id of one booking step of a facilitator payment (`pending`, `post`, `void`, `late`, `gas`, `fee`): a redelivered
 * event books under the same ids, which the ledger answers with `exists`.
 */
export function paymentTransferId(paymentId: string, step: string): LedgerId {
  return hashId(`payment:${paymentId.toLowerCase()}:${step}`);
}

/** The merchant's account in a role and asset, as it is created: the same input every time, so a second create is `exists`. */
export function chartAccount(role: AccountRole, asset: string, normalBalance: NormalBalance): AccountInput {
  return { id: chartAccountId(role, asset), asset, code: AccountCode[role], flags: 0, normalBalance };
}

/** A payer's prepaid balance in an asset (payers as the API names them: lowercase 0x addresses, or the Stripe payer). */
export function prepaidAccountId(payer: string, asset: string): LedgerId {
  return hashId(`account:prepaid:${payer}:${asset}`);
}

/**
 * The transfer of one prepaid-balance operation under the merchant's own key: `top-up` (keyed by the funding payment's
 * reference, so one payment funds one top-up), `hold`, `capture`, `release` (keyed by the hold's id), `charge`; and
 * `subscription-usage`, the ledger's own draw of a subscription's usage charge (keyed by subscription, period,
 * component and draw attempt: never one of the merchant's charge ids).
 */
export function prepaidTransferId(step: 'top-up' | 'hold' | 'capture' | 'release' | 'charge' | 'subscription-usage', key: string): LedgerId {
  return hashId(`prepaid:${step}:${key}`);
}

/** The accounts of a payment channel, in the order {@link channelAccount} names them. */
export const CHANNEL_ACCOUNT_ROLES = [
  'channelEscrow',
  'channelDeposit',
  'channelAccepted',
  'channelUnspent',
  'channelSpent',
  'channelSettled',
  'channelRefunded',
] as const satisfies readonly AccountRole[];
export type ChannelAccountRole = (typeof CHANNEL_ACCOUNT_ROLES)[number];

/** Debit-normal channel accounts (their balance reads debits − credits); the rest are credit-normal. */
const DEBIT_NORMAL_CHANNEL_ROLES: ReadonlySet<ChannelAccountRole> = new Set(['channelEscrow', 'channelAccepted', 'channelSettled', 'channelRefunded']);

/** A payment channel's account in a role (channel ids are lowercase 0x bytes32, unique per escrow and chain). */
export function channelAccountId(channelId: string, role: ChannelAccountRole): LedgerId {
  return hashId(`account:channel:${channelId.toLowerCase()}:${role}`);
}

/**
 * A payment channel's account as it is created: the escrow may not pay out more than was deposited
 * (credits_must_not_exceed_debits) and the merchant may not charge more than the vouchers accepted
 * (debits_must_not_exceed_credits on the unspent account), both checked by the core under its locks.
 */
export function channelAccount(channelId: string, role: ChannelAccountRole, asset: string): AccountInput {
  const flags =
    role === 'channelEscrow' ? AccountFlag.credits_must_not_exceed_debits : role === 'channelUnspent' ? AccountFlag.debits_must_not_exceed_credits : 0;
  return {
    id: channelAccountId(channelId, role),
    asset,
    code: AccountCode[role],
    flags,
    normalBalance: DEBIT_NORMAL_CHANNEL_ROLES.has(role) ? 'debit' : 'credit',
    reference: channelId.toLowerCase(),
  };
}

/**
 * The transfer that moves one channel figure from `before` to a higher total (`deposit`, `accepted`, `spent`, `settled`,
 * `refunded`): keyed by the figure and where it starts, so that at most one transfer ever starts at one point of a
 * figure. A redelivered event books under the same id (`exists`); two events that disagree about the step from one
 * point cannot both be booked.
 */
export function channelTransferId(channelId: string, figure: string, before: bigint): LedgerId {
  return hashId(`channel:${channelId.toLowerCase()}:${figure}:${before}`);
}

/** A name-based UUID (version 8: the first 122 bits of a SHA-256, RFC 9562 §5.8). */
function hashId(name: string): LedgerId {
  const bytes = createHash('sha256').update(`mp-ledger:${name}`).digest().subarray(0, 16);
  bytes[6] = (bytes[6] & 0x0f) | 0x80;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}
