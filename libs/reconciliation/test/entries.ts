import type { EntryKind, ExternalEntry, LedgerEntry, Period } from '../src/model';

export const MERCHANT = '00000000-0000-4000-8000-000000000001';
export const USDC = 'eip155:31337/0x5fbdb2315678afecb367f032d93f642f64180aa3';
export const USD = 'stripe/usd';
export const PERIOD: Period = { from: new Date('2026-11-01T00:00:00Z'), to: new Date('2026-11-02T00:00:00Z') };
/** Long after the period: nothing is young any more. */
export const LATER = new Date('2026-11-03T00:00:00Z');
export const WINDOW_MS = 10 * 60_000;

export function at(iso: string): Date {
  return new Date(`2026-11-01T${iso}Z`);
}

export function txHash(n: number): string {
  return `0x${n.toString(16).padStart(64, '0')}`;
}

export function chainLog(tx: number, logIndex: number, amount: bigint, time = '10:00:00', asset = USDC): ExternalEntry {
  return {
    source: 'chain',
    asset,
    reference: `${txHash(tx)}:${logIndex}`,
    container: txHash(tx),
    kind: 'payment',
    amount,
    occurredAt: at(time),
    details: { txHash: txHash(tx), logIndex: String(logIndex) },
  };
}

export function stripePayment(pi: string, amount: bigint, challengeId: string, time = '10:00:00'): ExternalEntry {
  return {
    source: 'stripe',
    asset: USD,
    reference: pi,
    aliases: [challengeId],
    kind: 'payment',
    amount,
    occurredAt: at(time),
    details: { challenge_id: challengeId },
  };
}

export function stripeRefund(re: string, pi: string, amount: bigint, time = '11:00:00'): ExternalEntry {
  return { source: 'stripe', asset: USD, reference: re, container: pi, kind: 'refund', amount, occurredAt: at(time), details: { payment_intent: pi } };
}

export function ledgerEntry(id: string, fields: Partial<LedgerEntry> & { reference: string; amount: bigint }): LedgerEntry {
  return { id, merchantId: MERCHANT, source: 'chain', asset: USDC, kind: 'payment' as EntryKind, state: 'posted', occurredAt: at('10:00:05'), ...fields };
}

/** The ledger entry that books an external entry exactly (same reference, amount and time, a few seconds later). */
export function bookedAs(id: string, entry: ExternalEntry, reference = entry.reference): LedgerEntry {
  return ledgerEntry(id, {
    source: entry.source,
    asset: entry.asset,
    kind: entry.kind,
    reference,
    amount: entry.amount,
    occurredAt: new Date(entry.occurredAt.getTime() + 5_000),
  });
}
