import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { Logger, type OnModuleDestroy } from '@nestjs/common';
import { type Job, UnrecoverableError } from 'bullmq';
import { MAX_ACKS_PER_MESSAGE, PAYMENT_EVENTS_ACKS_QUEUE, type PaymentEventsAckMessage } from '@mp/clients';
import { PrismaService } from '@mp/db';
import { closeWorker } from '@mp/platform';

// up to 18 digits: always a bigint, so a malformed id cannot fail the UPDATE and be retried
const EVENT_ID = /^[1-9][0-9]{0,17}$/;

/**
 * Records the ledger's acknowledgements (`payment-events-acks`, worker role with OUTBOX_PUBLISH): an acknowledged
 * payment event is done, and the relay never publishes it again. Idempotent: an event acknowledged twice keeps its
 * first time. A malformed message fails for good (it stays in the queue's failed set); a database error fails the
 * attempt and BullMQ retries it as the ledger's job options say; an acknowledgement lost for good only means the
 * event is published once more.
 */
@Processor(PAYMENT_EVENTS_ACKS_QUEUE, { concurrency: 4 })
export class OutboxAcks extends WorkerHost implements OnModuleDestroy {
  private readonly logger = new Logger('OutboxAcks');

  constructor(private readonly db: PrismaService) {
    super();
  }

  /** Before the database closes: no acknowledgement is taken that could not be recorded. */
  async onModuleDestroy(): Promise<void> {
    await closeWorker(this.worker);
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job<unknown, number> | undefined, error: Error): void {
    this.logger.warn(`payment event acknowledgement job ${job?.id} failed (attempt ${job?.attemptsMade}): ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  /** Returns how many events this message acknowledged for the first time. */
  process(job: Job<unknown, number>): Promise<number> {
    return this.acknowledge(parseAck(job.data).eventIds);
  }

  acknowledge(eventIds: string[]): Promise<number> {
    return this.db.$executeRawUnsafe(
      `UPDATE facilitator.payment_events SET acknowledged_at = now() WHERE id = ANY($1::bigint[]) AND acknowledged_at IS NULL`,
      eventIds,
    );
  }
}

/** The job's data as an acknowledgement, or an UnrecoverableError naming what is wrong (retrying cannot fix it). */
export function parseAck(data: unknown): PaymentEventsAckMessage {
  const eventIds = (data as Partial<PaymentEventsAckMessage> | null)?.eventIds;
  if (!Array.isArray(eventIds) || eventIds.length === 0 || eventIds.length > MAX_ACKS_PER_MESSAGE) {
    throw new UnrecoverableError(`malformed acknowledgement: eventIds must be an array of 1 to ${MAX_ACKS_PER_MESSAGE} event ids`);
  }
  const bad = eventIds.find((id) => typeof id !== 'string' || !EVENT_ID.test(id));
  if (bad !== undefined) throw new UnrecoverableError(`malformed acknowledgement: ${JSON.stringify(bad)} is not an event id`);
  return { eventIds };
}
