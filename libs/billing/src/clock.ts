/** Where billing code reads the time, so tests can move through periods without sleeping. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

/** A clock that stands still until a test sets or advances it. */
export class ManualClock implements Clock {
  private currentMs: number;

  constructor(start: Date) {
    this.currentMs = validMs(start);
  }

  now(): Date {
    return new Date(this.currentMs);
  }

  set(t: Date): void {
    this.currentMs = validMs(t);
  }

  /** Moves forward by ms (never back: use set for that, so a test that rewinds says so). */
  advance(ms: number): Date {
    if (!Number.isSafeInteger(ms) || ms < 0) throw new RangeError(`advance takes a non-negative whole number of milliseconds, got ${ms}`);
    this.currentMs = validMs(new Date(this.currentMs + ms));
    return this.now();
  }
}

function validMs(t: Date): number {
  const ms = t.getTime();
  if (Number.isNaN(ms)) throw new RangeError('the clock needs a valid Date');
  return ms;
}
