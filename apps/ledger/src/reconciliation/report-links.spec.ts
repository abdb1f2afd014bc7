import { loadReconciliationConfig } from './reconciliation.config';
import { ReportLinks } from './report-links';

describe('ReportLinks', () => {
  const config = loadReconciliationConfig({
    RECON_REPORT_LINK_SECRET: 'x'.repeat(32),
    RECON_REPORT_LINK_TTL_SECONDS: '3600',
    CHAIN_MANIFEST: '/nonexistent.json',
  });
  const links = new ReportLinks(config);
  const run = { id: '6f1c1c5e-0000-4000-8000-000000000001', linkGeneration: 0 };
  const now = new Date('2026-12-01T00:00:00Z');

  it('opens the run it was made for until it expires', () => {
    const token = links.issue(run, now);
    expect(links.verify(run, token, now)).toBe(true);
    expect(links.verify({ ...run, id: run.id.toUpperCase() }, token, now)).toBe(true);
    expect(links.verify(run, token, new Date(now.getTime() + 3_599_000))).toBe(true);
    expect(links.verify(run, token, new Date(now.getTime() + 3_600_000))).toBe(false);
  });

  it('stops opening the run once its links are revoked (a new generation), and a link of the new one works', () => {
    const token = links.issue(run, now);
    const revoked = { ...run, linkGeneration: 1 };
    expect(links.verify(revoked, token, now)).toBe(false);
    const fresh = links.issue(revoked, now);
    expect(links.verify(revoked, fresh, now)).toBe(true);
    // nor does a new link open the run under the old generation
    expect(links.verify(run, fresh, now)).toBe(false);
    // the generation is signed: rewriting it in an old token does not bring the token back
    expect(links.verify(revoked, token.replace(/^0\./, '1.'), now)).toBe(false);
  });

  it('opens no other run, and refuses forged or altered tokens', () => {
    const token = links.issue(run, now);
    expect(links.verify({ ...run, id: '6f1c1c5e-0000-4000-8000-000000000002' }, token, now)).toBe(false);
    const [generation, expires, mac] = token.split('.');
    expect(links.verify(run, `${generation}.${Number(expires) + 100}.${mac}`, now)).toBe(false);
    expect(links.verify(run, `${generation}.${expires}.${mac.slice(0, -1)}${mac.endsWith('A') ? 'B' : 'A'}`, now)).toBe(false);
    expect(links.verify(run, `${expires}.${mac}`, now)).toBe(false);
    expect(links.verify(run, 'garbage', now)).toBe(false);
    const other = new ReportLinks({ ...config, reportLinkSecret: Buffer.from('y'.repeat(32)) });
    expect(other.verify(run, token, now)).toBe(false);
  });
});
