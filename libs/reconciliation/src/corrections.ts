import type { LedgerEntry } from './model';

export interface CorrectedLedger {
  /** every corrected entry with its net amount; fully reversed entries left out */
  entries: LedgerEntry[];
  /** ids of the corrections folded into each entry, by the entry's id */
  correctionsOf: Map<string, string[]>;
  /** entries whose corrections reverse them completely */
  reversed: LedgerEntry[];
}

/**
 * Folds correcting entries into the entries they correct (following corrections of corrections), so that a break
 * resolved by a correcting transfer reconciles as the net amount. A correction whose entry is not given belongs to
 * that entry's period and is left out here.
 */
export function applyCorrections(ledger: LedgerEntry[]): CorrectedLedger {
  const byId = new Map(ledger.map((e) => [e.id, e]));
  const rootOf = (entry: LedgerEntry): LedgerEntry | undefined => {
    const seen = new Set<string>();
    let at: LedgerEntry | undefined = entry;
    while (at?.corrects !== undefined) {
      if (seen.has(at.id)) return undefined;
      seen.add(at.id);
      at = byId.get(at.corrects);
    }
    return at;
  };
  const net = new Map<string, bigint>();
  const correctionsOf = new Map<string, string[]>();
  for (const entry of ledger) {
    if (entry.corrects === undefined) continue;
    const root = rootOf(entry);
    if (!root) continue;
    net.set(root.id, (net.get(root.id) ?? root.amount) + entry.amount);
    correctionsOf.set(root.id, [...(correctionsOf.get(root.id) ?? []), entry.id].sort());
  }
  const entries: LedgerEntry[] = [];
  const reversed: LedgerEntry[] = [];
  for (const entry of ledger) {
    if (entry.corrects !== undefined) continue;
    const amount = net.get(entry.id);
    if (amount === undefined) entries.push(entry);
    else if (amount === 0n) reversed.push(entry);
    else entries.push({ ...entry, amount });
  }
  return { entries, correctionsOf, reversed };
}
