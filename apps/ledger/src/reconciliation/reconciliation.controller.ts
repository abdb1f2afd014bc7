import { randomUUID } from 'node:crypto';
import { Body, Controller, Get, Header, HttpCode, Inject, Param, Post, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ProblemError } from '@mp/platform';
import type { ReconRowJson } from '@mp/reconciliation';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';
import { RECON_MERCHANT, type MerchantResolver } from './reconciliation.ports';
import { ReconciliationQueue } from './reconciliation.queue';
import { parseReadQuery, parseRowsQuery, parseRunId, parseRunRequest } from './reconciliation.requests';
import { ReportLinks } from './report-links';
import { RunAccess } from './run-access';
import { RunRepository } from './run.repository';
import { runView, type RunView } from './run-view';

export interface RowPage {
  data: ReconRowJson[];
  /** pass as `cursor` for the next page; null on the last page */
  nextCursor: string | null;
}

/**
 * Reconciliation runs of the merchant whose API key calls: start one (a worker does it, see GET for progress), read
 * its status, summary and totals, and its rows. The CSV and HTML forms are in reports/.
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
  ) {}

  @Post()
  @HttpCode(202)
  @Header('cache-control', 'no-store')
  async start(@Req() request: Request, @Res({ passthrough: true }) response: Response, @Body() body: unknown): Promise<RunView> {
    const merchantId = await this.merchants.merchantOf(request, response);
    const wanted = parseRunRequest(body, this.config.maxPeriodDays);
    if (wanted.merchantId && wanted.merchantId !== merchantId) {
      throw new ProblemError('validation_failed', 'invalid body member(s): merchantId', { invalidParams: [{ name: 'merchantId', reason: "is not the API key's merchant" }] });
    }
    const id = randomUUID();
    await this.runs.create({ id, merchantId, period: wanted.period, trigger: 'api' });
    try {
      await this.queue.enqueue(id);
    } catch (error) {
      await this.runs.fail(id, 'the reconciliation queue was unavailable; start another run');
      throw error;
    }
    response.setHeader('location', `/reconciliations/${id}`);
    return runView((await this.runs.findForWork(id))!, this.links.token(id));
  }

  @Get(':id')
  @Header('cache-control', 'no-store')
  async get(@Req() request: Request, @Res({ passthrough: true }) response: Response, @Param('id') id: string, @Query() query: unknown): Promise<RunView> {
    const run = await this.access.readable(request, response, parseRunId(id), parseReadQuery(query).token);
    return runView(run, this.links.token(run.id));
  }

  @Get(':id/rows')
  @Header('cache-control', 'no-store')
  async rows(@Req() request: Request, @Res({ passthrough: true }) response: Response, @Param('id') id: string, @Query() query: unknown): Promise<RowPage> {
    const { filter, limit, after, token } = parseRowsQuery(query);
    const run = await this.access.readable(request, response, parseRunId(id), token);
    const page = await this.runs.rows(run.id, filter, after, limit + 1);
    const data = page.slice(0, limit);
    return { data: data.map((r) => r.row), nextCursor: page.length > limit ? String(data.at(-1)!.seq) : null };
  }
}
