import { volumeHistory } from '../history';
import { reconcile } from '../reconcile';
import { bookedAs, chainLog, LATER, PERIOD, stripePayment, txHash, USDC, WINDOW_MS } from '../../test/entries';
import { referenceUrl } from './reference-links';
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
  const html = renderReportHtml(report, volumeHistory(report), {
    merchantId: hostile,
    assets: [{ asset: USDC, symbol: 'USDC', decimals: 6 }],
    links: { csv: '/r/1.csv?a=1&b=2' },
  });

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

describe('reference links in the report', () => {
  const log = chainLog(7, 2, 1_000n);
  const report = reconcile({ ledger: [], external: [log, stripePayment('pi_3Abc', 500n, 'chal_9')], period: PERIOD, pendingWindowMs: WINDOW_MS, now: LATER });
  const network = USDC.slice(0, USDC.indexOf('/'));

  it('links chain references to the explorer of their network and Stripe ids to the dashboard of the key mode', () => {
    const html = renderReportHtml(report, volumeHistory(report), { references: { explorers: { [network]: 'https://explorer.example/' }, stripeMode: 'test' } });
    expect(html).toContain(`<a href="https://explorer.example/tx/${txHash(7)}" rel="noopener noreferrer" target="_blank"><code>${txHash(7)}:2</code></a>`);
    expect(html).toContain('<a href="https://dashboard.stripe.com/test/payments/pi_3Abc"');
    const live = renderReportHtml(report, volumeHistory(report), { references: { stripeMode: 'live' } });
    expect(live).toContain('href="https://dashboard.stripe.com/payments/pi_3Abc"');
  });

  it('links nothing it does not know where to find', () => {
    const html = renderReportHtml(report, volumeHistory(report), { references: { explorers: { 'eip155:1': 'https://etherscan.io' } } });
    expect(html).not.toContain('<a href="http');
    expect(html).toContain(`<code>${txHash(7)}:2</code>`);
  });
});

describe('referenceUrl', () => {
  const options = { explorers: { 'eip155:8453': 'https://basescan.org' }, stripeMode: 'live' as const };
  const hash = `0x${'ab'.repeat(32)}`;

  it.each([
    ['chain', 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', hash, `https://basescan.org/tx/${hash}`],
    ['chain', 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', `${hash.toUpperCase().replace('0X', '0x')}:12`, `https://basescan.org/tx/${hash}`],
    ['chain', 'eip155:84532/0x036cbd53842c5426634e7929541ec2318f3dcf7e', hash, undefined],
    ['chain', 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', 'not-a-hash', undefined],
    ['stripe', 'stripe/usd', 'pi_1', 'https://dashboard.stripe.com/payments/pi_1'],
    ['stripe', 'stripe/usd', 'ch_1', 'https://dashboard.stripe.com/payments/ch_1'],
    ['stripe', 'stripe/usd', 're_1', 'https://dashboard.stripe.com/refunds/re_1'],
    ['stripe', 'stripe/usd', 'txn_1', 'https://dashboard.stripe.com/search?query=txn_1'],
    ['stripe', 'stripe/usd', 'chal_1', undefined],
    ['stripe', 'stripe/usd', 'pi_1"><script>', undefined],
  ] as const)('%s %s %s → %s', (source, asset, reference, url) => {
    expect(referenceUrl(source, asset, reference, options)).toBe(url);
  });

  it('has no Stripe links without a Stripe key mode', () => {
    expect(referenceUrl('stripe', 'stripe/usd', 'pi_1', {})).toBeUndefined();
  });
});
