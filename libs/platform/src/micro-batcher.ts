interface Waiting<T, R> {
  item: T;
  key: string;
  resolve(value: R): void;
  reject(error: unknown): void;
}

/**
 * Coalesces work that concurrent callers submit: whatever arrives while a flush runs goes into the next one, so a
 * burst costs one transaction per flush rather than one per caller. At most `maxRunning` flushes run at once, and
 * items of one key are never in the same flush nor in two running ones (the later waits for the next flush). Each
 * caller gets its own item's outcome.
 */
export class MicroBatcher<T, R> {
  private waiting: Waiting<T, R>[] = [];
  private running = 0;
  private readonly busy = new Set<string>();

  constructor(
    private readonly keyOf: (item: T) => string,
    /** one outcome per item, in order */
    private readonly flush: (items: T[]) => Promise<PromiseSettledResult<R>[]>,
    private readonly limits: { maxRunning: number; maxBatch: number },
  ) {}

  submit(item: T): Promise<R> {
    return new Promise((resolve, reject) => {
      this.waiting.push({ item, key: this.keyOf(item), resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    while (this.running < this.limits.maxRunning && this.waiting.length) {
      const batch = this.take();
      if (!batch.length) return; // everything waiting has a key a running flush holds
      this.running++;
      for (const w of batch) this.busy.add(w.key);
      void this.run(batch).finally(() => {
        for (const w of batch) this.busy.delete(w.key);
        this.running--;
        this.pump();
      });
    }
  }

  private take(): Waiting<T, R>[] {
    const batch: Waiting<T, R>[] = [];
    const keys = new Set<string>();
    const later: Waiting<T, R>[] = [];
    for (const w of this.waiting) {
      if (batch.length < this.limits.maxBatch && !this.busy.has(w.key) && !keys.has(w.key)) {
        keys.add(w.key);
        batch.push(w);
      } else later.push(w);
    }
    this.waiting = later;
    return batch;
  }

  private async run(batch: Waiting<T, R>[]): Promise<void> {
    try {
      const outcomes = await this.flush(batch.map((w) => w.item));
      batch.forEach((w, i) => (outcomes[i].status === 'fulfilled' ? w.resolve(outcomes[i].value) : w.reject(outcomes[i].reason)));
    } catch (error) {
      for (const w of batch) w.reject(error);
    }
  }
}
