import { EventEmitter } from 'node:events';
import { Injectable } from '@nestjs/common';

/**
 * In-process news of payment state changes, so a /settle request waiting on a payment wakes the moment the
 * worker in the same process records an outcome. Requests whose worker runs elsewhere fall back to polling.
 */
@Injectable()
export class SettlementEvents {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  changed(paymentId: string): void {
    this.emitter.emit(paymentId);
  }

  /** Resolves on the next change of the payment, or after `ms`, whichever comes first. */
  next(paymentId: string, ms: number): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.emitter.off(paymentId, done);
        resolve();
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.emitter.once(paymentId, done);
    });
  }
}
