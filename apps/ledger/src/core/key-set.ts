/** (merchant, id) pairs without repeats, handed to SQL as two parallel uuid[] parameters for unnest. */
export class KeySet {
  private readonly merchants: string[] = [];
  private readonly ids: string[] = [];
  private readonly seen = new Set<string>();

  add(merchantId: string, id: string | undefined): void {
    if (!id) return;
    const key = `${merchantId}/${id}`;
    if (this.seen.has(key)) return;
    this.seen.add(key);
    this.merchants.push(merchantId);
    this.ids.push(id);
  }

  get size(): number {
    return this.ids.length;
  }

  /** [merchantIds, ids] */
  columns(): [string[], string[]] {
    return [this.merchants, this.ids];
  }
}

export const scoped = (merchantId: string, id: string) => `${merchantId}/${id}`;
