import { createHmac, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';

/** What a link is signed for: the run and its link generation (bumped when the run's links are revoked). */
export interface LinkedRun {
  id: string;
  linkGeneration: number;
}

const TOKEN = /^(0|[1-9][0-9]{0,8})\.([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/;

/**
 * Signed read links to one run (`?token=<generation>.<expiry>.<hmac>`): an operator opens the HTML report in a
 * browser, which cannot send an API key. A token reads that run only (JSON, rows, CSV, report) until it expires or
 * the run's links are revoked (its generation moves on). Reading with a token hands out that same token again, never
 * a fresher one: a link's life is fixed when it is issued.
 */
@Injectable()
export class ReportLinks {
  constructor(@Inject(RECON_CONFIG) private readonly config: ReconciliationConfig) {}

  /** A new link's token, valid for the configured TTL from `now`. */
  issue(run: LinkedRun, now = new Date()): string {
    const expires = Math.floor(now.getTime() / 1000) + this.config.reportLinkTtlSeconds;
    return `${run.linkGeneration}.${expires}.${this.mac(run.id, run.linkGeneration, expires)}`;
  }

  verify(run: LinkedRun, token: string, now = new Date()): boolean {
    const match = TOKEN.exec(token);
    if (!match || Number(match[1]) !== run.linkGeneration || Number(match[2]) <= now.getTime() / 1000) return false;
    const expected = Buffer.from(this.mac(run.id, run.linkGeneration, Number(match[2])));
    const given = Buffer.from(match[3]);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  reportPath(runId: string, token: string): string {
    return `/reconciliations/${runId}/report?token=${token}`;
  }

  private mac(runId: string, generation: number, expires: number): string {
    return createHmac('sha256', this.config.reportLinkSecret)
      .update(`reconciliation-report:${runId.toLowerCase()}:${generation}:${expires}`)
      .digest('base64url');
  }
}
