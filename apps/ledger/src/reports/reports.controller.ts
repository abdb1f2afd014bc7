import { Controller, Get, Header, Param, Query, Req, Res } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ApiDoc, ProblemError } from '@mp/platform';
import { RunIdPath, RunReadQuery } from '../reconciliation/reconciliation.dto';
import { RunAccess } from '../reconciliation/run-access';
import type { RunRecord } from '../reconciliation/run.repository';
import { ReportBuilder } from './report.builder';
import { REPORTS_DOCS } from './reports.openapi';

/** The page needs nothing but its own inline CSS and SVG: no script runs, nothing is fetched, nothing frames it. */
const REPORT_CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * A completed run's report for people: CSV to download, and an HTML page for a browser (also opened by the signed
 * link the API hands out, which is why `token` is accepted here). Declared before the JSON routes: `:id.csv` must
 * not be taken for a run id.
 */
@Controller('reconciliations')
export class ReportsController {
  constructor(
    private readonly access: RunAccess,
    private readonly builder: ReportBuilder,
  ) {}

  @ApiDoc(REPORTS_DOCS.csv)
  @Get(':id.csv')
  @Header('cache-control', 'no-store')
  async csv(
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
    @Param() { id }: RunIdPath,
    @Query() query: RunReadQuery,
  ): Promise<string> {
    const run = completed((await this.access.readable(request, response, id, query.token)).run);
    response.setHeader('content-type', 'text/csv; charset=utf-8; header=present');
    response.setHeader('content-disposition', `attachment; filename="reconciliation-${run.id}.csv"`);
    return this.builder.csv(run);
  }

  @ApiDoc(REPORTS_DOCS.report)
  @Get(':id/report')
  @Header('cache-control', 'no-store')
  async report(
    @Req() request: Request,
    @Res({ passthrough: true }) response: Response,
    @Param() { id }: RunIdPath,
    @Query() query: RunReadQuery,
  ): Promise<string> {
    const readable = await this.access.readable(request, response, id, query.token);
    const run = completed(readable.run);
    // the page's own links carry the token it was opened with: reading never makes a link live longer
    const { token } = readable;
    const html = await this.builder.html(run, {
      csv: `/reconciliations/${run.id}.csv?token=${token}`,
      json: `/reconciliations/${run.id}/rows?kind=breaks&token=${token}`,
    });
    response.setHeader('content-type', 'text/html; charset=utf-8');
    response.setHeader('content-security-policy', REPORT_CSP);
    response.setHeader('x-content-type-options', 'nosniff');
    // the URL carries a token: never send it on as a referrer
    response.setHeader('referrer-policy', 'no-referrer');
    return html;
  }
}

function completed(run: RunRecord): RunRecord & { summary: object } {
  if (run.status !== 'completed' || !run.summary) {
    throw new ProblemError('not_found', `reconciliation ${run.id} has no report yet (status ${run.status}); GET /reconciliations/${run.id} shows its progress`);
  }
  return run as RunRecord & { summary: object };
}
