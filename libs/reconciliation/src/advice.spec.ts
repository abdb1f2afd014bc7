import { adviceFor } from './advice';
import { reconcile } from './reconcile';
import { at, bookedAs, chainLog, LATER, ledgerEntry, PERIOD, stripePayment, txHash, WINDOW_MS } from '../test/entries';

describe('adviceFor', () => {
  const log = chainLog(1, 0, 1_000n);
  const unseen = chainLog(2, 0, 300n);
  const twin = stripePayment('pi_2', 5n, 'chal_1', '10:00:09');
  const paid = chainLog(3, 0, 9n);
  const report = reconcile({
    ledger: [
      { ...bookedAs('short', log), amount: 1_250n },
      ledgerEntry('phantom', { reference: `${txHash(9)}:0`, amount: 7n }),
      bookedAs('card', stripePayment('pi_1', 5n, 'chal_1'), 'chal_1'),
      bookedAs('paid', paid),
      { ...bookedAs('paid-again', paid), occurredAt: at('10:00:30') },
    ],
    external: [log, unseen, paid, stripePayment('pi_1', 5n, 'chal_1'), twin],
    period: PERIOD,
    pendingWindowMs: WINDOW_MS,
    now: LATER,
  });
  const advice = Object.fromEntries(report.rows.map((r) => [`${r.kind}:${r.ledger?.id ?? r.reference}`, adviceFor(r)]));

  it('says which transfer resolves each break', () => {
    expect(advice).toEqual({
      'amount_mismatch:short': 'correct short by -250 with a correcting transfer (chain shows 1000)',
      [`missing_in_ledger:${unseen.reference}`]: `book a payment transfer of 300 with reference ${unseen.reference}`,
      'missing_externally:phantom': `check chain for ${txHash(9)}:0; if it never happened, reverse phantom with a correcting transfer`,
      'matched:card': '',
      'matched:paid': '',
      'duplicate:pi_2': 'stripe shows this payment twice (also pi_1): refund it, or book it if it was meant',
      'duplicate:paid-again': 'reverse paid-again with a correcting transfer: it repeats paid',
    });
  });

  it('formats amounts when told how', () => {
    const mismatch = report.rows.find((r) => r.kind === 'amount_mismatch')!;
    expect(adviceFor(mismatch, (a) => `${a} units`)).toBe('correct short by -250 units with a correcting transfer (chain shows 1000 units)');
  });
});
