import type { BalanceChecks, ExternalEntry, LedgerEntry, Period, ReconReport, ReconRow, RowKind } from './model';
import { applyCorrections } from './corrections';
import { overRefunds } from './over-refunds';
import { summarize, totalsOf } from './totals';

export interface ReconcileInput {
  /** the ledger's entries of the period, plus those a little before and after it (see below) */
  ledger: LedgerEntry[];
  /** the external entries of the period, plus those a little before and after it */
  external: ExternalEntry[];
  period: Period;
  /**
   * How long the two sides may lag each other. An entry without a counterpart that is younger than this is pending,
   * not a break. Give both sides' entries from `period.from − window` to `period.to + window`, so that a movement
   * booked just across a period boundary still finds its counterpart.
   */
  pendingWindowMs: number;
  now: Date;
  /** the balance checks' breaks (balances.ts) and what they covered: state as of the run, so kept whatever their time */
  balanceChecks?: { rows: ReconRow[]; checked: BalanceChecks };
}

/** How strongly an external entry is named by a ledger reference. */
enum Strength {
  reference = 3,
  alias = 2,
  container = 1,
}
const STRENGTHS = [Strength.reference, Strength.alias, Strength.container];

interface Candidate {
  entry: ExternalEntry;
  strength: Strength;
}

/**
 * Pairs ledger entries (as corrected by their correcting entries) with external entries and classifies every entry
 * exactly once:
 * - a pair is `matched` (same amount), `amount_mismatch`, or `pending` when the ledger entry is still pending;
 * - a ledger entry without a pair is a `duplicate` when it names a movement another ledger entry already took, or
 *   repeats an earlier entry's reference and amount; else `pending` while young or pending, else `missing_externally`;
 * - an external entry without a pair is a `duplicate` when it shares a unique id with an external entry that has a pair
 *   (two PaymentIntents of one challenge: charged twice); else `pending` while young, else `missing_in_ledger`.
 * Pairs are only made within one source, asset and kind. Exact references pair before aliases, aliases before
 * containers, and under each, equal amounts before unequal ones. A row belongs to the period of its ledger entry's time (of the
 * external entry's when it has none); rows of other periods are left out. The result is sorted and deterministic.
 * On top of those, one `over_refund` row per payment whose booked refunds exceed what it captured (over-refunds.ts).
 */
export function reconcile(input: ReconcileInput): ReconReport {
  const groups = new Map<string, { ledger: LedgerEntry[]; external: ExternalEntry[] }>();
  const groupOf = (e: { source: string; asset: string; kind: string }) => {
    const key = `${e.source}|${e.asset}|${e.kind}`;
    let group = groups.get(key);
    if (!group) groups.set(key, (group = { ledger: [], external: [] }));
    return group;
  };
  const corrected = applyCorrections(input.ledger);
  for (const entry of corrected.entries) groupOf(entry).ledger.push(entry);
  for (const entry of input.external) groupOf(entry).external.push(entry);

  const inPeriod = (at: Date) => at >= input.period.from && at < input.period.to;
  const paired = [...groups.values()].flatMap((group) => reconcileGroup(group.ledger, group.external, input));
  const rows = [
    ...[...paired, ...overRefunds(paired)]
      .filter((row) => inPeriod(row.occurredAt))
      .map((row) => (row.ledger && corrected.correctionsOf.has(row.ledger.id) ? { ...row, corrections: corrected.correctionsOf.get(row.ledger.id)! } : row)),
    ...(input.balanceChecks?.rows ?? []),
  ].sort(compareRows);
  const corrections = [...corrected.entries, ...corrected.reversed]
    .filter((e) => inPeriod(e.occurredAt))
    .reduce((n, e) => n + (corrected.correctionsOf.get(e.id)?.length ?? 0), 0);
  const summary = summarize(rows, input.period, input.now, {
    ledger: rows.filter((r) => r.ledger).length,
    external: rows.filter((r) => r.external).length,
    corrections,
  });
  return { rows, totals: totalsOf(rows), summary: input.balanceChecks ? { ...summary, checked: input.balanceChecks.checked } : summary };
}

