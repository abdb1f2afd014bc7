import fc from 'fast-check';
import { BREAK_KINDS, isBreak, type ExternalEntry, type LedgerEntry } from './model';
import { reconcile } from './reconcile';
import { bookedAs, chainLog, LATER, ledgerEntry, PERIOD, stripePayment, stripeRefund, txHash, WINDOW_MS } from '../test/entries';

const run = (ledger: LedgerEntry[], external: ExternalEntry[]) => reconcile({ ledger, external, period: PERIOD, pendingWindowMs: WINDOW_MS, now: LATER });
// Bookings come 5 s after the movement: keep both inside the period.
const time = fc.integer({ min: 0, max: 86_000 }).map((s) => new Date(s * 1000).toISOString().slice(11, 19));
const amount = fc.bigInt({ min: 1n, max: 10n ** 24n });

/** Distinct external movements of the period (chain logs, some sharing a transaction; Stripe payments and refunds). */
const movements = fc
  .array(
    fc.oneof(
      fc.record({ tx: fc.integer({ min: 1, max: 8 }), log: fc.integer({ min: 0, max: 3 }), amount, time }).map((m) => chainLog(m.tx, m.log, m.amount, m.time)),
      fc.record({ n: fc.integer({ min: 1, max: 40 }), amount, time }).map((m) => stripePayment(`pi_${m.n}`, m.amount, `chal_${m.n}`, m.time)),
      fc
        .record({ n: fc.integer({ min: 1, max: 40 }), pi: fc.integer({ min: 1, max: 5 }), amount, time })
        .map((m) => stripeRefund(`re_${m.n}`, `pi_${m.pi}`, m.amount, m.time)),
    ),
    { maxLength: 30 },
  )
  .map((entries) => [...new Map(entries.map((e) => [`${e.kind}|${e.reference}`, e])).values()]);

/** The ledger's booking of a movement, under any name it may know it by. */
function booking(entry: ExternalEntry, index: number, naming: number): LedgerEntry {
  const names = [entry.reference, ...(entry.aliases ?? []), ...(entry.container ? [entry.container] : [])];
  return bookedAs(`l${index}`, entry, names[naming % names.length]);
}

const bookedSets = fc.tuple(movements, fc.array(fc.nat(), { minLength: 30, maxLength: 30 })).map(([external, namings]) => ({
  external,
  ledger: external.map((e, i) => booking(e, i, namings[i])),
}));

