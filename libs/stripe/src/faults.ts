/**
 * Faults a test injects into the fake, for the answers a Stripe client cannot trust: a request still running at Stripe
 * when the client gave up on it (its retry meets `409 idempotency_key_in_use`), and a request that ran (the charge
 * was made) but was answered with a 500.
 */

/** A request held before it runs, until the test lets it go. */
export interface HeldRequest {
  /** resolves once a matching request arrived and is being held */
  reached: Promise<void>;
  /** lets it run (its client may be long gone: the change is made all the same, as at Stripe) */
  release(): void;
}

export type Fault = { kind: 'hold'; wait: Promise<void>; arrived(): void } | { kind: 'server_error_after_running' };

interface Armed {
  method: string;
  path: string;
  remaining: number;
  make(): Fault;
}

export class Faults {
  private readonly armed: Armed[] = [];
  private readonly releases = new Set<() => void>();

  hold(method: string, path: string): HeldRequest {
    let arrived!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (arrived = resolve));
    const wait = new Promise<void>((resolve) => (release = resolve));
    const releaseOnce = () => {
      this.releases.delete(releaseOnce);
      release();
    };
    this.releases.add(releaseOnce);
    this.armed.push({ method, path, remaining: 1, make: () => ({ kind: 'hold', wait, arrived }) });
    return { reached, release: releaseOnce };
  }

  failAfterRunning(method: string, path: string, times: number): void {
    this.armed.push({ method, path, remaining: times, make: () => ({ kind: 'server_error_after_running' }) });
  }

  /** The fault for this request, if one is armed for it (used up in the order they were armed). */
  take(method: string, path: string): Fault | undefined {
    const index = this.armed.findIndex((a) => a.method === method && a.path === path);
    if (index < 0) return undefined;
    const armed = this.armed[index]!;
    if (--armed.remaining <= 0) this.armed.splice(index, 1);
    return armed.make();
  }

  /** On stop: held requests run, so no connection is left hanging. */
  releaseAll(): void {
    for (const release of [...this.releases]) release();
  }
}
