import fc from 'fast-check';
import { reportFromJson, reportToJson } from './json';
import { reconcile } from './reconcile';
import { bookedAs, chainLog, LATER, PERIOD, stripePayment, stripeRefund, WINDOW_MS } from '../test/entries';

describe('report JSON', () => {
  it('round-trips any report exactly, with amounts as decimal strings', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 2n ** 256n - 1n }), fc.bigInt({ min: 1n, max: 2n ** 256n - 1n }), (a, b) => {
        const log = chainLog(1, 0, a);
        const payment = stripePayment('pi_1', b, 'chal_1');
        const report = reconcile({
          ledger: [{ ...bookedAs('l1', log), amount: b }],
          external: [log, payment, stripeRefund('re_1', 'pi_1', 1n)],
          period: PERIOD,
          pendingWindowMs: WINDOW_MS,
          now: LATER,
        });
        const json = JSON.parse(JSON.stringify(reportToJson(report)));
        expect(reportFromJson(json)).toEqual(report);
        expect(json.rows.find((r: { ledger?: unknown }) => r.ledger).ledger.amount).toBe(b.toString());
        expect(typeof json.totals[0].difference).toBe('string');
      }),
      { numRuns: 50 },
    );
  });
});
