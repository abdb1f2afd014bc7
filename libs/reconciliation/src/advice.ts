import type { ReconRow } from './model';

/**
 * What an operator does about a row, in one sentence. Breaks are resolved by correcting transfers in the ledger
 * (never by editing a transfer); the next run then matches the correction and the break is gone.
 */
export function adviceFor(row: ReconRow): string {
  switch (row.kind) {
    case 'matched':
      return '';
    case 'pending':
      return row.ledger?.state === 'pending'
        ? 'the ledger transfer is still pending; it posts or voids on its own'
        : 'too recent to judge; the next run decides';
    case 'missing_in_ledger':
      return `book a ${row.entryKind} transfer of ${row.external!.amount} with reference ${row.reference}`;
    case 'missing_externally':
      return `check ${row.source} for ${row.ledger!.reference}; if it never happened, book a transfer reversing ${row.ledger!.id}`;
    case 'amount_mismatch':
      return `book a correcting ${row.entryKind} transfer of ${abs(row.difference!)} (${row.difference! > 0n ? 'more' : 'less'} than booked) with reference ${row.reference}`;
    case 'duplicate':
      return row.ledger
        ? `book a transfer reversing ${row.ledger.id}, which repeats ${row.duplicateOf}`
        : `${row.source} shows this ${row.entryKind} twice (also ${row.duplicateOf}): refund it, or book it if it was meant`;
  }
}

function abs(value: bigint): bigint {
  return value < 0n ? -value : value;
}
