import { volumeHistory } from '../history';
import { reconcile } from '../reconcile';
import { bookedAs, chainLog, LATER, PERIOD, stripePayment, USDC, WINDOW_MS } from '../../test/entries';
import { renderReportHtml } from './report-html';

describe('renderReportHtml', () => {
  const hostile = '<script>alert(1)</script>"\'&';
  const log = chainLog(1, 0, 1_500_000n);
  const report = reconcile({
    ledger: [{ ...bookedAs('l1', log), amount: 1_000_000n }],
    external: [log, { ...stripePayment('pi_1', 1234n, 'chal_1'), reference: hostile }],
    period: PERIOD,
    pendingWindowMs: WINDOW_MS,
    now: LATER,
  });
  const html = renderReportHtml(report, volumeHistory(report), { merchantId: hostile, assets: [{ asset: USDC, symbol: 'USDC', decimals: 6 }], links: { csv: '/r/1.csv?a=1&b=2' } });

  it('is one self-contained page: no scripts, no external assets', () => {
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html).not.toMatch(/<script|<link|\ssrc=|url\(/i);
    expect(html).toContain('<svg');
    expect(html).toContain('<style>');
  });

  it('escapes everything that comes from the data', () => {
    expect(html).not.toContain('<script>alert(1)</script>');
    expect(html).toContain('&#60;script&#62;alert(1)&#60;/script&#62;&#34;&#39;&#38;');
    expect(html).toContain('href="/r/1.csv?a=1&#38;b=2"');
  });

  it('shows the summary, totals in asset units and the table of breaks', () => {
    expect(html).toContain('2 breaks to resolve');
    expect(html).toContain('USDC on eip155:31337');
    expect(html).toContain('1.5 USDC');
    expect(html).toContain('0.5 USDC'); // the mismatch
    expect(html).toContain('12.34 USD');
    expect(html.match(/<tr data-kind="(missing_in_ledger|amount_mismatch)">/g)).toHaveLength(2);
  });

  it('says so when there is nothing to resolve', () => {
    const clean = reconcile({ ledger: [bookedAs('l1', log)], external: [log], period: PERIOD, pendingWindowMs: WINDOW_MS, now: LATER });
    const page = renderReportHtml(clean, volumeHistory(clean));
    expect(page).toContain('Clean: nothing to resolve');
    expect(page).toContain('No breaks');
    expect(page).toContain('units'); // decimals unknown without asset info
  });
});
