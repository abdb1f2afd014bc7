import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Browser } from 'playwright-core';
import { launchChromium } from '../../../test/support/browser';
import { testChain } from '../../../test/support/chain';
import { ReconMerchant, startReconWorld, type ReconWorld } from './support/recon-world';

const ROOT = path.resolve(__dirname, '../../..');
const ARTIFACTS = path.join(ROOT, '.local/artifacts');
/** The test chain's explorer, as an operator would configure one (RECON_EXPLORER_URLS): only its links are checked. */
const EXPLORER = 'https://explorer.example';

/**
 * The reports people read: the HTML page in a real browser, the CSV, and the CLI with its progress, over a book the
 * real ledger kept (a settlement and a Stripe payment it ingested, a transfer booked through its API).
 */
describe('reconciliation reports', () => {
  const from = new Date(Date.now() - 60_000).toISOString();
  const to = new Date(Date.now() + 10 * 60_000).toISOString();

  let world: ReconWorld;
  let merchant: ReconMerchant;
  let USDC: string;
  let browser: Browser | undefined;
  let run: any;
  let recon: { url: string };

  beforeAll(async () => {
    world = await startReconWorld({ RECON_STRIPE_FEES: 'false', RECON_EXPLORER_URLS: `${testChain().manifest.network}=${EXPLORER}/` });
    recon = { url: world.ledger.url };
    USDC = world.USDC;
    merchant = await ReconMerchant.create(world, 'report e2e');

    // paid: settled by the facilitator and ingested; short: booked for more than arrived; a third transfer never booked
    await merchant.settle(2_500_000n, 5);
    const short = await merchant.transfer(1_000_000n, 5);
    await merchant.book({ asset: USDC, code: 'payment', reference: short.reference, amount: 1_250_000n });
    await merchant.transfer(300_000n, 5);
    // a card payment through MPP and Stripe, then a refund the ledger never hears of
    const { paymentIntent } = await merchant.payWithStripe('4200');
    await world.stripe.buyer.refunds.create({ payment_intent: paymentIntent, amount: 1_000 });
  });

  afterAll(async () => {
    await browser?.close();
    await world?.close();
  });

  const authorized = () => ({ authorization: `Bearer ${merchant.apiKey}` });

  /**
   * Runs the CLI against the test ledger, as `npm run recon -- …` does; stderr is a pipe, not a terminal. The key goes
   * in LEDGER_API_KEY, as the docs say, unless `key` says --api-key (or nothing).
   */
  const cli = (args: string[], key: 'env' | 'flag' | 'none' = 'env') =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = spawn(
        process.execPath,
        [path.join(ROOT, 'scripts/recon.mjs'), ...args, '--ledger-url', recon.url, ...(key === 'flag' ? ['--api-key', merchant.apiKey] : [])],
        {
          env: { PATH: process.env.PATH, ...(key === 'env' && { LEDGER_API_KEY: merchant.apiKey }) },
        },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk) => (stdout += chunk));
      child.stderr.on('data', (chunk) => (stderr += chunk));
      child.on('close', (code) => resolve({ code, stdout, stderr }));
    });

  it('the CLI runs a reconciliation with progress, prints the summary and the report link, and exits 1 on breaks', async () => {
    const csvFile = path.join(mkdtempSync(path.join(tmpdir(), 'recon-')), 'report.csv');
    const result = await cli(['--merchant', merchant.merchantId, '--from', from, '--to', to, '--csv', csvFile]);
    expect(result.code, result.stderr).toBe(1);
    const progress = result.stderr.trim().split('\n');
    expect(progress[0]).toMatch(/^reconciling (queued|\d+% \w+)/);
    expect(progress.at(-1)).toBe('reconciling 100% done');
    expect(result.stdout).toContain(`of merchant ${merchant.merchantId}`);
    expect(result.stdout).toMatch(/Rows +5: 2 matched, 0 pending, 3 breaks/);
    expect(result.stdout).toContain('missing in ledger 2 · missing externally 0 · amount mismatch 1 · duplicate 0');
    expect(result.stdout).toMatch(new RegExp(`${USDC} +chain +3750000 +3800000 +50000 +2`));
    const reportUrl = /^Report +(\S+)$/m.exec(result.stdout)![1];
    expect(reportUrl).toMatch(new RegExp(`^${recon.url}/reconciliations/[0-9a-f-]{36}/report\\?token=`));
    run = await (await fetch(`${recon.url}/reconciliations/${/reconciliations\/([0-9a-f-]{36})/.exec(reportUrl)![1]}`, { headers: authorized() })).json();
    expect(run.summary.breaks).toBe(3);
    // Stripe's fees are not reconciled here (RECON_STRIPE_FEES=false): the ledger's fee entry is left out, and said so
    expect(run.summary.scope).toEqual({ reconciled: ['chain/payment', 'chain/refund', 'stripe/payment', 'stripe/refund'], leftOut: 1 });

    const csv = readFileSync(csvFile, 'utf8').split('\r\n');
    expect(csv[0]).toMatch(/^row_kind,source,asset,entry_kind,reference,/);
    expect(csv[0]).toMatch(
      /,ledger_amount,.*,external_amount,difference,.*,asset_symbol,ledger_amount_decimal,external_amount_decimal,difference_decimal,subscription_id,subscription_period,subscription_attempt,captured,refunded,expected,actual,details$/,
    );
    expect(csv).toHaveLength(run.summary.rows + 2);
    // atomic units, and beside them the token's decimals as its contract gives them, and cents as dollars
    const mismatch = csv.filter((line) => line.startsWith('amount_mismatch,chain,'));
    expect(mismatch).toHaveLength(1);
    expect(mismatch[0]).toContain(',1250000,');
    // then the (empty) subscription and over_refund columns, and the balance checks'
    expect(mismatch[0].endsWith(',USDC,1.25,1,-0.25,,,,,,,,')).toBe(true);
    const refund = csv.find((line) => line.startsWith('missing_in_ledger,stripe,stripe/usd,refund,'))!;
    expect(refund.endsWith(',USD,,10,,,,,,,,,')).toBe(true);
  });

  it('the CLI takes its key from --api-key too, and says so when it has none', async () => {
    const flagged = await cli(['--merchant', merchant.merchantId, '--from', '2020-01-01T00:00:00Z', '--to', '2020-01-02T00:00:00Z', '--json'], 'flag');
    expect(flagged.code, flagged.stderr).toBe(0);
    const keyless = await cli(['--merchant', merchant.merchantId, '--from', '2020-01-01T00:00:00Z', '--to', '2020-01-02T00:00:00Z'], 'none');
    expect(keyless.code).toBe(3);
    expect(keyless.stderr).toContain('POST /reconciliations: 401');
  });

  it('the CLI exits 0 on a clean period, prints the run as JSON with --json, and 2 on a usage error', async () => {
    const clean = await cli(['--merchant', merchant.merchantId, '--from', '2020-01-01T00:00:00Z', '--to', '2020-01-02T00:00:00Z', '--json']);
    expect(clean.code, clean.stderr).toBe(0);
    expect(JSON.parse(clean.stdout)).toMatchObject({ status: 'completed', summary: { rows: 0, breaks: 0 } });
    const usage = await cli(['--merchant', 'nope', '--from', from, '--to', to]);
    expect(usage.code).toBe(2);
    expect(usage.stderr).toContain('--merchant must be the merchant id');
    const refused = await cli(['--merchant', merchant.merchantId, '--from', to, '--to', from]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain('to: must be after from');
  });

  it('serves the CSV to the merchant as a download', async () => {
    const response = await fetch(`${recon.url}/reconciliations/${run.id}.csv`, { headers: authorized() });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(response.headers.get('content-disposition')).toBe(`attachment; filename="reconciliation-${run.id}.csv"`);
    expect((await fetch(`${recon.url}/reconciliations/${run.id}.csv`)).status).toBe(401);
  });

  it('the HTML report opens in headless Chromium from its signed link: summary, totals, chart and breaks', async () => {
    browser = await launchChromium();
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const requests: string[] = [];
    const problems: string[] = [];
    page.on('request', (request) => requests.push(request.url()));
    page.on('console', (message) => message.type() === 'error' && problems.push(message.text()));
    page.on('pageerror', (error) => problems.push(error.message));

    const response = await page.goto(`${recon.url}${run.links.report}`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("default-src 'none'");
    await expect(page.title()).resolves.toContain('Reconciliation report');
    expect(await page.locator('.status').textContent()).toBe('3 breaks to resolve');

    const card = (kind: string) => page.locator(`[data-testid=summary] [data-kind=${kind}] .count`).textContent();
    expect([await card('matched'), await card('missing_in_ledger'), await card('amount_mismatch')]).toEqual(['2', '2', '1']);

    const totals = page.locator('[data-testid=totals] tbody tr');
    expect(await totals.count()).toBe(2);
    const usdcRow = (await page.locator(`[data-testid=totals] tr[data-asset="${USDC}"]`).innerText()).split('\t');
    expect(usdcRow).toEqual(['USDC on eip155:31337', 'chain', '2', '3.75 USDC', '3', '3.8 USDC', '1', '0', '2', '0.05 USDC']);
    expect(await page.locator('[data-testid=totals] tr[data-asset="stripe/usd"]').innerText()).toContain('32 USD');

    expect(await page.locator('[data-testid=chart] svg rect.volume').count()).toBeGreaterThan(0);
    const charts = await page.locator('[data-testid=chart] svg').evaluateAll((svgs) => svgs.map((svg) => svg.getAttribute('aria-label')));
    expect(charts).toEqual(['USDC on eip155:31337: payment volume and breaks per minute', 'USD (Stripe): payment volume and breaks per minute']);

    const breaks = page.locator('[data-testid=breaks] tbody tr');
    const kinds = await breaks.evaluateAll((rows) => rows.map((row) => row.getAttribute('data-kind')));
    expect(kinds.sort()).toEqual(['amount_mismatch', 'missing_in_ledger', 'missing_in_ledger']);
    expect(await page.locator('[data-testid=breaks]').innerText()).toContain('-0.25 USDC');

    // each reference links to where it can be looked at: the explorer's transaction page, Stripe's (test mode) dashboard
    const linked = await page.locator('[data-testid=breaks] tbody tr').evaluateAll((rows) =>
      rows.map((row) => ({
        kind: row.getAttribute('data-kind'),
        reference: row.querySelector('code')!.textContent!,
        href: row.querySelector('a')?.getAttribute('href') ?? null,
      })),
    );
    expect(linked).toHaveLength(3);
    for (const { reference, href } of linked) {
      if (reference.startsWith('0x')) expect(href).toBe(`${EXPLORER}/tx/${reference.split(':')[0]}`);
      else expect(href).toBe(`https://dashboard.stripe.com/test/refunds/${reference}`);
    }
    expect(linked.filter((l) => l.reference.startsWith('re_'))).toHaveLength(1);

    mkdirSync(ARTIFACTS, { recursive: true });
    await page.screenshot({ path: path.join(ARTIFACTS, 'reconciliation-report.png'), fullPage: true });
    expect(requests).toEqual([`${recon.url}${run.links.report}`]);
    expect(problems).toEqual([]);
  });
});
