import { Injectable } from '@nestjs/common';
import type { NewPayment, SettlementRecord } from './chain-payments.repository';

/** Whether a payment handed over unclaimed (claimAndSend) was claimed with its transaction, known already, or not sent. */
export type SendingClaim = 'claimed' | 'lost' | 'unsent';

/** A settlement worker of this process, as /settle hands payments to it. */
export interface LocalRunner {
  /**
   * Takes a just-claimed payment to send it here; false when it cannot (the caller enqueues it instead). `alone`: no
   * other /settle of this process is on its way to a claim (none could join a batch window).
   */
  run(record: SettlementRecord, alone: boolean): boolean;
  /**
   * Takes a payment not claimed yet, to claim it together with its signed transaction (one write instead of the
   * claim's and the send's; a batch's payments share one). Resolves when the claim is decided: `unsent` when nothing
   * was written (the caller claims it as usual). Undefined when this worker would not send it so (the caller claims it).
   * `inWindow`: called when it joins a batch window, where it waits for the others, no longer on its way to a claim.
   */
  claimAndSend(payment: NewPayment & { id: string }, record: SettlementRecord, alone: boolean, inWindow: () => void): Promise<SendingClaim> | undefined;
}

/**
 * The hand-over from /settle to a settlement worker in the same process (FACILITATOR_ROLE=all), without the queue: the
 * claim is already durable in PostgreSQL, so the worker can send at once, from the record the claim wrote, instead of
 * the request waiting for a `submit` job to travel through Redis and be picked up. Nothing else changes: the send is
 * still recorded before its broadcast by a compare-and-set from `verified`, its outcome still comes from the receipt,
 * and a payment whose run in this process dies with it is found again by the recovery sweep and take-over (as one whose
 * job was lost). With no worker here (FACILITATOR_ROLE=api), or one that declines (busy, closing, the queue down), the
 * payment goes through the queue as before.
 *
 * A payment the worker can send from what /settle knows (a wallet free, a fresh estimate) is handed over before its
 * claim (claimAndSend): the worker signs its transaction, alone or with the others of its batch window, and claims the
 * payments together with it, in the one statement that records the transaction before its broadcast. The claim is
 * still unique per authorization (a batch's, all or none), and a claim that loses leaves the wallet's nonce unused, as
 * a lost compare-and-set does.
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
    return this.runner?.run(record, alone) ?? false;
  }

  /** A worker in this process claims and sends the payment (LocalRunner.claimAndSend); `unsent` when none did. */
  async claimAndSend(payment: NewPayment & { id: string }, record: SettlementRecord, alone: boolean, inWindow: () => void): Promise<SendingClaim> {
    return (await this.runner?.claimAndSend(payment, record, alone, inWindow)) ?? 'unsent';
  }
}
