import type { Logger } from '@nestjs/common';
import type { DefaultJobOptions, Queue } from 'bullmq';
import { MAX_ACKS_PER_MESSAGE, type PaymentEventsAckMessage } from '@mp/clients';

/** How long an acknowledgement waits for others to share its message. */
const FLUSH_MS = 100;
/** After a failed send (Redis away), the next try. */
const RETRY_MS = 1_000;
/** Acknowledgements kept while Redis is away; beyond that they are dropped and the facilitator publishes those events again. */
const MAX_PENDING = 100_000;
const EVENT_ID = /^[1-9][0-9]{0,17}$/;

/** The `payment-events-acks` queue's job options: a message the facilitator does not take at once is retried with backoff. */
export const PAYMENT_EVENT_ACK_JOB_OPTIONS = {
  removeOnComplete: true,
  removeOnFail: 1_000,
  attempts: 10,
  backoff: { type: 'exponential', delay: 1_000 },
} satisfies DefaultJobOptions;

/**
 * Tells the facilitator which payment events the ledger has booked (or found nothing to book in), batched: up to
 * MAX_ACKS_PER_MESSAGE ids per job on `payment-events-acks`, sent FLUSH_MS after the first. An acknowledgement lost
 * (the process stops first, Redis forgets it) costs one more delivery of the event, which books nothing new.
 */
export class PaymentEventAcks {
  private readonly pending = new Set<string>();
  private timer?: NodeJS.Timeout;
  private sending: Promise<void> = Promise.resolve();
  private lastWarning = 0;

  constructor(
    private readonly queue: Queue<PaymentEventsAckMessage>,
    private readonly logger: Logger,
  ) {}

  acknowledge(eventId: string): void {
    // not an outbox row's id (a job someone added by hand): nothing to acknowledge
    if (!EVENT_ID.test(eventId) || this.pending.size >= MAX_PENDING) return;
    this.pending.add(eventId);
    if (this.pending.size >= MAX_ACKS_PER_MESSAGE) void this.flush();
    else this.timer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
  }

  /** Sends every pending acknowledgement; resolves when they are sent or put back for a later try. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.sending = this.sending.then(() => this.send());
    return this.sending;
  }

  private async send(): Promise<void> {
    while (this.pending.size > 0) {
      const eventIds = [...this.pending].slice(0, MAX_ACKS_PER_MESSAGE);
      for (const id of eventIds) this.pending.delete(id);
      try {
        await this.queue.add('ack', { eventIds });
      } catch (error) {
        for (const id of eventIds) if (this.pending.size < MAX_PENDING) this.pending.add(id);
        this.warn(`payment event acknowledgements not sent yet (retrying): ${(error as Error).message}`);
        this.timer ??= setTimeout(() => void this.flush(), RETRY_MS).unref();
        return;
      }
    }
  }

  /** Stops retrying: what is still pending is published again by the facilitator. */
  stop(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }

  private warn(message: string): void {
    const now = Date.now();
    if (now - this.lastWarning < 60_000) return;
    this.lastWarning = now;
    this.logger.warn(message);
  }
}
