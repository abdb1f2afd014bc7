import { Injectable } from '@nestjs/common';

/**
 * Wakes a metered stream waiting for a voucher as soon as this process has relayed one for its channel. Only a
 * shortcut: a stream also asks the facilitator again every VOUCHER_POLL_MS, so a voucher relayed by another instance
 * is seen too.
 */
@Injectable()
export class VoucherSignals {
  private readonly waiting = new Map<string, Set<() => void>>();

  /** Resolves when a voucher for `channelId` is relayed here, or after `ms`. */
  wait(channelId: string, ms: number): Promise<void> {
    const key = channelId.toLowerCase();
    return new Promise((resolve) => {
      const waiters = this.waiting.get(key) ?? new Set<() => void>();
      this.waiting.set(key, waiters);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(done);
        if (waiters.size === 0) this.waiting.delete(key);
        resolve();
      };
      const timer = setTimeout(done, ms);
      waiters.add(done);
    });
  }

  signal(channelId: string): void {
    for (const wake of [...(this.waiting.get(channelId.toLowerCase()) ?? [])]) wake();
  }
}
