import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import type { PaymentEventType } from '@mp/clients';
import { Metrics } from '@mp/platform';
import { BREAK_KINDS } from '@mp/reconciliation';

/** Metric names of the ledger: an interface, as dashboards and alerts depend on them (docs/runbook.md#metrics). */
export const LEDGER_METRIC_NAMES = {
  eventsTotal: 'ledger_payment_events_total',
  bookingLag: 'ledger_payment_event_lag_seconds',
  ingestionQueue: 'ledger_ingestion_queue_jobs',
  reconciliationRuns: 'reconciliation_runs_total',
  reconciliationBreaks: 'reconciliation_breaks_found_total',
} as const;

/** booked: written (or already there); skipped: nothing to book (an open-mode payment, an intermediate event); refused: the ledger said no; error: retried */
export const BOOKING_OUTCOMES = ['booked', 'skipped', 'refused', 'error'] as const;
export type BookingOutcomeLabel = (typeof BOOKING_OUTCOMES)[number];
export const INGESTION_QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

const EVENT_TYPES: ReadonlySet<string> = new Set<PaymentEventType>([
  'payment.verified',
  'payment.submitted',
  'payment.replaced',
  'payment.resend',
  'payment.retried',
  'payment.confirmed',
  'payment.failed',
  'payment.expired',
]);
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600];

/** The ledger's own metrics, in the app's registry (next to the HTTP and process metrics every app has). */
@Injectable()
export class LedgerMetrics {
  readonly eventsTotal: Counter<'type' | 'outcome'>;
  readonly bookingLag: Histogram;
  readonly ingestionQueue: Gauge<'state'>;
  readonly reconciliationRuns: Counter<'outcome'>;
  readonly reconciliationBreaks: Counter<'kind'>;

  constructor(readonly metrics: Metrics) {
    const registers = [metrics.registry];
    this.eventsTotal = new Counter({
      name: LEDGER_METRIC_NAMES.eventsTotal,
      help: "The facilitator's payment events handled by ingestion, by type and outcome (booked, skipped, refused, error).",
      labelNames: ['type', 'outcome'],
      registers,
    });
    this.bookingLag = new Histogram({
      name: LEDGER_METRIC_NAMES.bookingLag,
      help: 'Seconds from a payment event in the facilitator to its booking in the ledger.',
      buckets: LAG_BUCKETS,
      registers,
    });
    this.ingestionQueue = new Gauge({
      name: LEDGER_METRIC_NAMES.ingestionQueue,
      help: 'Jobs of the payment-events queue by state (waiting, active, delayed, failed), read at scrape time.',
      labelNames: ['state'],
      registers,
    });
    this.reconciliationRuns = new Counter({
      name: LEDGER_METRIC_NAMES.reconciliationRuns,
      help: 'Reconciliation runs this process finished, by outcome (clean, breaks, failed).',
      labelNames: ['outcome'],
      registers,
    });
    this.reconciliationBreaks = new Counter({
      name: LEDGER_METRIC_NAMES.reconciliationBreaks,
      help: 'Breaks found by the reconciliation runs this process finished, by kind (each run counts the breaks it reports).',
      labelNames: ['kind'],
      registers,
    });
    // every series exists from the start, so rates and absent-alerts work before the first event
    for (const outcome of ['clean', 'breaks', 'failed']) this.reconciliationRuns.inc({ outcome }, 0);
    for (const kind of BREAK_KINDS) this.reconciliationBreaks.inc({ kind }, 0);
  }

  recordEvent(type: string, outcome: BookingOutcomeLabel, occurredAt?: string): void {
    this.eventsTotal.inc({ type: EVENT_TYPES.has(type) ? type : 'other', outcome });
    const at = occurredAt ? Date.parse(occurredAt) : NaN;
    if (outcome === 'booked' && Number.isFinite(at)) this.bookingLag.observe(Math.max(0, (Date.now() - at) / 1000));
  }

  recordRun(outcome: 'clean' | 'breaks' | 'failed', breaks: Partial<Record<string, number>> = {}): void {
    this.reconciliationRuns.inc({ outcome });
    for (const kind of BREAK_KINDS) if (breaks[kind]) this.reconciliationBreaks.inc({ kind }, breaks[kind]);
  }
}
