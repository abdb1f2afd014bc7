import { Inject, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { ProblemError } from '@mp/platform';
import { RECON_MERCHANT, type MerchantResolver } from './reconciliation.ports';
import { ReportLinks } from './report-links';
import { RunRepository, type RunRecord } from './run.repository';

export interface ReadableRun {
  run: RunRecord;
  /**
   * The link token to show with what is read: the one the reader came with (its expiry stays as it was), or a new
   * one for the merchant reading with its API key.
   */
  token: string;
}

/**
 * Who may read a run: its merchant (by API key, through the bound MerchantResolver), or anyone holding a live signed
 * link to it. Another merchant's run answers 404, like one that does not exist.
 */
@Injectable()
export class RunAccess {
  constructor(
    @Inject(RECON_MERCHANT) private readonly merchants: MerchantResolver,
    private readonly runs: RunRepository,
    private readonly links: ReportLinks,
  ) {}

  async readable(request: Request, response: Response, runId: string, token?: string): Promise<ReadableRun> {
    if (token !== undefined) {
      const linked = await this.runs.findForWork(runId);
      if (linked && this.links.verify(linked, token)) return { run: linked, token };
    }
    const run = await this.runs.find(await this.merchantOf(request, response, token !== undefined), runId);
    if (!run) throw new ProblemError('not_found', `no reconciliation ${runId}`);
    return { run, token: this.links.issue(run) };
  }

  /** The merchant's own run by API key (no link opens this): 404 for another merchant's run. */
  async owned(request: Request, response: Response, runId: string): Promise<RunRecord> {
    const run = await this.runs.find(await this.merchants.merchantOf(request, response), runId);
    if (!run) throw new ProblemError('not_found', `no reconciliation ${runId}`);
    return run;
  }

  private async merchantOf(request: Request, response: Response, hadToken: boolean): Promise<string> {
    try {
      return await this.merchants.merchantOf(request, response);
    } catch (error) {
      // say why the link failed rather than only asking for an API key the link's holder does not have
      if (hadToken && error instanceof ProblemError && error.code === 'unauthorized') {
        throw new ProblemError(
          'unauthorized',
          'this report link has expired, was revoked, or is not for this reconciliation; ask the merchant for a new link (or use an API key)',
        );
      }
      throw error;
    }
  }
}
