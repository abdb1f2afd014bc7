import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { type Job, Queue, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { PAYMENT_EVENTS_ACKS_QUEUE, PAYMENT_EVENTS_QUEUE, parsePaymentEventMessage, type PaymentEventMessage, type PaymentEventsAckMessage } from '@mp/clients';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { INGESTION_QUEUE_STATES, LedgerMetrics } from '../ledger.metrics';
import { PaymentEventAcks } from './payment-event-acks';
import { BookingRefusedError, PaymentIngestion } from './payment-ingestion.service';

/**
 * Consumes the facilitator's `payment-events` queue (LEDGER_INGEST). A job that fails on a passing problem (the
 * database away) is retried with backoff by BullMQ; one the ledger refuses stays in the failed set, with the
 * reason, for an operator (`npm run ledger:replay` moves it back to waiting); so does a job that breaks the
 * payment-events contract (a malformed job: no retry can mend it). Every event booked or skipped is
 * acknowledged to the facilitator (`payment-events-acks`), which publishes again what stays unacknowledged.
 */
@Injectable()
export class PaymentEventsConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Ingestion');
  private connection?: Redis;
  private worker?: Worker<PaymentEventMessage>;
  private queue?: Queue<PaymentEventMessage>;
  private acksQueue?: Queue<PaymentEventsAckMessage>;
  private acks?: PaymentEventAcks;
  private stopCollecting?: () => void;

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly ingestion: PaymentIngestion,
    private readonly metrics: LedgerMetrics,
  ) {}

  onApplicationBootstrap(): void {
    if (!this.config.ingest) return;
    this.connection = new Redis(this.config.redisUrl, { maxRetriesPerRequest: null });
    this.connection.on('error', (error: Error) => this.logger.debug(`redis: ${error.message}`));
    this.worker = new Worker(PAYMENT_EVENTS_QUEUE, (job) => this.process(job), {
      connection: this.connection,
      prefix: this.config.queuePrefix,
      concurrency: this.config.ingestConcurrency,
    });
    this.worker.on('failed', (job, error) => this.logger.warn(`payment event ${job?.data?.eventId} (${job?.data?.type} of ${job?.data?.paymentId}) failed: ${error.message}`));
    this.worker.on('error', (error) => this.logger.debug(`worker: ${error.message}`));
    this.queue = new Queue(PAYMENT_EVENTS_QUEUE, { connection: this.connection, prefix: this.config.queuePrefix });
    this.queue.on('error', (error: Error) => this.logger.debug(`queue: ${error.message}`));
    this.acksQueue = new Queue(PAYMENT_EVENTS_ACKS_QUEUE, {
      connection: this.connection,
      prefix: this.config.queuePrefix,
      defaultJobOptions: { removeOnComplete: true, removeOnFail: 1_000, attempts: 10, backoff: { type: 'exponential', delay: 1_000 } },
    });
    this.acksQueue.on('error', (error: Error) => this.logger.debug(`acknowledgements queue: ${error.message}`));
    this.acks = new PaymentEventAcks(this.acksQueue, this.logger);
    this.stopCollecting = this.metrics.metrics.onCollect('ingestion_queue', async () => {
      const counts = await this.queue!.getJobCounts(...INGESTION_QUEUE_STATES);
      for (const state of INGESTION_QUEUE_STATES) this.metrics.ingestionQueue.set({ state }, counts[state] ?? 0);
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.stopCollecting?.();
    await this.queue?.close().catch(() => undefined);
    const closed = this.worker?.close().catch(() => undefined);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 3_000).unref())]);
    // what the worker booked last, acknowledged before the connection goes
    await Promise.race([this.acks?.flush(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    this.acks?.stop();
    await this.acksQueue?.close().catch(() => undefined);
    this.connection?.disconnect();
  }

  private async process(job: Job<PaymentEventMessage>): Promise<string> {
    const parsed = parsePaymentEventMessage(job.data);
    if (!parsed.ok) {
      this.metrics.recordEvent(String((job.data as { type?: unknown } | null)?.type), 'refused');
      throw new UnrecoverableError(`malformed payment event: ${parsed.reason}`);
    }
    const event = parsed.message;
    const { type, occurredAt } = event;
    try {
      const outcome = await this.ingestion.book(event);
      this.metrics.recordEvent(type, outcome, occurredAt);
      this.acks?.acknowledge(event.eventId);
      return outcome;
    } catch (error) {
      const refused = error instanceof BookingRefusedError;
      this.metrics.recordEvent(type, refused ? 'refused' : 'error');
      if (refused) throw new UnrecoverableError(error.message);
      throw error;
    }
  }
}
