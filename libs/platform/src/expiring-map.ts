/**
 * A map whose entries lapse `ttlMs` after they were set (0 or less: nothing is kept), cleared whole once it holds
 * `maxSize`: the short caches that trust a read for API_KEY_CACHE_MS (API keys, MPP secrets, allowed receiving
 * addresses), so a change made elsewhere takes effect within that time on every replica.
 */
export class ExpiringMap<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxSize = 10_000,
  ) {}

  /** The value, while it has not lapsed. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until > Date.now()) return entry.value;
    this.entries.delete(key);
    return undefined;
  }

  set(key: K, value: V): void {
    if (this.ttlMs <= 0) return;
    if (this.entries.size >= this.maxSize) this.entries.clear();
    this.entries.set(key, { value, until: Date.now() + this.ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
