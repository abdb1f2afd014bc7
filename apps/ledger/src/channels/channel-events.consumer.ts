import { Inject, Logger, type OnApplicationBootstrap, type OnModuleDestroy } from '@nestjs/common';
import { OnWorkerEvent, Processor, WorkerHost } from '@nestjs/bullmq';
import { type Job, UnrecoverableError } from 'bullmq';
import { CHANNEL_EVENTS_QUEUE, parseChannelEventMessage, type ChannelEventMessage } from '@mp/clients';
import { closeWorker } from '@mp/platform';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { ChannelBooks, ChannelEventGapError, ChannelEventRefusedError, type ChannelBookingOutcome } from './channel-books.service';

/** A gap is first waited out in the job (events of one channel run side by side with LEDGER_INGEST_CONCURRENCY > 1). */
const GAP_WAITS = 4;
const GAP_WAIT_MS = 50;

/**
 * Consumes the facilitator's `channel-events` queue (LEDGER_INGEST): each event booked once on its channel's accounts
 * (ChannelBooks). A job that breaks the channel-events contract (malformed, or figures the books contradict) fails for
 * good, logged, and stays in the failed set for an operator; one that comes before an earlier event of its channel
 * (a gap) or meets a passing problem (the database away) is retried with the facilitator's backoff.
 */
// autorun off: the worker starts once its concurrency (LEDGER_INGEST_CONCURRENCY) is set, at bootstrap
@Processor(CHANNEL_EVENTS_QUEUE, { autorun: false })
export class ChannelEventsConsumer extends WorkerHost implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('ChannelIngestion');
  /** the last job of each channel this process is booking or waiting to book */
  private readonly channelTails = new Map<string, Promise<unknown>>();

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly books: ChannelBooks,
  ) {
    super();
  }

  onApplicationBootstrap(): void {
    this.worker.concurrency = this.config.ingestConcurrency;
    this.worker.run().catch((error: Error) => this.logger.error(`the channel events worker stopped: ${error.message}`));
  }

  async onModuleDestroy(): Promise<void> {
    await closeWorker(this.worker);
  }

  @OnWorkerEvent('failed')
  onFailed(job: Job | undefined, error: Error): void {
    const event = job?.data as Partial<ChannelEventMessage> | undefined;
    const what = `channel event ${event?.eventId} (${event?.type} of ${event?.channel?.channelId})`;
    if (error instanceof UnrecoverableError || error.name === 'UnrecoverableError') this.logger.error(`${what} refused for good: ${error.message}`);
    else this.logger.warn(`${what} failed (attempt ${job?.attemptsMade}): ${error.message}`);
  }

  @OnWorkerEvent('error')
  onError(error: Error): void {
    this.logger.debug(`worker: ${error.message}`);
  }

  async process(job: Job): Promise<ChannelBookingOutcome> {
    const parsed = parseChannelEventMessage(job.data);
    if (!parsed.ok) throw new UnrecoverableError(`malformed channel event: ${parsed.reason}`);
    return this.inChannelOrder(parsed.message.channel.channelId, () => this.book(parsed.message));
  }

  /**
   * Runs one channel's jobs one after another, in the order this process picked them (the queue's order: the
   * facilitator publishes in event order). Without it, the worker's slots book a channel's events side by side and the
   * later ones meet gaps, fall into backoff, and the books lag by seconds; with several replicas the gap waits remain.
   */
  private inChannelOrder<T>(channelId: string, work: () => Promise<T>): Promise<T> {
    const previous = this.channelTails.get(channelId) ?? Promise.resolve();
    const run = previous.then(work, work);
    const tail = run.then(
      () => undefined,
      () => undefined,
    );
    this.channelTails.set(channelId, tail);
    void tail.then(() => {
      if (this.channelTails.get(channelId) === tail) this.channelTails.delete(channelId);
    });
    return run;
  }

  private async book(event: ChannelEventMessage): Promise<ChannelBookingOutcome> {
    for (let wait = 1; ; wait++) {
      try {
        return await this.books.book(event);
      } catch (error) {
        if (error instanceof ChannelEventRefusedError) throw new UnrecoverableError(error.message);
        // the earlier event is often being booked right now by another worker slot: a short wait before the queue's backoff
        if (error instanceof ChannelEventGapError && wait <= GAP_WAITS) {
          await new Promise((resolve) => setTimeout(resolve, GAP_WAIT_MS * wait));
          continue;
        }
        throw error;
      }
    }
  }
}
