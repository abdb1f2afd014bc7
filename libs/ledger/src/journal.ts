/**
 * An undo log: every change to a batch's working state registers how to take it back, so a linked chain that
 * fails halfway is rolled back exactly, without copying the state for every chain.
 */
export class Journal {
  private readonly undo: (() => void)[] = [];

  record(undo: () => void): void {
    this.undo.push(undo);
  }

  mark(): number {
    return this.undo.length;
  }

  rollback(to: number): void {
    while (this.undo.length > to) this.undo.pop()!();
  }

  /** A chain committed: its undo steps are no longer needed. */
  forget(): void {
    this.undo.length = 0;
  }
}

/** Sets a map entry and records how to restore what was there. */
export function journaledSet<K, V>(journal: Journal, map: Map<K, V>, key: K, value: V): void {
  const had = map.has(key);
  const previous = map.get(key);
  map.set(key, value);
  journal.record(() => (had ? map.set(key, previous as V) : map.delete(key)));
}
