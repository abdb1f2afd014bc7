import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Header, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiDoc, ProblemError } from '@mp/platform';
import type { ReconRowJson } from '@mp/reconciliation';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';
import { RECON_MERCHANT, type MerchantResolver } from './reconciliation.ports';
import { ReconciliationQueue } from './reconciliation.queue';
import { decodeRunCursor, encodeRunCursor, periodOf, RowsQuery, RunIdPath, RunListQuery, RunReadQuery, StartReconciliationDto } from './reconciliation.dto';
import { ReportLinks } from './report-links';
import { RunAccess } from './run-access';
import { RunRepository, type RunRecord, type RunSource } from './run.repository';
import { runView, type RunView } from './run-view';
import { StripeScanner } from '../stripe/stripe-scanner';
import { RECONCILIATION_DOCS } from './reconciliation.openapi';

/** Creating a run races the merchant's run in flight finishing: a few tries settle it. */
const CREATE_TRIES = 3;

export interface RunPage {
  /** newest first */
  data: RunView[];
  /** pass as `cursor` for the next page; null on the last page */
  nextCursor: string | null;
}

export interface RowPage {
  data: ReconRowJson[];
  /** pass as `cursor` for the next page; null on the last page */
  nextCursor: string | null;
}

/**
 * Reconciliation runs of the merchant whose API key calls: start one (a worker does it, see GET for progress), list
 * them, read one's status, summary and totals, and its rows; revoke its report links. The CSV and HTML forms are in reports/.
 * One run at a time per merchant: asking again for the run in flight (same period and sources) answers that run,
 * asking for another while one is in flight is a 409 naming it.
 */
@Controller('reconciliations')
export class ReconciliationController {
  constructor(
    @Inject(RECON_CONFIG) private readonly config: ReconciliationConfig,
    @Inject(RECON_MERCHANT) private readonly merchants: MerchantResolver,
    private readonly runs: RunRepository,
    private readonly queue: ReconciliationQueue,
    private readonly access: RunAccess,
    private readonly links: ReportLinks,
    private readonly stripe: StripeScanner,
  ) {}

  @ApiDoc(RECONCILIATION_DOCS.start, { body: StartReconciliationDto })
  @Post()
  @HttpCode(202)
  @Header('cache-control', 'no-store')
  async start(@Req() request: Request, @Res({ passthrough: true }) response: Response, @Body() body: StartReconciliationDto): Promise<RunView> {
    const merchantId = await this.merchants.merchantOf(request, response);
    const period = periodOf(body, this.config.maxPeriodDays);
    if (body.merchantId && body.merchantId !== merchantId) {
      throw new ProblemError('validation_failed', 'invalid field(s): merchantId', {
        invalidParams: [{ name: 'merchantId', reason: "is not the API key's merchant" }],
      });
    }
    const sources = this.sourcesOf(body.sources && [...body.sources].sort());
    for (let attempt = 1; ; attempt++) {
      const id = randomUUID();
      const outcome = await this.runs.create({ id, merchantId, period, sources, trigger: 'api' });
      const run = outcome.created ? (await this.runs.findForWork(id))! : outcome.inFlight;
      if (run && !outcome.created && !sameRequest(run, period, sources)) {
        throw new ProblemError(
          'reconciliation_in_progress',
          `reconciliation ${run.id} of this merchant (${run.period.from.toISOString()} to ${run.period.to.toISOString()}, ${run.sources.join('+')}) is ${run.status}: one run at a time; start this one when it has finished`,
          { runId: run.id, location: `/reconciliations/${run.id}` },
        );
      }
      if (!run) {
        // the run in flight finished between our insert and our look: try again
        if (attempt < CREATE_TRIES) continue;
        throw new ProblemError('upstream_unavailable', 'runs of this merchant kept starting and finishing while this one was asked for; try again');
      }
      try {
        // the same request again gets the run in flight, whose job is asked for again (one job per run)
        await this.queue.enqueue(run.id);
      } catch (error) {
        if (outcome.created) await this.runs.fail(run.id, 'the reconciliation queue was unavailable; start another run');
        throw error;
      }
      response.setHeader('location', `/reconciliations/${run.id}`);
      return runView(run, this.links.issue(run));
    }
  }

  /** The merchant's runs, newest first, a page at a time; another merchant's runs never appear. */
  @ApiDoc(RECONCILIATION_DOCS.list)
  @Get()
  @Header('cache-control', 'no-store')
  async list(@Req() request: Request, @Res({ passthrough: true }) response: Response, @Query() { limit = 20, cursor }: RunListQuery): Promise<RunPage> {
    const merchantId = await this.merchants.merchantOf(request, response);
    const page = await this.runs.list(merchantId, limit, cursor === undefined ? undefined : decodeRunCursor(cursor));
    return { data: page.runs.map((run) => runView(run, this.links.issue(run))), nextCursor: page.next ? encodeRunCursor(page.next) : null };
  }

  /** Every report link to the run issued so far stops working; the answer carries a new one. */
  @ApiDoc(RECONCILIATION_DOCS.revokeLinks)
  @Post(':id/report-link/revoke')
  @HttpCode(200)
  @Header('cache-control', 'no-store')
  async revokeLinks(@Req() request: Request, @Res({ passthrough: true }) response: Response, @Param() { id }: RunIdPath): Promise<RunView> {
    const merchantId = await this.merchants.merchantOf(request, response);
    const run = await this.runs.revokeLinks(merchantId, id);
    if (!run) throw new ProblemError('not_found', `no reconciliation ${id}`);
    return runView(run, this.links.issue(run));
  }

  /** What a request reconciles against: the sources it names, each configured here, or every configured source. */
  private sourcesOf(wanted: RunSource[] | undefined): RunSource[] {
    const configured: RunSource[] = ['chain', ...(this.stripe.enabled ? (['stripe'] as const) : [])];
    if (!wanted) return configured;
    const missing = wanted.filter((s) => !configured.includes(s));
    if (missing.length) {
      throw new ProblemError('validation_failed', 'invalid field(s): sources', {
        invalidParams: [{ name: 'sources', reason: `${missing.join(', ')} is not configured on this ledger (Stripe needs STRIPE_SECRET_KEY)` }],
      });
    }
    return wanted;
  }

  @ApiDoc(RECONCILIATION_DOCS.get)
  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
    @Param() { id }: RunIdPath,
    @Query() query: RunReadQuery,
  ): Promise<RunView> {
    const { run, token } = await this.access.readable(request, response, id, query.token);
    return runView(run, token);
  }

  @ApiDoc(RECONCILIATION_DOCS.rows)
  @Get(':id/rows')
  @Header('cache-control', 'no-store')
  async rows(@Req() request: Request, @Res({ passthrough: true }) response: Response, @Param() { id }: RunIdPath, @Query() query: RowsQuery): Promise<RowPage> {
    const { kind = 'all', limit = 500, cursor, token } = query;
    const after = cursor === undefined ? -1 : Number(cursor);
    const { run } = await this.access.readable(request, response, id, token);
    const page = await this.runs.rows(run.id, kind, after, limit + 1);
    const data = page.slice(0, limit);
    return { data: data.map((r) => r.row), nextCursor: page.length > limit ? String(data.at(-1)!.seq) : null };
  }
}

function sameRequest(run: RunRecord, period: { from: Date; to: Date }, sources: RunSource[]): boolean {
  return (
    run.period.from.getTime() === period.from.getTime() && run.period.to.getTime() === period.to.getTime() && run.sources.join() === [...sources].sort().join()
  );
}
