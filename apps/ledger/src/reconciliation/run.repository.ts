import { Injectable } from '@nestjs/common';
import { Prisma, PrismaService, withTransaction } from '@mp/db';
import {
  rowToJson,
  subscriptionEventToJson,
  summaryToJson,
  totalsToJson,
  type AssetTotalsJson,
  type Period,
  type ReconReport,
  type ReconRowJson,
  type ReconSummaryJson,
  type RowKind,
  type SubscriptionEventJson,
} from '@mp/reconciliation';

export type RunStatus = 'queued' | 'running' | 'completed' | 'failed';
export type RunTrigger = 'api' | 'schedule';
/** What the ledger is reconciled against. */
export const RUN_SOURCES = ['chain', 'stripe'] as const;
export type RunSource = (typeof RUN_SOURCES)[number];

export interface RunProgress {
  /** ledger, chain, stripe, matching, saving */
  phase: string;
  done: number;
  total: number;
}

/** What a run compared: `source/kind` pairs, and how many ledger entries of other kinds it left out. */
export interface RunScope {
  reconciled: string[];
  leftOut: number;
}

/** The summary as stored, with the period's subscription events that moved no money (the report shows them). */
export type RunSummary = ReconSummaryJson & { scope: RunScope; subscriptionEvents?: SubscriptionEventJson[] };

export interface RunRecord {
  id: string;
  merchantId: string;
  period: Period;
  /** sorted */
  sources: RunSource[];
  trigger: RunTrigger;
  status: RunStatus;
  progress: RunProgress | null;
  summary: RunSummary | null;
  totals: AssetTotalsJson[] | null;
  error: string | null;
  notifiedAt: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** signed into the run's report links; revoking them bumps it */
  linkGeneration: number;
}

/** What creating a run did: created it, found it created already (same id), or found another run of the merchant in flight. */
export type CreateOutcome = { created: true } | { created: false; inFlight?: RunRecord };

/** Where a page of the merchant's runs (newest first) goes on: after this run, by creation time in microseconds and id. */
export interface RunPosition {
  createdMicros: string;
  id: string;
}

/** Which rows to list: all, the breaks, or one kind. */
export type RowFilter = 'all' | 'breaks' | RowKind;

/** The columns of a run as `list` reads them in SQL. */
const COLUMNS = `id, merchant_id AS "merchantId", period_from AS "periodFrom", period_to AS "periodTo", sources, trigger, status, progress, summary, totals,
  error, notified_at AS "notifiedAt", created_at AS "createdAt", started_at AS "startedAt", finished_at AS "finishedAt", link_generation AS "linkGeneration"`;
/** The same columns for Prisma Client (their names are the record's). */
const RUN = {
  id: true,
  merchantId: true,
  periodFrom: true,
  periodTo: true,
  sources: true,
  trigger: true,
  status: true,
  progress: true,
  summary: true,
  totals: true,
  error: true,
  notifiedAt: true,
  createdAt: true,
  startedAt: true,
  finishedAt: true,
  linkGeneration: true,
} satisfies Prisma.ReconciliationRunSelect;
/** Rows per INSERT statement when a report is stored (12 parameters a row, under PostgreSQL's 65 535). */
const INSERT_CHUNK = 2_000;

/** Runs and their report rows in `ledger.reconciliation_runs` / `ledger.reconciliation_rows`. */
@Injectable()
export class RunRepository {
  constructor(private readonly db: PrismaService) {}

  /**
   * A queued run, unless a run with this id exists already (a scheduled run's id is derived from its merchant and
   * period) or the merchant has a run in flight: PostgreSQL keeps one queued or running run per merchant, and the
   * one in flight is returned (it may be this very id).
   */
  async create(run: { id: string; merchantId: string; period: Period; sources: RunSource[]; trigger: RunTrigger }): Promise<CreateOutcome> {
    // a conflict on either the id or the one-in-flight index (ON CONFLICT DO NOTHING, no target) inserts nothing;
    // which one it was is read after
    const { count } = await this.db.reconciliationRun.createMany({
      data: {
        id: run.id,
        merchantId: run.merchantId,
        periodFrom: run.period.from,
        periodTo: run.period.to,
        sources: [...run.sources].sort(),
        trigger: run.trigger,
        status: 'queued',
      },
      skipDuplicates: true,
    });
    if (count === 1) return { created: true };
    const inFlight = await this.inFlight(run.merchantId);
    return { created: false, ...(inFlight && { inFlight }) };
  }

  /** The merchant's queued or running run, if any (at most one: the partial unique index reconciliation_runs_one_in_flight_key). */
  async inFlight(merchantId: string): Promise<RunRecord | undefined> {
    const row = await this.db.reconciliationRun.findFirst({ where: { merchantId, status: { in: ['queued', 'running'] } }, select: RUN });
    return row ? toRecord(row) : undefined;
  }

  /**
   * A page of the merchant's runs, newest first (creation time, then id), after `after` (exclusive). Positions are in
   * microseconds, PostgreSQL's precision: a JavaScript Date would round two runs of one millisecond together (so SQL:
   * Prisma Client reads timestamps as Dates).
   */
  async list(merchantId: string, limit: number, after?: RunPosition): Promise<{ runs: RunRecord[]; next?: RunPosition }> {
    const rows = await this.db.$queryRawUnsafe<(RunColumns & { createdMicros: string })[]>(
      `SELECT ${COLUMNS}, (extract(epoch FROM created_at) * 1000000)::bigint::text AS "createdMicros" FROM ledger.reconciliation_runs
        WHERE merchant_id = $1::uuid AND ($2::bigint IS NULL OR (created_at, id) < (timestamptz 'epoch' + $2::bigint * interval '1 microsecond', $3::uuid))
        ORDER BY created_at DESC, id DESC LIMIT $4`,
      merchantId,
      after?.createdMicros ?? null,
      after?.id ?? null,
      limit + 1,
    );
    const page = rows.slice(0, limit);
    const last = page.at(-1);
    return {
      runs: page.map(({ createdMicros: _, ...row }) => toRecord(row)),
      ...(rows.length > limit && last && { next: { createdMicros: last.createdMicros, id: last.id } }),
    };
  }

