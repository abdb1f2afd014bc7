import { Inject, Injectable, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { type Job, UnrecoverableError, Worker } from 'bullmq';
import { Redis } from 'ioredis';
import { PAYMENT_EVENTS_QUEUE, type PaymentEventMessage } from '@mp/clients';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { BookingRefusedError, PaymentIngestion } from './payment-ingestion.service';

/**
 * Consumes the facilitator's `payment-events` queue (LEDGER_INGEST). A job that fails on a passing problem (the
 * database away) is retried with backoff by BullMQ; one the ledger refuses stays in the failed set, with the
 * reason, for an operator.
 */
@Injectable()
export class PaymentEventsConsumer implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Ingestion');
  private connection?: Redis;
  private worker?: Worker<PaymentEventMessage>;

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly ingestion: PaymentIngestion,
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
    this.worker.on('failed', (job, error) => this.logger.warn(`payment event ${job?.data.eventId} (${job?.data.type} of ${job?.data.paymentId}) failed: ${error.message}`));
    this.worker.on('error', (error) => this.logger.debug(`worker: ${error.message}`));
  }

  async onModuleDestroy(): Promise<void> {
    const closed = this.worker?.close().catch(() => undefined);
    await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, 3_000).unref())]);
    this.connection?.disconnect();
  }

  private async process(job: Job<PaymentEventMessage>): Promise<string> {
    try {
      return await this.ingestion.book(job.data);
    } catch (error) {
      if (error instanceof BookingRefusedError) throw new UnrecoverableError(error.message);
      throw error;
    }
  }
}
