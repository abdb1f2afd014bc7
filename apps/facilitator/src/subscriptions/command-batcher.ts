/**
 * Gathers the items that arrive within `windowMs` of the first (at most `max`) and runs them together; each caller
 * gets its own answer, or its own error. Hand-written: BullMQ (open source) hands a worker one job at a time, and
 * renewals due at once are cheapest charged in one batch (subscription-commands.worker.ts).
 */
export class CommandBatcher<T, R> {
  private pending: { item: T; resolve: (result: R) => void; reject: (error: Error) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly run: (items: T[]) => Promise<(R | Error)[]>,
    private readonly options: { max: number; windowMs: number },
  ) {}

  add(item: T): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      this.pending.push({ item, resolve, reject });
      if (this.pending.length >= this.options.max) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.options.windowMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    this.run(batch.map((b) => b.item)).then(
      (results) =>
        batch.forEach((b, i) => {
          const result = results[i];
          if (result instanceof Error) b.reject(result);
          else if (result === undefined) b.reject(new Error('the batch gave no answer for this item'));
          else b.resolve(result);
        }),
      (error: unknown) => batch.forEach((b) => b.reject(error instanceof Error ? error : new Error(String(error)))),
    );
  }
}
