import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService } from '@mp/db';
import { exactAverage, summarySql, type Aggregation, type MeterDefinition, type SummaryQuery } from './meter';

export interface MeterRecord extends MeterDefinition {
  createdAt: Date;
}

export interface SummaryRow {
  windowStart: Date | null;
  /** dimension → the event data's value as text (null: absent) */
  groupBy: Record<string, string | null>;
  /** an exact decimal string; null when no event of the window had a value (min, max, avg, latest) */
  value: string | null;
}

/** Meters in `ledger.usage_meters`, scoped by their merchant; and their totals, computed in SQL over `ledger.usage_events`. */
@Injectable()
export class MeterRepository {
  constructor(private readonly db: PrismaService) {}

  /** Creates the meter unless its key is taken; answers the meter stored under the key either way. */
  async create(merchantId: string, meter: MeterDefinition): Promise<{ created: boolean; meter: MeterRecord }> {
    const { count } = await this.db.usageMeter.createMany({
      data: {
        merchantId,
        key: meter.key,
        eventType: meter.eventType,
        aggregation: meter.aggregation,
        valueProperty: meter.valueProperty,
        groupBy: meter.groupBy,
      },
      skipDuplicates: true,
    });
    return { created: count === 1, meter: (await this.find(merchantId, meter.key))! };
  }

  async find(merchantId: string, key: string): Promise<MeterRecord | undefined> {
    const row = await this.db.usageMeter.findUnique({ where: { merchantId_key: { merchantId, key } } });
    return row ? recordOf(row) : undefined;
  }

  /** Every meter of the merchant, by key. */
  async list(merchantId: string): Promise<MeterRecord[]> {
    return (await this.db.usageMeter.findMany({ where: { merchantId }, orderBy: { key: 'asc' } })).map(recordOf);
  }

  /** The meter's total per window (and groupBy dimensions) over the query's events. */
  async summary(meter: MeterDefinition, query: SummaryQuery): Promise<SummaryRow[]> {
    const { text, values } = summarySql(meter, query);
    const rows = await this.db.$queryRawUnsafe<Record<string, unknown>[]>(text, ...values);
    const names = Object.keys(meter.groupBy);
    return rows.map((row) => ({
      windowStart: row.window_start === null ? null : new Date(row.window_start as string | Date),
      groupBy: Object.fromEntries(names.map((name, i) => [name, (row[`g${i}`] as string | null) ?? null])),
      value: meter.aggregation === 'avg' ? exactAverage((row.value as string | null) ?? null) : ((row.value as string | null) ?? null),
    }));
  }
}

type MeterRow = Prisma.UsageMeterGetPayload<object>;

const recordOf = (row: MeterRow): MeterRecord => ({
  key: row.key,
  eventType: row.eventType,
  aggregation: row.aggregation as Aggregation,
  valueProperty: row.valueProperty,
  groupBy: row.groupBy as Record<string, string>,
  createdAt: row.createdAt,
});
