import { createHmac, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';

/**
 * Signed read links to one run (`?token=<expiry>.<hmac>`): an operator opens the HTML report in a browser, which
 * cannot send an API key. A token reads that run only (JSON, rows, CSV, report) until it expires.
 */
@Injectable()
export class ReportLinks {
  constructor(@Inject(RECON_CONFIG) private readonly config: ReconciliationConfig) {}

  token(runId: string, now = new Date()): string {
    const expires = Math.floor(now.getTime() / 1000) + this.config.reportLinkTtlSeconds;
    return `${expires}.${this.mac(runId, expires)}`;
  }

  verify(runId: string, token: string, now = new Date()): boolean {
    const match = /^([1-9][0-9]{0,11})\.([A-Za-z0-9_-]{43})$/.exec(token);
    if (!match || Number(match[1]) <= now.getTime() / 1000) return false;
    const expected = Buffer.from(this.mac(runId, Number(match[1])));
    const given = Buffer.from(match[2]);
    return expected.length === given.length && timingSafeEqual(expected, given);
  }

  reportPath(runId: string): string {
    return `/reconciliations/${runId}/report?token=${this.token(runId)}`;
  }

  private mac(runId: string, expires: number): string {
    return createHmac('sha256', this.config.reportLinkSecret).update(`reconciliation-report:${runId.toLowerCase()}:${expires}`).digest('base64url');
  }
}