  /** Every link to the run issued so far stops working; the run with its new generation, undefined if not the merchant's. */
  async revokeLinks(merchantId: string, id: string): Promise<RunRecord | undefined> {
    const { count } = await this.db.reconciliationRun.updateMany({ where: { id, merchantId }, data: { linkGeneration: { increment: 1 } } });
    return count === 1 ? this.find(merchantId, id) : undefined;
  }

  /** A merchant's own run: another merchant's is as absent as one that does not exist. */
  async find(merchantId: string, id: string): Promise<RunRecord | undefined> {
    const row = await this.db.reconciliationRun.findFirst({ where: { id, merchantId }, select: RUN });
    return row ? toRecord(row) : undefined;
  }

  async findForWork(id: string): Promise<RunRecord | undefined> {
    const row = await this.db.reconciliationRun.findUnique({ where: { id }, select: RUN });
    return row ? toRecord(row) : undefined;
  }

  async start(id: string): Promise<void> {
    await this.db.reconciliationRun.updateMany({
      where: { id, status: { not: 'completed' } },
      data: { status: 'running', startedAt: new Date(), progress: Prisma.DbNull, error: null },
    });
  }

  async progress(id: string, progress: RunProgress): Promise<void> {
    await this.db.reconciliationRun.updateMany({ where: { id, status: 'running' }, data: { progress: { ...progress } } });
  }

  /** Stores the report's rows and completes the run, in one transaction: a run has all its rows or none. */
  async complete(run: RunRecord, report: ReconReport, scope: RunScope): Promise<void> {
    const rows = report.rows.map(rowToJson);
    await withTransaction(
      this.db,
      async (tx) => {
        for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
          await tx.reconciliationRow.createMany({
            data: rows.slice(start, start + INSERT_CHUNK).map((r, i) => ({
              runId: run.id,
              merchantId: run.merchantId,
              seq: start + i,
              kind: r.kind,
              isBreak: r.kind !== 'matched' && r.kind !== 'pending',
              key: r.key,
              source: r.source,
              asset: r.asset,
              entryKind: r.entryKind,
              reference: r.reference,
              occurredAt: new Date(r.occurredAt),
              data: r as unknown as Prisma.InputJsonObject,
            })),
          });
        }
        await tx.reconciliationRun.update({
          where: { id: run.id },
          data: {
            status: 'completed',
            finishedAt: new Date(),
            progress: Prisma.DbNull,
            summary: {
              ...summaryToJson(report.summary),
              scope,
              ...(report.subscriptionEvents?.length && { subscriptionEvents: report.subscriptionEvents.map(subscriptionEventToJson) }),
            } satisfies RunSummary as unknown as Prisma.InputJsonObject,
            totals: report.totals.map(totalsToJson) as unknown as Prisma.InputJsonArray,
          },
        });
      },
      { timeout: 60_000 },
    );
  }

  async fail(id: string, error: string): Promise<void> {
    await this.db.reconciliationRun.updateMany({
      where: { id, status: { not: 'completed' } },
      data: { status: 'failed', finishedAt: new Date(), error: error.slice(0, 2_000) },
    });
  }

  /** An attempt failed and another will come: queued again, with the reason for whoever is watching. */
  async retrying(id: string, error: string): Promise<void> {
    await this.db.reconciliationRun.updateMany({
      where: { id, status: { not: 'completed' } },
      data: { status: 'queued', progress: Prisma.DbNull, error: error.slice(0, 2_000) },
    });
  }

  async markNotified(id: string): Promise<void> {
    await this.db.reconciliationRun.updateMany({ where: { id, notifiedAt: null }, data: { notifiedAt: new Date() } });
  }

  /** A page of a run's rows in report order, after row `after` (exclusive; -1 for the first page). */
  async rows(runId: string, filter: RowFilter, after: number, limit: number): Promise<{ seq: number; row: ReconRowJson }[]> {
    const rows = await this.db.reconciliationRow.findMany({
      where: { runId, seq: { gt: after }, ...(filter === 'breaks' ? { isBreak: true } : filter === 'all' ? {} : { kind: filter }) },
      orderBy: { seq: 'asc' },
      take: limit,
      select: { seq: true, data: true },
    });
    return rows.map((r) => ({ seq: r.seq, row: r.data as unknown as ReconRowJson }));
  }

  /** Of these break keys, those an earlier run of the merchant reported already. */
  async reportedBefore(run: RunRecord, keys: string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const rows = await this.db.reconciliationRow.findMany({
      where: { merchantId: run.merchantId, key: { in: keys }, isBreak: true, runId: { not: run.id }, run: { createdAt: { lte: run.createdAt } } },
      distinct: ['key'],
      select: { key: true },
    });
    return new Set(rows.map((r) => r.key));
  }
}

/** A run as read, before its JSON columns are given their types. */
type RunColumns = Prisma.ReconciliationRunGetPayload<{ select: typeof RUN }>;

function toRecord({ periodFrom, periodTo, ...row }: RunColumns): RunRecord {
  return {
    ...row,
    sources: row.sources as RunSource[],
    trigger: row.trigger as RunTrigger,
    status: row.status as RunStatus,
    progress: row.progress as RunProgress | null,
    summary: row.summary as RunSummary | null,
    totals: row.totals as AssetTotalsJson[] | null,
    period: { from: periodFrom, to: periodTo },
  };
}
