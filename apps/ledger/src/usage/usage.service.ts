import { Inject, Injectable } from '@nestjs/common';
import type { Clock } from '@mp/billing';
import { ProblemError } from '@mp/platform';
import { BILLING_CLOCK } from '../billing/billing.clock';
import { differingMeterFields, windowEnd, type MeterDefinition, type WindowSize } from './meter';
import { MeterRepository, type MeterRecord } from './meter.repository';
import { MAX_EVENTS_PER_REQUEST, parseUsageEvents, usageContentKind, type UsageEventProblem } from './usage-event';
import { UsageEventStore, type IngestCounts } from './usage-event.store';

export interface MeterView {
  id: string;
  eventType: string;
  aggregation: string;
  valueProperty: string | null;
  groupBy: Record<string, string>;
  createdAt: string;
}

export interface SummaryView {
  meter: string;
  aggregation: string;
  subject: string | null;
  from: string | null;
  to: string | null;
  windowSize: WindowSize;
  data: { windowStart: string | null; windowEnd: string | null; groupBy?: Record<string, string | null>; value: string | null }[];
}

/** Usage events in, meters and their totals out (issue 14). Time is the billing clock's, as the subscriptions'. */
@Injectable()
export class UsageService {
  constructor(
    private readonly events: UsageEventStore,
    private readonly meters: MeterRepository,
    @Inject(BILLING_CLOCK) private readonly clock: Clock,
  ) {}

  /** Stores a request's events, all or none (see parseUsageEvents); throws the problem that refuses them. */
  async ingest(merchantId: string, body: unknown, contentType: string | undefined): Promise<IngestCounts> {
    const parsed = parseUsageEvents(body, usageContentKind(contentType), this.clock.now());
    if (parsed.ok) return this.events.ingest(merchantId, parsed.events);
    if ('tooMany' in parsed)
      throw new ProblemError(
        'payload_too_large',
        `a request carries at most ${MAX_EVENTS_PER_REQUEST} events (this one ${parsed.tooMany}); nothing was stored`,
        {
          maxEvents: MAX_EVENTS_PER_REQUEST,
        },
      );
    if ('shape' in parsed) throw new ProblemError('validation_failed', parsed.shape, { invalidParams: [{ name: '(body)', reason: parsed.shape }] });
    throw eventsProblem(parsed.problems);
  }

  async createMeter(merchantId: string, meter: MeterDefinition): Promise<{ created: boolean; meter: MeterView }> {
    const outcome = await this.meters.create(merchantId, meter);
    if (!outcome.created) {
      const conflictingFields = differingMeterFields(outcome.meter, meter);
      if (conflictingFields.length)
        throw new ProblemError('meter_conflict', `meter ${meter.key} exists with another definition: ${conflictingFields.join(', ')}`, {
          meterId: meter.key,
          conflictingFields,
        });
    }
    return { created: outcome.created, meter: meterView(outcome.meter) };
  }

  async listMeters(merchantId: string): Promise<MeterView[]> {
    return (await this.meters.list(merchantId)).map(meterView);
  }

  async meter(merchantId: string, key: string): Promise<MeterView> {
    return meterView(await this.found(merchantId, key));
  }

  async summary(merchantId: string, key: string, query: { subject?: string; from?: Date; to?: Date; windowSize: WindowSize }): Promise<SummaryView> {
    const meter = await this.found(merchantId, key);
    const rows = await this.meters.summary(meter, { merchantId, ...query });
    const grouped = Object.keys(meter.groupBy).length > 0;
    return {
      meter: meter.key,
      aggregation: meter.aggregation,
      subject: query.subject ?? null,
      from: query.from?.toISOString() ?? null,
      to: query.to?.toISOString() ?? null,
      windowSize: query.windowSize,
      data: rows.map((row) => ({
        windowStart: row.windowStart?.toISOString() ?? query.from?.toISOString() ?? null,
        windowEnd:
          row.windowStart && query.windowSize !== 'none' ? windowEnd(row.windowStart, query.windowSize).toISOString() : (query.to?.toISOString() ?? null),
        ...(grouped && { groupBy: row.groupBy }),
        value: row.value,
      })),
    };
  }

  private async found(merchantId: string, key: string): Promise<MeterRecord> {
    const meter = await this.meters.find(merchantId, key);
    if (!meter) throw new ProblemError('not_found', `no meter ${key}`);
    return meter;
  }
}

/**
 * The whole batch is refused: `validation_failed` if any event is malformed, else the time window's own code
 * (event_too_old / event_in_future, of the first such event). Every problem is named, with its own reasonCode.
 */
function eventsProblem(problems: UsageEventProblem[]): ProblemError {
  const code = problems.some((p) => p.reasonCode === 'invalid_event')
    ? 'validation_failed'
    : problems[0].reasonCode === 'event_too_old'
      ? 'event_too_old'
      : 'event_in_future';
  const names = [...new Set(problems.slice(0, 50).map((p) => p.name))];
  return new ProblemError(code, `invalid event(s), nothing was stored: ${names.join(', ')}`, { invalidParams: problems.slice(0, 50) });
}

function meterView(meter: MeterRecord): MeterView {
  return {
    id: meter.key,
    eventType: meter.eventType,
    aggregation: meter.aggregation,
    valueProperty: meter.valueProperty,
    groupBy: meter.groupBy,
    createdAt: meter.createdAt.toISOString(),
  };
}
