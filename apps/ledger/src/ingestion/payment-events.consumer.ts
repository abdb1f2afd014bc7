import { Inject, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { InjectQueue, OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { type Job, type Queue, UnrecoverableError } from 'bullmq';
import {
  PAYMENT_EVENT_BATCH_JOB,
  PAYMENT_EVENTS_ACKS_QUEUE,
  PAYMENT_EVENTS_QUEUE,
  parsePaymentEventBatch,
  parsePaymentEventMessage,
  paymentEventJobId,
  type PaymentEventJobData,
  type PaymentEventMessage,
  type PaymentEventsAckMessage,
} from '@mp/clients';
import { closeWorker } from '@mp/platform';
import { SubscriptionLifecycle, SubscriptionNotYetKnownError } from '../billing/subscription-lifecycle.service';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { INGESTION_QUEUE_STATES, LedgerMetrics } from '../ledger.metrics';
import { PaymentEventAcks } from './payment-event-acks';
import { BookingRefusedError, PaymentIngestion } from './payment-ingestion.service';

/**
 * Consumes the facilitator's `payment-events` queue (LEDGER_INGEST): single events and batches. A job that fails on a
 * passing problem (the database away) is retried with backoff by BullMQ; one the ledger refuses stays in the failed
 * set, with the reason, for an operator (`npm run ledger:replay` moves it back to waiting); so does a job that breaks
 * the payment-events contract (a malformed job: no retry can mend it). An event of a batch that is refused or
 * malformed is published again as a job of its own (its single-event job id), which fails so on its own, while the
 * rest of the batch is booked. Every event booked or skipped is acknowledged to the facilitator
 * (`payment-events-acks`), which publishes again what stays unacknowledged.
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
    @InjectQueue(PAYMENT_EVENTS_QUEUE) private readonly queue: Queue<PaymentEventJobData>,
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
  onFailed(job: Job<PaymentEventJobData> | undefined, error: Error): void {
    if (job?.name === PAYMENT_EVENT_BATCH_JOB) {
      this.logger.warn(`payment event batch ${job.id} failed: ${error.message}`);
      return;
    }
    const event = job?.data as Partial<PaymentEventMessage> | undefined;
    this.logger.warn(`payment event ${event?.eventId} (${event?.type} of ${event?.paymentId}) failed: ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  async process(job: Job<PaymentEventJobData>): Promise<string> {
    if (job.name === PAYMENT_EVENT_BATCH_JOB) return this.processBatch(job.data);
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

  /**
   * A batch: booked together (PaymentIngestion.bookMany), then the subscription lifecycle of the events it did not
   * refuse (SubscriptionLifecycle.ingestMany), then every event booked or skipped acknowledged. Metrics per event.
   */
  private async processBatch(data: unknown): Promise<string> {
    const parsed = parsePaymentEventBatch(data);
    if (!parsed.ok) {
      this.metrics.recordEvent(PAYMENT_EVENT_BATCH_JOB, 'refused');
      throw new UnrecoverableError(`malformed payment event batch: ${parsed.reason}`);
    }
    const events: PaymentEventMessage[] = [];
    for (const member of parsed.events) {
      if (member.ok) events.push(member.message);
      else await this.passOnMalformed(member.value, member.reason);
    }
    try {
      const booked = await this.ingestion.bookMany(events);
      const accepted = events.filter((_, i) => !(booked[i] instanceof BookingRefusedError));
      const lifecycle = await this.subscriptions.ingestMany(accepted);
      const outcomes = new Map(accepted.map((event, i) => [event, lifecycle[i]]));
      const counts = { booked: 0, skipped: 0, refused: 0, waiting: 0 };
      for (const [i, event] of events.entries()) {
        const applied = outcomes.get(event);
        const refusal = booked[i] instanceof BookingRefusedError ? booked[i] : applied instanceof BookingRefusedError ? applied : undefined;
        // counted as refused when its own job fails
        if (refusal) {
          await this.passOnRefused(event, refusal);
          counts.refused++;
          continue;
        }
        // booked, its subscription's activation not applied yet (in a batch still running): alone, retried until it is
        if (applied instanceof SubscriptionNotYetKnownError) {
          this.logger.debug(`${applied.message}: published alone, retried until it is`);
          await this.publishAlone(event);
          counts.waiting++;
          continue;
        }
        const outcome = booked[i] === 'booked' || applied === 'applied' ? 'booked' : 'skipped';
        this.metrics.recordEvent(event.type, outcome, event.occurredAt);
        this.acks.acknowledge(event.eventId);
        counts[outcome]++;
      }
      const waiting = counts.waiting ? `, ${counts.waiting} published alone for their subscription` : '';
      return `${parsed.events.length} events: ${counts.booked} booked, ${counts.skipped} skipped, ${counts.refused + parsed.events.length - events.length} refused${waiting}`;
    } catch (error) {
      // a passing failure: the whole batch is retried, and what it booked answers `exists` then
      for (const event of events) this.metrics.recordEvent(event.type, 'error');
      throw error;
    }
  }

  /** A refused event of a batch, as a job of its own: it fails on its own (the same refusal), and stays there for an operator. */
  private async passOnRefused(event: PaymentEventMessage, refusal: BookingRefusedError): Promise<void> {
    this.logger.warn(`payment event ${event.eventId} (${event.type} of ${event.paymentId}) refused in a batch, published alone: ${refusal.message}`);
    await this.publishAlone(event);
  }

  /** An event of a batch as a job of its own, under its single-event job id (as the facilitator's re-publish names it). */
  private async publishAlone(event: PaymentEventMessage): Promise<void> {
    await this.queue.add(event.type, event, { jobId: paymentEventJobId(event.eventId, event.paymentId) });
  }

  /** A malformed event of a batch (a facilitator that breaks the contract): alone, where it fails as malformed, when it names its event. */
  private async passOnMalformed(value: unknown, reason: string): Promise<void> {
    const { eventId, paymentId, type } = (value ?? {}) as { eventId?: unknown; paymentId?: unknown; type?: unknown };
    if (typeof eventId !== 'string' || typeof paymentId !== 'string' || !eventId || !paymentId) {
      this.metrics.recordEvent(String(type), 'refused');
      this.logger.error(`a malformed payment event in a batch, not named well enough to publish alone (left to the facilitator's re-publish): ${reason}`);
      return;
    }
    this.logger.warn(`payment event ${eventId} in a batch breaks the payment-events contract, published alone: ${reason}`);
    await this.queue.add(typeof type === 'string' && type ? type : 'malformed', value as PaymentEventMessage, { jobId: paymentEventJobId(eventId, paymentId) });
  }
}
