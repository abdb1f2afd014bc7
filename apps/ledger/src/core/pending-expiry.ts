import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { ExpiryStore } from './expiry.store';

const ROUND = 500;

/**
 * Releases expired reservations every PENDING_EXPIRY_INTERVAL_MS, a round of up to 500 at a time until none are
 * due. Safe on every replica at once (the release is decided under the account locks); a release can lag its
 * expiry by up to the interval, never precede it.
 */
@Injectable()
export class PendingExpiry implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger(PendingExpiry.name);
  private timer?: NodeJS.Timeout;
  private running?: Promise<void>;

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly store: ExpiryStore,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.pendingExpiryIntervalMs <= 0) return;
    this.timer = setInterval(() => void this.sweep(), this.config.pendingExpiryIntervalMs);
    this.timer.unref();
  }

  /** Stops sweeping, and lets a sweep under way finish while the write pool is still open. */
  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running;
  }

  /** One sweep (skipped while the previous one runs); returns how many reservations it released. */
  async sweep(): Promise<number> {
    if (this.running) return 0;
    let released = 0;
    this.running = (async () => {
      try {
        for (;;) {
          const n = await this.store.releaseDue(ROUND);
          released += n;
          if (n < ROUND) break;
        }
      } catch (error) {
        this.logger.warn(`releasing expired pending transfers failed (next try in ${this.config.pendingExpiryIntervalMs} ms): ${(error as Error).message}`);
      }
    })();
    await this.running;
    this.running = undefined;
    return released;
  }
}
