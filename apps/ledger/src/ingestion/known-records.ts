/**
 * A bounded set of keys this process has seen written: the oldest key is forgotten when it is full. Forgetting
 * only costs one more idempotent write, so the bound keeps memory flat whatever the number of merchants and assets.
 */
export class KnownRecords {
  private readonly keys = new Set<string>();

  constructor(private readonly max: number) {}

  has(key: string): boolean {
    return this.keys.has(key);
  }

  add(key: string): void {
    if (this.keys.has(key)) return;
    if (this.keys.size >= this.max) this.keys.delete(this.keys.values().next().value!);
    this.keys.add(key);
  }
}
