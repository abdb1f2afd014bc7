import { EventEmitter } from 'node:events';
import { Injectable } from '@nestjs/common';
import type { PaymentRecord } from './payment-record';

/**
 * In-process news of payment state changes, so a /settle request waiting on a payment wakes the moment the
 * worker in the same process records an outcome. Requests whose worker runs elsewhere fall back to polling.
 */
@Injectable()
export class SettlementEvents {
  private readonly emitter = new EventEmitter().setMaxListeners(0);

  /**
   * `record`: the payment as the change just wrote it, when the worker knows it (its own compare-and-set moved it
   * there), so a waiting request need not read it back.
   */
  changed(paymentId: string, record?: PaymentRecord): void {
    this.emitter.emit(paymentId, record);
  }

  /** Resolves on the next change of the payment (with the record, if the change carried it), or after `ms`, whichever comes first. */
  next(paymentId: string, ms: number): Promise<PaymentRecord | undefined> {
    return new Promise((resolve) => {
      const done = (record?: PaymentRecord) => {
        clearTimeout(timer);
        this.emitter.off(paymentId, done);
        resolve(record);
      };
      const timer = setTimeout(done, Math.max(0, ms));
      this.emitter.once(paymentId, done);
    });
  }
}
