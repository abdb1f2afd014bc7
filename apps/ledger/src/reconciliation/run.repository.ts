import { Injectable } from '@nestjs/common';
import { PrismaService, withTransaction } from '@mp/db';
import { rowToJson, summaryToJson, totalsToJson, type AssetTotalsJson, type Period, type ReconReport, type ReconRowJson, type ReconSummaryJson, type RowKind } from '@mp/reconciliation';

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

export type RunSummary = ReconSummaryJson & { scope: RunScope };

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

const COLUMNS = `id, merchant_id AS "merchantId", period_from AS "periodFrom", period_to AS "periodTo", sources, trigger, status, progress, summary, totals,
  error, notified_at AS "notifiedAt", created_at AS "createdAt", started_at AS "startedAt", finished_at AS "finishedAt", link_generation AS "linkGeneration"`;
/** The partial unique index that keeps one queued or running run per merchant (see its migration). */
const ONE_IN_FLIGHT = 'reconciliation_runs_one_in_flight_key';
/** Rows per INSERT statement when a report is stored. */
const INSERT_CHUNK = 2_000;

type RunRow = Omit<RunRecord, 'period'> & { periodFrom: Date; periodTo: Date };

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
    // a conflict on either the id or the one-in-flight index inserts nothing; which one it was is read after
    const inserted = await this.db.$executeRawUnsafe(
      `INSERT INTO ledger.reconciliation_runs (id, merchant_id, period_from, period_to, sources, trigger, status)
       VALUES ($1::uuid, $2::uuid, $3, $4, $5::text[], $6, 'queued') ON CONFLICT DO NOTHING`,
      run.id,
      run.merchantId,
      run.period.from,
      run.period.to,
      [...run.sources].sort(),
      run.trigger,
    );
    if (inserted === 1) return { created: true };
    const inFlight = await this.inFlight(run.merchantId);
    return { created: false, ...(inFlight && { inFlight }) };
  }

  /** The merchant's queued or running run, if any (at most one: see ONE_IN_FLIGHT). */
  async inFlight(merchantId: string): Promise<RunRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<RunRow[]>(
      `SELECT ${COLUMNS} FROM ledger.reconciliation_runs WHERE merchant_id = $1::uuid AND status IN ('queued', 'running') /* ${ONE_IN_FLIGHT} */`,
      merchantId,
    );
    return rows[0] && toRecord(rows[0]);
  }

  /**
   * A page of the merchant's runs, newest first (creation time, then id), after `after` (exclusive). Positions are in
   * microseconds, PostgreSQL's precision: a JavaScript Date would round two runs of one millisecond together.
   */
  async list(merchantId: string, limit: number, after?: RunPosition): Promise<{ runs: RunRecord[]; next?: RunPosition }> {
    const rows = await this.db.$queryRawUnsafe<(RunRow & { createdMicros: string })[]>(
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
    const rows = await this.db.$queryRawUnsafe<RunRow[]>(
      `UPDATE ledger.reconciliation_runs SET link_generation = link_generation + 1 WHERE id = $1::uuid AND merchant_id = $2::uuid RETURNING ${COLUMNS}`,
      id,
      merchantId,
    );
    return rows[0] && toRecord(rows[0]);
  }

  /** A merchant's own run: another merchant's is as absent as one that does not exist. */
  async find(merchantId: string, id: string): Promise<RunRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<RunRow[]>(`SELECT ${COLUMNS} FROM ledger.reconciliation_runs WHERE id = $1::uuid AND merchant_id = $2::uuid`, id, merchantId);
    return rows[0] && toRecord(rows[0]);
  }

  async findForWork(id: string): Promise<RunRecord | undefined> {
    const rows = await this.db.$queryRawUnsafe<RunRow[]>(`SELECT ${COLUMNS} FROM ledger.reconciliation_runs WHERE id = $1::uuid`, id);
    return rows[0] && toRecord(rows[0]);
  }

  async start(id: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE ledger.reconciliation_runs SET status = 'running', started_at = now(), progress = NULL, error = NULL WHERE id = $1::uuid AND status <> 'completed'`,
      id,
    );
  }

  async progress(id: string, progress: RunProgress): Promise<void> {
    await this.db.$executeRawUnsafe(`UPDATE ledger.reconciliation_runs SET progress = $2::jsonb WHERE id = $1::uuid AND status = 'running'`, id, JSON.stringify(progress));
  }

  /** Stores the report's rows and completes the run, in one transaction: a run has all its rows or none. */
  async complete(run: RunRecord, report: ReconReport, scope: RunScope): Promise<void> {
    const rows = report.rows.map(rowToJson);
    await withTransaction(this.db, async (tx) => {
      for (let start = 0; start < rows.length; start += INSERT_CHUNK) {
        const chunk = rows.slice(start, start + INSERT_CHUNK);
        await tx.$executeRawUnsafe(
          `INSERT INTO ledger.reconciliation_rows (run_id, merchant_id, seq, kind, is_break, key, source, asset, entry_kind, reference, occurred_at, data)
           SELECT $1::uuid, $2::uuid, r.seq, r.kind, r.kind NOT IN ('matched', 'pending'), r.key, r.source, r.asset, r.entry_kind, r.reference, r.occurred_at::timestamptz, r.data::jsonb
             FROM unnest($3::int[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[])
                  AS r(seq, kind, key, source, asset, entry_kind, reference, occurred_at, data)`,
          run.id,
          run.merchantId,
          chunk.map((_, i) => start + i),
          chunk.map((r) => r.kind),
          chunk.map((r) => r.key),
          chunk.map((r) => r.source),
          chunk.map((r) => r.asset),
          chunk.map((r) => r.entryKind),
          chunk.map((r) => r.reference),
          chunk.map((r) => r.occurredAt),
          chunk.map((r) => JSON.stringify(r)),
        );
      }
      await tx.$executeRawUnsafe(
        `UPDATE ledger.reconciliation_runs SET status = 'completed', finished_at = now(), progress = NULL, summary = $2::jsonb, totals = $3::jsonb WHERE id = $1::uuid`,
        run.id,
        JSON.stringify({ ...summaryToJson(report.summary), scope } satisfies RunSummary),
        JSON.stringify(report.totals.map(totalsToJson)),
      );
    }, { timeout: 60_000 });
  }

  async fail(id: string, error: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE ledger.reconciliation_runs SET status = 'failed', finished_at = now(), error = $2 WHERE id = $1::uuid AND status <> 'completed'`,
      id,
      error.slice(0, 2_000),
    );
  }

  /** An attempt failed and another will come: queued again, with the reason for whoever is watching. */
  async retrying(id: string, error: string): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE ledger.reconciliation_runs SET status = 'queued', progress = NULL, error = $2 WHERE id = $1::uuid AND status <> 'completed'`,
      id,
      error.slice(0, 2_000),
    );
  }

  async markNotified(id: string): Promise<void> {
    await this.db.$executeRawUnsafe(`UPDATE ledger.reconciliation_runs SET notified_at = now() WHERE id = $1::uuid AND notified_at IS NULL`, id);
  }

  /** A page of a run's rows in report order, after row `after` (exclusive; -1 for the first page). */
  async rows(runId: string, filter: RowFilter, after: number, limit: number): Promise<{ seq: number; row: ReconRowJson }[]> {
    const where = filter === 'all' ? '' : filter === 'breaks' ? 'AND is_break' : 'AND kind = $4';
    const parameters: unknown[] = [runId, after, limit, ...(where.includes('$4') ? [filter] : [])];
    return this.db.$queryRawUnsafe<{ seq: number; row: ReconRowJson }[]>(
      `SELECT seq, data AS row FROM ledger.reconciliation_rows WHERE run_id = $1::uuid AND seq > $2 ${where} ORDER BY seq LIMIT $3`,
      ...parameters,
    );
  }

  /** Of these break keys, those an earlier run of the merchant reported already. */
  async reportedBefore(run: RunRecord, keys: string[]): Promise<Set<string>> {
    if (keys.length === 0) return new Set();
    const rows = await this.db.$queryRawUnsafe<{ key: string }[]>(
      `SELECT DISTINCT r.key FROM ledger.reconciliation_rows r JOIN ledger.reconciliation_runs run ON run.id = r.run_id
        WHERE r.merchant_id = $1::uuid AND r.key = ANY($2::text[]) AND r.is_break AND r.run_id <> $3::uuid AND run.created_at <= $4`,
      run.merchantId,
      keys,
      run.id,
      run.createdAt,
    );
    return new Set(rows.map((r) => r.key));
  }
}

function toRecord({ periodFrom, periodTo, ...row }: RunRow): RunRecord {
  return { ...row, period: { from: periodFrom, to: periodTo } };
}
