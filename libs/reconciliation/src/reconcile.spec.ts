import { CHANNEL_BREAK_KINDS, PREPAID_BREAK_KINDS, type ReconReport, type RowKind } from './model';
import { reconcile } from './reconcile';
import { at, bookedAs, chainLog, LATER, ledgerEntry, PERIOD, stripePayment, stripeRefund, txHash, USD, USDC, WINDOW_MS } from '../test/entries';

const run = (ledger: Parameters<typeof reconcile>[0]['ledger'], external: Parameters<typeof reconcile>[0]['external'], now = LATER) =>
  reconcile({ ledger, external, period: PERIOD, pendingWindowMs: WINDOW_MS, now });

const kinds = (report: ReconReport): RowKind[] => report.rows.map((r) => r.kind);

/** The balance checks' kinds, none in a report of movements only. */
const NO_BALANCE_BREAKS = Object.fromEntries([...CHANNEL_BREAK_KINDS, ...PREPAID_BREAK_KINDS].map((k) => [k, 0]));
describe('reconcile', () => {
  it('matches each ledger entry to its chain log, by exact reference or by transaction hash', () => {
    const logs = [chainLog(1, 0, 5n), chainLog(2, 3, 7n)];
    const report = run([bookedAs('l1', logs[0]), bookedAs('l2', logs[1], txHash(2))], logs);
    expect(kinds(report)).toEqual(['matched', 'matched']);
    expect(report.rows.map((r) => [r.ledger?.id, r.external?.reference])).toEqual([
      ['l1', logs[0].reference],
      ['l2', logs[1].reference],
    ]);
    expect(report.summary).toMatchObject({ breaks: 0, rows: 2, ledgerEntries: 2, externalEntries: 2 });
  });

  it('pairs the logs of one batch transaction by amount when the ledger knows only the hash', () => {
    const logs = [chainLog(9, 0, 5n), chainLog(9, 1, 7n)];
    const report = run([bookedAs('a', logs[1], txHash(9)), bookedAs('b', logs[0], txHash(9))], logs);
    expect(kinds(report)).toEqual(['matched', 'matched']);
    expect(report.rows.find((r) => r.ledger?.id === 'a')?.external?.reference).toBe(logs[1].reference);
  });

  it('reports a chain transfer the ledger never saw as missing_in_ledger', () => {
    const report = run([], [chainLog(1, 0, 5n)]);
    expect(kinds(report)).toEqual(['missing_in_ledger']);
  });

  it('reports a ledger entry with no chain transfer as missing_externally', () => {
    const report = run([ledgerEntry('l1', { reference: `${txHash(4)}:0`, amount: 5n })], []);
    expect(kinds(report)).toEqual(['missing_externally']);
  });

  it('reports an amount mismatch once, with external − ledger', () => {
    const log = chainLog(1, 0, 4n);
    const report = run([{ ...bookedAs('l1', log), amount: 5n }], [log]);
    expect(report.rows).toHaveLength(1);
    expect(report.rows[0]).toMatchObject({ kind: 'amount_mismatch', difference: -1n });
  });

  it('prefers an exact reference to an equal amount under the transaction hash', () => {
    const log = chainLog(1, 0, 5n);
    const report = run([ledgerEntry('exact', { reference: log.reference, amount: 6n }), ledgerEntry('by-hash', { reference: txHash(1), amount: 5n })], [log]);
    expect(Object.fromEntries(report.rows.map((r) => [r.ledger!.id, r.kind]))).toEqual({ exact: 'amount_mismatch', 'by-hash': 'missing_externally' });
  });

  it('reports a movement the ledger booked twice as one duplicate', () => {
    const log = chainLog(1, 0, 5n);
    const report = run([bookedAs('l1', log), { ...bookedAs('l2', log), occurredAt: at('10:01:00') }], [log]);
    expect(kinds(report)).toEqual(['matched', 'duplicate']);
    expect(report.rows[1]).toMatchObject({ ledger: { id: 'l2' }, duplicateOf: 'l1' });
    expect(report.rows[1].external).toBeUndefined();
  });

  it('reports a ledger entry repeating another one with no external counterpart at all as a duplicate too', () => {
    const entry = ledgerEntry('l1', { reference: `${txHash(4)}:0`, amount: 5n });
    const report = run([entry, { ...entry, id: 'l2', occurredAt: at('10:02:00') }], []);
    expect(kinds(report)).toEqual(['missing_externally', 'duplicate']);
  });

  it('reports a second PaymentIntent for one challenge as a duplicate charge', () => {
    const first = stripePayment('pi_1', 500n, 'chal_1');
    const second = stripePayment('pi_2', 500n, 'chal_1', '10:00:30');
    const report = run([bookedAs('l1', first, 'chal_1')], [first, second]);
    expect(kinds(report)).toEqual(['matched', 'duplicate']);
    expect(report.rows[1]).toMatchObject({ external: { reference: 'pi_2' }, duplicateOf: 'pi_1' });
  });

  it('reports a Stripe refund the ledger lacks as missing_in_ledger, and matches one booked by its PaymentIntent', () => {
    const payment = stripePayment('pi_1', 500n, 'chal_1');
    const refunds = [stripeRefund('re_1', 'pi_1', 100n), stripeRefund('re_2', 'pi_1', 50n, '12:00:00')];
    const report = run([bookedAs('p', payment), bookedAs('r1', refunds[0], 'pi_1')], [payment, ...refunds]);
    expect(report.rows.map((r) => [r.kind, r.entryKind, r.reference])).toEqual([
      ['matched', 'payment', 'pi_1'],
      ['matched', 'refund', 're_1'],
      ['missing_in_ledger', 'refund', 're_2'],
    ]);
  });

  it('never pairs across assets, sources or kinds', () => {
    const log = chainLog(1, 0, 5n);
    const report = run(
      [
        { ...bookedAs('l1', log), asset: USD, source: 'stripe' },
        { ...bookedAs('l2', log), kind: 'refund' },
      ],
      [log],
    );
    expect(kinds(report).sort()).toEqual(['missing_externally', 'missing_externally', 'missing_in_ledger']);
  });

  it('keeps young and ledger-pending entries pending, never breaks', () => {
    const now = at('12:00:00');
    const youngLog = chainLog(1, 0, 5n, '11:55:00');
    const oldPending = ledgerEntry('held', { reference: `${txHash(7)}:0`, amount: 5n, state: 'pending', occurredAt: at('08:00:00') });
    const pendingMatched = { ...bookedAs('l3', chainLog(3, 0, 9n)), state: 'pending' as const };
    const report = run([oldPending, pendingMatched], [youngLog, chainLog(3, 0, 9n)], now);
    expect(kinds(report)).toEqual(['pending', 'pending', 'pending']);
    expect(report.summary.breaks).toBe(0);
  });

  it('puts a pair in the period of its ledger entry, and leaves out what belongs to the neighbouring periods', () => {
    const before = chainLog(1, 0, 5n);
    before.occurredAt = new Date(PERIOD.from.getTime() - 60_000);
    const booked = { ...bookedAs('l1', before), occurredAt: new Date(PERIOD.from.getTime() + 30_000) };
    const strayBefore = chainLog(2, 0, 6n);
    strayBefore.occurredAt = new Date(PERIOD.from.getTime() - 30_000);
    const nextPeriod = ledgerEntry('l9', { reference: txHash(8), amount: 1n, occurredAt: PERIOD.to });
    const report = run([booked, nextPeriod], [before, strayBefore]);
    expect(report.rows.map((r) => [r.kind, r.ledger?.id])).toEqual([['matched', 'l1']]);
  });

  it('folds correcting entries into the entry they correct, even when booked after the period', () => {
    const log = chainLog(1, 0, 4n);
    const booked = { ...bookedAs('l1', log), amount: 5n };
    const later = new Date(PERIOD.to.getTime() + 86_400_000);
    const fix = ledgerEntry('fix', { reference: 'whatever', amount: -1n, corrects: 'l1', occurredAt: later });
    const report = run([booked, fix], [log]);
    expect(report.rows).toHaveLength(1);
    expect(report.rows[0]).toMatchObject({ kind: 'matched', ledger: { id: 'l1', amount: 4n }, corrections: ['fix'] });
    expect(report.summary.corrections).toBe(1);
  });

  it('leaves out an entry its corrections reverse completely, and corrections of entries of other periods', () => {
    const entry = ledgerEntry('l1', { reference: `${txHash(4)}:0`, amount: 5n });
    const reversal = ledgerEntry('r1', { reference: 'x', amount: -3n, corrects: 'l1' });
    const rest = ledgerEntry('r2', { reference: 'x', amount: -2n, corrects: 'r1' });
    const stray = ledgerEntry('r3', { reference: 'x', amount: -9n, corrects: 'elsewhere' });
    const report = run([entry, reversal, rest, stray], []);
    expect(report.rows).toEqual([]);
    expect(report.summary).toMatchObject({ rows: 0, corrections: 2, breaks: 0 });
  });

  it('is deterministic whatever the order of its input', () => {
    const logs = [chainLog(1, 0, 5n, '09:00:00'), chainLog(2, 0, 6n, '09:00:00'), chainLog(3, 1, 7n, '11:00:00')];
    const ledger = [bookedAs('a', logs[0]), { ...bookedAs('b', logs[1]), amount: 1n }, ledgerEntry('c', { reference: txHash(5), amount: 3n })];
    const forward = run(ledger, logs);
    const backward = run([...ledger].reverse(), [...logs].reverse());
    expect(backward).toEqual(forward);
  });

  it('totals per asset and source: net amounts, matched, pending and breaks by kind', () => {
    const payment = stripePayment('pi_1', 500n, 'chal_1');
    const refund = stripeRefund('re_1', 'pi_1', 100n);
    const log = chainLog(1, 0, 7n);
    const report = run([bookedAs('p', payment), { ...bookedAs('c', log), amount: 8n }], [payment, refund, log]);
    expect(report.totals).toEqual([
      {
        asset: USDC,
        source: 'chain',
        ledger: { count: 1, net: 8n },
        external: { count: 1, net: 7n },
        matched: { count: 0, net: 0n },
        pending: 0,
        breaks: { ...NO_BALANCE_BREAKS, missing_in_ledger: 0, missing_externally: 0, amount_mismatch: 1, duplicate: 0, over_refund: 0 },
        difference: -1n,
      },
      {
        asset: USD,
        source: 'stripe',
        ledger: { count: 1, net: 500n },
        external: { count: 2, net: 400n },
        matched: { count: 1, net: 500n },
        pending: 0,
        breaks: { ...NO_BALANCE_BREAKS, missing_in_ledger: 1, missing_externally: 0, amount_mismatch: 0, duplicate: 0, over_refund: 0 },
        difference: -100n,
      },
    ]);
    expect(report.summary.counts).toEqual({
      ...NO_BALANCE_BREAKS,
      matched: 1,
      pending: 0,
      missing_in_ledger: 1,
      missing_externally: 0,
      amount_mismatch: 1,
      duplicate: 0,
      over_refund: 0,
    });
  });
});
