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
    case 'over_refund':
      return `the ledger refunds ${amount(row.refunded!)} of ${row.reference}, which captured ${amount(row.captured!)}: find which of ${row.refunds!.join(', ')} gives back too much and correct it by -${amount(row.refunded! - row.captured!)}`;
  }
}

function abs(value: bigint): bigint {
  return value < 0n ? -value : value;
}