describe('reconcile (properties)', () => {
  it('reconciling a ledger that booked exactly what happened is all matched', () => {
    fc.assert(
      fc.property(bookedSets, ({ ledger, external }) => {
        const report = run(ledger, external);
        expect(report.rows.every((r) => r.kind === 'matched')).toBe(true);
        expect(report.rows).toHaveLength(external.length);
        expect(report.summary.breaks).toBe(0);
      }),
    );
  });

  it('puts every entry of the period in exactly one row', () => {
    const names = fc.constantFrom(txHash(1), `${txHash(1)}:0`, `${txHash(2)}:1`, 'pi_1', 'chal_1', 're_1');
    const looseLedger = fc.array(
      fc.record({
        reference: names,
        amount: fc.bigInt({ min: 1n, max: 3n }),
        time,
        pending: fc.boolean(),
        source: fc.constantFrom('chain' as const, 'stripe' as const),
      }),
      { maxLength: 12 },
    );
    fc.assert(
      fc.property(movements, looseLedger, (external, loose) => {
        const ledger = loose.map((l, i) =>
          ledgerEntry(`x${i}`, {
            reference: l.reference,
            amount: l.amount,
            state: l.pending ? 'pending' : 'posted',
            source: l.source,
            asset: l.source === 'chain' ? (external[0]?.asset ?? 'a/b') : 'stripe/usd',
            occurredAt: new Date(`2026-11-01T${l.time}Z`),
          }),
        );
        const report = run(ledger, external);
        for (const entry of ledger) expect(report.rows.filter((r) => r.ledger === entry)).toHaveLength(1);
        for (const entry of external) expect(report.rows.filter((r) => r.external === entry)).toHaveLength(1);
        expect(report.summary.breaks).toBe(report.rows.filter((r) => isBreak(r.kind)).length);
        const totalBreaks = report.totals.reduce((sum, t) => sum + BREAK_KINDS.reduce((s, k) => s + t.breaks[k], 0), 0);
        expect(totalBreaks).toBe(report.summary.breaks);
      }),
    );
  });

  it('one injected break yields exactly one row that is not matched, of the right kind, and the advised transfer resolves it', () => {
    const injections = ['missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate', 'duplicate charge'] as const;
    const afterThePeriod = new Date(PERIOD.to.getTime() + 3_600_000);
    fc.assert(
      fc.property(
        bookedSets.filter((s) => s.external.length > 0),
        fc.constantFrom(...injections),
        fc.nat(),
        fc.bigInt({ min: 1n, max: 1000n }),
        ({ ledger, external }, injection, pick, delta) => {
          const i = pick % external.length;
          let fix: LedgerEntry;
          const correction = (of: LedgerEntry, amount: bigint) => ({ ...of, id: 'fix', corrects: of.id, amount, occurredAt: afterThePeriod });
          if (injection === 'missing_in_ledger') {
            fix = { ...ledger[i], id: 'fix' };
            ledger = ledger.filter((_, j) => j !== i);
          } else if (injection === 'missing_externally') {
            // A booking that repeats another's name and amount (two equal refunds of one PaymentIntent, both booked
            // under its id) is a duplicate once one movement is gone: reconcile cannot tell which of the two is unpaid.
            const same = (l: LedgerEntry) => l.kind === ledger[i].kind && l.reference === ledger[i].reference && l.amount === ledger[i].amount;
            fc.pre(!ledger.some((l, j) => j !== i && same(l)));
            external = external.filter((_, j) => j !== i);
            fix = correction(ledger[i], -ledger[i].amount);
          } else if (injection === 'amount_mismatch') {
            ledger = ledger.map((l, j) => (j === i ? { ...l, amount: l.amount + delta } : l));
            fix = correction(ledger[i], -delta);
          } else if (injection === 'duplicate') {
            const again = { ...ledger[i], id: 'again', occurredAt: new Date(ledger[i].occurredAt.getTime() + 1) };
            ledger = [...ledger, again];
            fix = correction(again, -again.amount);
          } else {
            // a second PaymentIntent for the same challenge, which the merchant keeps and books
            fc.pre(external[i].aliases !== undefined);
            const twin = { ...external[i], reference: 'pi_again', occurredAt: new Date(external[i].occurredAt.getTime() + 1) };
            external = [...external, twin];
            fix = bookedAs('fix', twin);
          }
          const report = run(ledger, external);
          const unmatched = report.rows.filter((r) => r.kind !== 'matched');
          expect(unmatched.map((r) => r.kind)).toEqual([injection === 'duplicate charge' ? 'duplicate' : injection]);
          expect(report.summary.breaks).toBe(1);

          const resolved = run([...ledger, fix], external);
          expect(resolved.rows.every((r) => r.kind === 'matched')).toBe(true);
          expect(resolved.summary.corrections).toBe(fix.corrects ? 1 : 0);
        },
      ),
    );
  });

  it('gives the same report for any order of its input', () => {
    const shuffledSets = bookedSets.chain(({ ledger, external }) =>
      fc.tuple(
        fc.constant({ ledger, external }),
        fc.shuffledSubarray(ledger, { minLength: ledger.length }),
        fc.shuffledSubarray(external, { minLength: external.length }),
      ),
    );
    fc.assert(
      fc.property(shuffledSets, fc.nat(), ([{ ledger, external }, ledgerShuffled, externalShuffled], drop) => {
        // a missing booking makes the pairing order matter, if anything does
        const gone = ledger[drop % Math.max(1, ledger.length)];
        expect(
          run(
            ledgerShuffled.filter((l) => l !== gone),
            externalShuffled,
          ),
        ).toEqual(
          run(
            ledger.filter((l) => l !== gone),
            external,
          ),
        );
      }),
    );
  });
});