function reconcileGroup(ledgerEntries: LedgerEntry[], externalEntries: ExternalEntry[], input: ReconcileInput): ReconRow[] {
  const ledger = [...ledgerEntries].sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || compareText(a.id, b.id));
  const external = [...externalEntries].sort((a, b) => a.occurredAt.getTime() - b.occurredAt.getTime() || compareText(a.reference, b.reference));
  const byName = indexByName(external);
  const pairOf = new Map<LedgerEntry, ExternalEntry>();
  const claimed = new Set<ExternalEntry>();

  // The strongest name wins even against an equal amount under a weaker name: an exact reference is evidence.
  for (const strength of STRENGTHS) {
    for (const sameAmount of [true, false]) {
      for (const entry of ledger) {
        if (pairOf.has(entry)) continue;
        const found = (byName.get(entry.reference) ?? []).find(
          (c) => c.strength === strength && !claimed.has(c.entry) && (!sameAmount || c.entry.amount === entry.amount),
        );
        if (!found) continue;
        pairOf.set(entry, found.entry);
        claimed.add(found.entry);
      }
    }
  }

  const young = (at: Date) => input.now.getTime() - at.getTime() < input.pendingWindowMs;
  const rows: ReconRow[] = [];
  const seen = new Map<string, LedgerEntry>();
  for (const entry of ledger) {
    const external = pairOf.get(entry);
    if (external) {
      const kind: RowKind = entry.state === 'pending' ? 'pending' : external.amount === entry.amount ? 'matched' : 'amount_mismatch';
      rows.push(row(kind, entry, external, kind === 'amount_mismatch' ? { difference: external.amount - entry.amount } : {}));
    } else {
      const original = takenBy(entry, byName, claimed, pairOf) ?? seen.get(sameBooking(entry));
      if (original) rows.push(row('duplicate', entry, undefined, { duplicateOf: original.id }));
      else rows.push(row(entry.state === 'pending' || young(entry.occurredAt) ? 'pending' : 'missing_externally', entry, undefined));
    }
    if (!seen.has(sameBooking(entry))) seen.set(sameBooking(entry), entry);
  }

  const pairedByName = new Map<string, ExternalEntry>();
  for (const entry of claimed) for (const name of uniqueNames(entry)) pairedByName.set(name, entry);
  for (const entry of external) {
    if (claimed.has(entry)) continue;
    const twin = uniqueNames(entry)
      .map((name) => pairedByName.get(name))
      .find((other) => other !== undefined);
    if (twin) rows.push(row('duplicate', undefined, entry, { duplicateOf: twin.reference }));
    else rows.push(row(young(entry.occurredAt) ? 'pending' : 'missing_in_ledger', undefined, entry));
  }
  return rows;
}

/** Every external entry under each name a ledger reference may use for it. */
function indexByName(external: ExternalEntry[]): Map<string, Candidate[]> {
  const byName = new Map<string, Candidate[]>();
  const add = (name: string | undefined, candidate: Candidate) => {
    if (name === undefined) return;
    const list = byName.get(name);
    if (list) list.push(candidate);
    else byName.set(name, [candidate]);
  };
  for (const entry of external) {
    add(entry.reference, { entry, strength: Strength.reference });
    for (const alias of entry.aliases ?? []) add(alias, { entry, strength: Strength.alias });
    add(entry.container, { entry, strength: Strength.container });
  }
  return byName;
}

/** Two ledger entries of one group with the same reference and amount book the same movement. */
function sameBooking(entry: LedgerEntry): string {
  return `${entry.reference}|${entry.amount}`;
}

function uniqueNames(entry: ExternalEntry): string[] {
  return [entry.reference, ...(entry.aliases ?? [])];
}

/** The ledger entry that took the external movement this entry names by a unique id, if another did. */
function takenBy(
  entry: LedgerEntry,
  byName: Map<string, Candidate[]>,
  claimed: Set<ExternalEntry>,
  pairOf: Map<LedgerEntry, ExternalEntry>,
): LedgerEntry | undefined {
  const unique = (byName.get(entry.reference) ?? []).find((c) => c.strength !== Strength.container && claimed.has(c.entry));
  if (!unique) return undefined;
  for (const [other, external] of pairOf) if (external === unique.entry) return other;
  return undefined;
}

function row(
  kind: RowKind,
  ledger: LedgerEntry | undefined,
  external: ExternalEntry | undefined,
  extra: Pick<ReconRow, 'difference' | 'duplicateOf'> = {},
): ReconRow {
  const any = (ledger ?? external)!;
  return {
    key: [kind, any.source, any.asset, any.kind, ledger?.id ?? '-', external?.reference ?? '-'].join('|'),
    kind,
    source: any.source,
    asset: any.asset,
    entryKind: any.kind,
    reference: external?.reference ?? ledger!.reference,
    occurredAt: ledger?.occurredAt ?? external!.occurredAt,
    ...(ledger && { ledger }),
    ...(external && { external }),
    ...extra,
  };
}

function compareRows(a: ReconRow, b: ReconRow): number {
  return (
    a.occurredAt.getTime() - b.occurredAt.getTime() ||
    compareText(a.source, b.source) ||
    compareText(a.asset, b.asset) ||
    compareText(a.entryKind, b.entryKind) ||
    compareText(a.reference, b.reference) ||
    compareText(a.key, b.key)
  );
}

function compareText(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
