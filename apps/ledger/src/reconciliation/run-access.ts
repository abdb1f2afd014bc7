import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ProblemError } from '@mp/platform';
import { RECON_MERCHANT, type MerchantResolver } from './reconciliation.ports';
import { ReportLinks } from './report-links';
import { RunRepository, type RunRecord } from './run.repository';

/**
 * Who may read a run: its merchant (by API key, through the bound MerchantResolver), or anyone holding a signed link
 * to it. Another merchant's run answers 404, like one that does not exist.
 */
@Injectable()
export class RunAccess {
  constructor(
    @Inject(RECON_MERCHANT) private readonly merchants: MerchantResolver,
    private readonly runs: RunRepository,
    private readonly links: ReportLinks,
  ) {}

  async readable(request: Request, response: Response, runId: string, token?: string): Promise<RunRecord> {
    const run = token !== undefined && this.links.verify(runId, token) ? await this.runs.findForWork(runId) : await this.runs.find(await this.merchants.merchantOf(request, response), runId);
    if (!run) throw new ProblemError('not_found', `no reconciliation ${runId}`);
    return run;
  }
}
