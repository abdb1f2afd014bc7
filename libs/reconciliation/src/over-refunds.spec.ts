import { bookedAs, LATER, ledgerEntry, PERIOD, stripePayment, stripeRefund, USD, WINDOW_MS } from '../test/entries';
import { adviceFor } from './advice';
import { toCsv } from './csv';
import { volumeHistory } from './history';
import { renderReportHtml } from './html/report-html';
import { reportFromJson, reportToJson } from './json';
import { CAPTURED_DETAIL, REFUND_OF_DETAIL, type ExternalEntry, type LedgerEntry } from './model';
import { reconcile } from './reconcile';

/** A Stripe refund as the scanner reads it: it names its PaymentIntent and what that captured. */
const refundOf = (re: string, pi: string, amount: bigint, captured: bigint, time?: string): ExternalEntry => {
  const refund = stripeRefund(re, pi, amount, time);
  return { ...refund, details: { ...refund.details, [REFUND_OF_DETAIL]: pi, [CAPTURED_DETAIL]: String(captured) } };
};
const run = (ledger: LedgerEntry[], external: ExternalEntry[]) => reconcile({ ledger, external, period: PERIOD, pendingWindowMs: WINDOW_MS, now: LATER });

describe('over_refund', () => {
  const payment = stripePayment('pi_1', 1_000n, 'chal_1');

  it('is one break per payment whose booked refunds add up to more than it captured', () => {
    const refunds = [refundOf('re_1', 'pi_1', 600n, 1_000n), refundOf('re_2', 'pi_1', 400n, 1_000n, '12:00:00')];
    // the second refund booked at 500: Stripe says 400, and together the ledger gives back 1 100 of 1 000
    const report = run([bookedAs('p', payment), bookedAs('r1', refunds[0]), { ...bookedAs('r2', refunds[1]), amount: 500n }], [payment, ...refunds]);
    const over = report.rows.filter((r) => r.kind === 'over_refund');
    expect(over).toEqual([
      expect.objectContaining({
        source: 'stripe',
        asset: USD,
        reference: 'pi_1',
        captured: 1_000n,
        refunded: 1_100n,
        difference: -100n,
        refunds: ['r1', 'r2'],
      }),
    ]);
    expect(report.summary.counts).toMatchObject({ matched: 2, amount_mismatch: 1, over_refund: 1 });
    expect(report.summary.breaks).toBe(2);
    expect(report.totals[0].breaks.over_refund).toBe(1);
    // the break is not an entry: it adds nothing to either side's totals
    expect(report.summary).toMatchObject({ ledgerEntries: 3, externalEntries: 3 });
    expect(adviceFor(over[0])).toContain('correct it by -100');
  });

  it('counts a refund booked by its PaymentIntent, and none when the refunds stay within what was captured', () => {
    const refund = refundOf('re_1', 'pi_1', 1_000n, 1_000n);
    const within = run([bookedAs('p', payment), bookedAs('r1', refund)], [payment, refund]);
    expect(within.summary.breaks).toBe(0);
    // a refund Stripe does not have, booked against the PaymentIntent: it counts against what re_1 says pi_1 captured
    const extra = ledgerEntry('r2', { source: 'stripe', asset: USD, kind: 'refund', reference: 'pi_1', amount: 1n });
    const over = run([bookedAs('p', payment), bookedAs('r1', refund), extra], [payment, refund]);
    expect(over.rows.filter((r) => r.kind !== 'matched').map((r) => [r.kind, r.reference])).toEqual(
      expect.arrayContaining([
        ['missing_externally', 'pi_1'],
        ['over_refund', 'pi_1'],
      ]),
    );
  });

  it('survives JSON, and shows in CSV and in the HTML report with the subscription charges and events', () => {
    const refunds = [refundOf('re_1', 'pi_1', 1_000n, 1_000n)];
    const charge = { ...bookedAs('p', payment), subscription: { id: 'sub-aaaaaaaaaaaaaaaa', periodIndex: 3, attempt: 1 } };
    const report = run([charge, bookedAs('r1', refunds[0]), { ...bookedAs('r2', refunds[0]), id: 'r2', reference: 'pi_1', amount: 5n }], [payment, ...refunds]);
    report.subscriptionEvents = [
      {
        subscriptionId: 'sub-aaaaaaaaaaaaaaaa',
        kind: 'charge_failed',
        at: PERIOD.from,
        asset: USD,
        periodIndex: 4,
        attempt: 0,
        amount: 1_000n,
        detail: 'card_declined',
      },
      { subscriptionId: 'sub-aaaaaaaaaaaaaaaa', kind: 'canceled', at: PERIOD.from, asset: USD, detail: 'canceled_now' },
    ];
    const back = reportFromJson(JSON.parse(JSON.stringify(reportToJson(report))));
    expect(back).toEqual(report);

    const csv = toCsv(report).split('\r\n');
    const header = csv[0].split(',');
    const col = (line: string, name: string) => line.split(',')[header.indexOf(name)];
    const chargeLine = csv.find((l) => l.includes(',p,'))!;
    expect([col(chargeLine, 'subscription_id'), col(chargeLine, 'subscription_period'), col(chargeLine, 'subscription_attempt')]).toEqual([
      'sub-aaaaaaaaaaaaaaaa',
      '3',
      '1',
    ]);
    const overLine = csv.find((l) => l.startsWith('over_refund'))!;
    // its advice is quoted (it holds commas): the two last columns are captured and refunded
    expect(header.slice(-5, -3)).toEqual(['captured', 'refunded']);
    expect(overLine.split(',').slice(-5, -3)).toEqual(['1000', '1005']);

    const html = renderReportHtml(report, volumeHistory(report));
    expect(html).toContain('Subscriptions and refunds');
    expect(html.match(/<tr data-charge="matched">/g)).toHaveLength(1);
    expect(html).toContain('sub-aaaaaaaaaaaaaaaa');
    expect(html.match(/<tr data-refund="/g)).toHaveLength(3);
    expect(html).toContain('<tr data-refund="over_refund">');
    expect(html).toContain('10.05 USD of 10 USD captured');
    expect(html.match(/<tr data-event="(charge_failed|canceled)">/g)).toHaveLength(2);
    expect(html).toContain('card_declined');
  });

  it('leaves the section out of a report without subscriptions or refunds', () => {
    const report = run([bookedAs('p', payment)], [payment]);
    expect(renderReportHtml(report, volumeHistory(report))).not.toContain('Subscriptions and refunds');
  });
});
