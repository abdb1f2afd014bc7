import { Injectable } from '@nestjs/common';
import type { SettlementRecord } from './chain-payments.repository';

/**
 * Takes a just-claimed payment to send it in this process; false when it cannot (the caller enqueues it instead).
 * `alone`: no other /settle of this process is on its way to a claim (none could join a batch window).
 */
export type LocalRunner = (record: SettlementRecord, alone: boolean) => boolean;

/**
 * The hand-over from /settle to a settlement worker in the same process (FACILITATOR_ROLE=all), without the queue: the
 * claim is already durable in PostgreSQL, so the worker can send at once, from the record the claim wrote, instead of
 * the request waiting for a `submit` job to travel through Redis and be picked up. Nothing else changes: the send is
 * still recorded before its broadcast by a compare-and-set from `verified`, its outcome still comes from the receipt,
 * and a payment whose run in this process dies with it is found again by the recovery sweep and take-over (as one whose
 * job was lost). With no worker here (FACILITATOR_ROLE=api), or one that declines (busy, closing, the queue down), the
 * payment goes through the queue as before.
 */
@Injectable()
export class LocalSettlement {
  private runner: LocalRunner | undefined;

  attach(runner: LocalRunner): void {
    this.runner = runner;
  }

  detach(): void {
    this.runner = undefined;
  }

  /** Whether a worker in this process took the payment. */
  run(record: SettlementRecord, alone: boolean): boolean {
    return this.runner?.(record, alone) ?? false;
  }
}
