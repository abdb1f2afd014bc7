import { Counter, Gauge } from 'prom-client';
import type { PrismaService } from '@mp/db';
import type { Metrics } from '@mp/platform';

export const OUTBOX_METRIC_NAMES = {
  events: 'outbox_payment_events',
  oldestUnacknowledged: 'outbox_oldest_unacknowledged_seconds',
  republished: 'outbox_republished_events_total',
} as const;

/**
 * The outbox to the ledger in /metrics (worker role): the backlog the ledger has not booked yet, read at scrape time,
 * and how often events had to be published again.
 */
export class OutboxMetrics {
  readonly events: Gauge<'state'>;
  readonly oldestUnacknowledged: Gauge;
  readonly republished: Counter;
  private readonly stopCollecting: () => void;

  constructor(
    private readonly metrics: Metrics,
    db: PrismaService,
  ) {
    const registers = [metrics.registry];
    this.events = new Gauge({
      name: OUTBOX_METRIC_NAMES.events,
      help: 'Payment events not done yet, by state: unpublished (not handed to the queue yet) or unacknowledged (published, not booked by the ledger yet).',
      labelNames: ['state'],
      registers,
    });
    this.oldestUnacknowledged = new Gauge({
      name: OUTBOX_METRIC_NAMES.oldestUnacknowledged,
      help: 'Age in seconds of the oldest payment event published but not acknowledged by the ledger (0 when there is none).',
      registers,
    });
    this.republished = new Counter({
      name: OUTBOX_METRIC_NAMES.republished,
      help: 'Payment events published again because the ledger had not acknowledged them within OUTBOX_REPUBLISH_AFTER_MS.',
      registers,
    });
    this.stopCollecting = metrics.onCollect('outbox', async () => {
      const [row] = await db.$queryRawUnsafe<{ unpublished: number; unacknowledged: number; oldest: number }[]>(
        `SELECT (SELECT count(*)::int FROM facilitator.payment_events WHERE published_at IS NULL) AS unpublished,
                count(*)::int AS unacknowledged,
                coalesce(extract(epoch FROM now() - min(created_at)), 0)::float8 AS oldest
           FROM facilitator.payment_events WHERE acknowledged_at IS NULL AND published_at IS NOT NULL`,
      );
      this.events.set({ state: 'unpublished' }, row.unpublished);
      this.events.set({ state: 'unacknowledged' }, row.unacknowledged);
      this.oldestUnacknowledged.set(row.oldest);
    });
  }

  unregister(): void {
    this.stopCollecting();
    for (const name of Object.values(OUTBOX_METRIC_NAMES)) this.metrics.registry.removeSingleMetric(name);
  }
}
