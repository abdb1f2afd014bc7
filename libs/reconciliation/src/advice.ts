import type { ReconRow } from './model';

/**
 * What an operator does about a row, in one sentence (amounts in atomic units unless `amount` formats them). Breaks are resolved by transfers in
 * the ledger, never by editing one: a new booking, or a correcting transfer naming the entry it corrects; the next
 * run folds it in and the break is gone.
 */
export function adviceFor(row: ReconRow, amount: (value: bigint) => string = String): string {
  switch (row.kind) {
    case 'matched':
      return '';
    case 'pending':
      return row.ledger?.state === 'pending'
        ? 'the ledger transfer is still pending; it posts or voids on its own'
        : 'too recent to judge; the next run decides';
    case 'missing_in_ledger':
      return `book a ${row.entryKind} transfer of ${amount(row.external!.amount)} with reference ${row.reference}`;
    case 'missing_externally':
      return `check ${row.source} for ${row.ledger!.reference}; if it never happened, reverse ${row.ledger!.id} with a correcting transfer`;
    case 'amount_mismatch':
      return `correct ${row.ledger!.id} by ${row.difference! > 0n ? '+' : '-'}${amount(abs(row.difference!))} with a correcting transfer (${row.source} shows ${amount(row.external!.amount)})`;
    case 'duplicate':
      return row.ledger
        ? `reverse ${row.ledger.id} with a correcting transfer: it repeats ${row.duplicateOf}`
        : `${row.source} shows this ${row.entryKind} twice (also ${row.duplicateOf}): refund it, or book it if it was meant`;
    case 'channel_deposit_mismatch':
    case 'channel_settled_mismatch':
    case 'channel_claimed_mismatch':
    case 'channel_refunded_mismatch':
      return `the escrow shows ${row.details?.figure} ${amount(row.actual!)} for channel ${row.reference}, the books ${amount(row.expected!)}: book the missing channel event (or correct the channel's ${row.details?.figure} by ${signedAmount(row.difference!, amount)})`;
    case 'channel_not_finalized':
      return `the books closed channel ${row.reference} but the escrow has not finalized it: check the close transaction, and reverse the refund booked if it never happened`;
    case 'channel_closed_on_chain_not_in_books':
      return `the escrow finalized channel ${row.reference}: book its close (channel.closed) and what it refunded`;
    case 'channel_not_on_chain':
      return `the escrow has no channel ${row.reference}: check its network and escrow, and reverse its bookings if it was never opened`;
    case 'channel_unknown_to_books':
      return `channel ${row.reference} to ${row.details?.payee} holds ${amount(row.actual!)} on the escrow and is not in the books: book its events (from channel.opened)`;
    case 'prepaid_funding_missing':
      return `top-up ${row.details?.topUp} credits ${amount(row.expected!)} to ${row.details?.payer} from payment ${row.reference}, which is not a confirmed payment in the books: book the payment, or reverse the top-up`;
    case 'prepaid_funding_mismatch':
      if (row.details?.paidBy)
        return `top-up ${row.details.topUp} credits ${row.details.payer} with payment ${row.reference}, which ${row.details.paidBy} made: reverse it, and credit the payer who paid`;
      return `top-up ${row.details?.topUp} credits ${amount(row.expected!)} but payment ${row.reference} paid ${amount(row.actual!)}: correct the top-up by ${signedAmount(row.difference!, amount)}`;
    case 'prepaid_balance_mismatch':
      return `the prepaid balance of ${row.reference} is stored as ${amount(row.actual!)} but its transfers add up to ${amount(row.expected!)}: find what changed the account outside its transfers`;
    case 'prepaid_negative':
      return `the prepaid balance of ${row.reference} is below zero (${amount(row.actual!)} after holds): top it up or reverse the draws beyond it`;
    case 'over_refund':
      return `the ledger refunds ${amount(row.refunded!)} of ${row.reference}, which captured ${amount(row.captured!)}: find which of ${row.refunds!.join(', ')} gives back too much and correct it by -${amount(row.refunded! - row.captured!)}`;
  }
}

function signedAmount(value: bigint, amount: (value: bigint) => string): string {
  return `${value > 0n ? '+' : '-'}${amount(abs(value))}`;
}

function abs(value: bigint): bigint {
  return value < 0n ? -value : value;
}
