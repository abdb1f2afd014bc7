import { Inject, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { type Job, type Queue, UnrecoverableError } from 'bullmq';
import { PAYMENT_EVENTS_ACKS_QUEUE, PAYMENT_EVENTS_QUEUE, parsePaymentEventMessage, type PaymentEventMessage, type PaymentEventsAckMessage } from '@mp/clients';
import { closeWorker } from '@mp/platform';
import { SubscriptionLifecycle } from '../billing/subscription-lifecycle.service';
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
// autorun off: the worker starts once its concurrency (LEDGER_INGEST_CONCURRENCY) is set, at bootstrap
@Processor(PAYMENT_EVENTS_QUEUE, { autorun: false })
export class PaymentEventsConsumer extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Ingestion');
  private readonly acks: PaymentEventAcks;
  private stopCollecting?: () => void;

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly ingestion: PaymentIngestion,
    private readonly subscriptions: SubscriptionLifecycle,
    private readonly metrics: LedgerMetrics,
    @InjectQueue(PAYMENT_EVENTS_QUEUE) private readonly queue: Queue<PaymentEventMessage>,
    @InjectQueue(PAYMENT_EVENTS_ACKS_QUEUE) acksQueue: Queue<PaymentEventsAckMessage>,
  ) {
    super();
    this.acks = new PaymentEventAcks(acksQueue, this.logger);
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.ingestConcurrency;
    this.worker.run().catch((error: Error) => this.logger.error(`the payment events worker stopped: ${error.message}`));
    this.stopCollecting = this.metrics.metrics.onCollect('ingestion_queue', async () => {
      const counts = await this.queue.getJobCounts(...INGESTION_QUEUE_STATES);
      for (const state of INGESTION_QUEUE_STATES) this.metrics.ingestionQueue.set({ state }, counts[state] ?? 0);
    });
  }

  /** The worker closes first (the platform's path), so what it booked last is acknowledged before the queues close. */
  async onModuleDestroy(): Promise<void> {
    this.stopCollecting?.();
    await closeWorker(this.worker);
    await Promise.race([this.acks.flush(), new Promise((resolve) => setTimeout(resolve, 2_000).unref())]);
    this.acks.stop();
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job<PaymentEventMessage> | undefined, error: Error): void {
    this.logger.warn(`payment event ${job?.data?.eventId} (${job?.data?.type} of ${job?.data?.paymentId}) failed: ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  async process(job: Job<PaymentEventMessage>): Promise<string> {
    const parsed = parsePaymentEventMessage(job.data);
    if (!parsed.ok) {
      this.metrics.recordEvent(String((job.data as { type?: unknown } | null)?.type), 'refused');
      throw new UnrecoverableError(`malformed payment event: ${parsed.reason}`);
    }
    const event = parsed.message;
    const { type, occurredAt } = event;
    try {
      const booked = await this.ingestion.book(event);
      // then the subscription lifecycle (issue 13), when the event is about one
      const lifecycle = await this.subscriptions.ingest(event);
      const outcome = booked === 'booked' || lifecycle === 'applied' ? 'booked' : booked;
      this.metrics.recordEvent(type, outcome, occurredAt);
      this.acks.acknowledge(event.eventId);
      return outcome;
    } catch (error) {
      const refused = error instanceof BookingRefusedError;
      this.metrics.recordEvent(type, refused ? 'refused' : 'error');
      if (refused) throw new UnrecoverableError(error.message);
      throw error;
    }
  }
}
