import fc from 'fast-check';
import {
  acceptVoucher,
  applyDeposit,
  charge,
  closeOutcome,
  decideClose,
  onChainSettled,
  onCloseRequested,
  onFinalized,
  openBook,
  type ChannelBook,
  type SignatureVerdict,
  type VoucherInput,
} from './channel';

// Random sessions against the book: a payer signing (sometimes replayed, reordered, forged) vouchers, a server
// charging for deliveries, settling, and top-ups. After every step the invariants of §2.3 must hold.

const at = new Date('2026-12-02T12:00:00Z');

type Op =
  | { op: 'voucher'; amount: bigint; verdict: SignatureVerdict }
  | { op: 'replay'; pick: number }
  | { op: 'charge'; cost: bigint }
  | { op: 'topUp'; add: bigint }
  | { op: 'settle' };

const amount = fc.bigInt({ min: 0n, max: 5_000n });
const opArb: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('voucher' as const),
      amount,
      verdict: fc.constantFrom<SignatureVerdict>('valid', 'valid', 'valid', 'invalid-signature', 'signer-mismatch'),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('replay' as const), pick: fc.nat() }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('charge' as const), cost: fc.bigInt({ min: 0n, max: 400n }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('topUp' as const), add: fc.bigInt({ min: 1n, max: 2_000n }) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('settle' as const) }) },
);
const sessionArb = fc.record({
  deposit: fc.bigInt({ min: 1n, max: 3_000n }),
  minVoucherDelta: fc.bigInt({ min: 0n, max: 50n }),
  ops: fc.array(opArb, { maxLength: 60 }),
});

const voucher = (cumulativeAmount: bigint, verdict: SignatureVerdict = 'valid'): VoucherInput => ({
  cumulativeAmount,
  signature: `sig-${cumulativeAmount}`,
  verdict,
  at,
});

function assertInvariants(book: ChannelBook, previous: ChannelBook): void {
  expect(book.settledOnChain).toBeLessThanOrEqual(book.acceptedCumulative);
  expect(book.acceptedCumulative).toBeLessThanOrEqual(book.deposit);
  expect(book.spent).toBeLessThanOrEqual(book.acceptedCumulative);
  for (const field of ['deposit', 'acceptedCumulative', 'spent', 'settledOnChain'] as const) expect(book[field]).toBeGreaterThanOrEqual(previous[field]);
  if (book.acceptedCumulative > book.settledOnChain) expect(book.acceptedSignature).toBe(`sig-${book.acceptedCumulative}`);
}

/** Runs a session; returns the book, every voucher the payer sent, and the total value delivered. */
function run(session: { deposit: bigint; minVoucherDelta: bigint; ops: Op[] }) {
  let book = openBook({ channelId: '0xc1', deposit: session.deposit, minVoucherDelta: session.minVoucherDelta });
  const sent: VoucherInput[] = [];
  let delivered = 0n;
  for (const step of session.ops) {
    const before = book;
    switch (step.op) {
      case 'voucher':
      case 'replay': {
        const v = step.op === 'voucher' ? voucher(step.amount, step.verdict) : sent[step.pick % Math.max(sent.length, 1)];
        if (!v) break;
        if (step.op === 'voucher') sent.push(v);
        const result = acceptVoucher(book, v);
        if (result.kind !== 'refused') book = result.book;
        if (result.kind === 'accepted') expect(v.verdict).toBe('valid');
        break;
      }
      case 'charge': {
        const result = charge(book, step.cost);
        if (result.kind === 'delivered') {
          delivered += step.cost;
          book = result.book;
        } else if (result.kind === 'need-voucher') {
          expect(result.requiredCumulative).toBe(book.spent + step.cost);
          expect(result.requiredCumulative).toBeGreaterThan(book.acceptedCumulative);
          expect(result.mustTopUp).toBe(result.requiredCumulative > book.deposit);
        }
        break;
      }
      case 'topUp': {
        const result = applyDeposit(book, book.deposit + step.add);
        if (result.kind === 'updated') book = result.book;
        break;
      }
      case 'settle':
        book = onChainSettled(book, book.acceptedCumulative);
        break;
    }
    assertInvariants(book, before);
  }
  return { book, sent, delivered };
}

describe('channel book (property)', () => {
  it('never delivers beyond the accepted value, and keeps settled ≤ accepted ≤ deposit, spent ≤ accepted, all monotone', () => {
    fc.assert(
      fc.property(sessionArb, (session) => {
        const { book, delivered } = run(session);
        expect(book.spent).toBe(delivered);
        expect(delivered).toBeLessThanOrEqual(book.acceptedCumulative);
      }),
      { numRuns: 300 },
    );
  });

  it('a replayed or out-of-order (lower) voucher changes nothing', () => {
    fc.assert(
      fc.property(sessionArb, fc.nat(), fc.bigInt({ min: 0n, max: 5_000n }), (session, pick, lower) => {
        const { book, sent } = run(session);
        const valid = sent.filter((v) => v.verdict === 'valid');
        const replayed = valid[pick % Math.max(valid.length, 1)];
        if (replayed) {
          const again = acceptVoucher(book, replayed);
          if (replayed.cumulativeAmount <= book.acceptedCumulative) expect(again).toEqual({ kind: 'idempotent', book });
        }
        if (lower <= book.acceptedCumulative) {
          const older = acceptVoucher(book, voucher(lower));
          expect(older).toEqual({ kind: 'idempotent', book });
          expect(older.kind !== 'refused' && older.book).toBe(book);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('the signature is judged before the idempotent answer: a forged replay is refused, never "already accepted"', () => {
    fc.assert(
      fc.property(sessionArb, fc.constantFrom<SignatureVerdict>('invalid-signature', 'signer-mismatch'), (session, verdict) => {
        const { book } = run(session);
        fc.pre(!book.finalized && !book.closeRequested);
        expect(acceptVoucher(book, voucher(book.acceptedCumulative, verdict))).toMatchObject({ kind: 'refused', reason: verdict });
      }),
      { numRuns: 100 },
    );
  });

  it('a close voucher below spent is refused and the highest accepted voucher is settled instead', () => {
    fc.assert(
      fc.property(sessionArb, fc.bigInt({ min: 0n, max: 5_000n }), (session, closeAmount) => {
        const { book } = run(session);
        const decision = decideClose(book, voucher(closeAmount));
        if (decision.kind !== 'close') throw new Error(decision.detail);
        if (closeAmount < book.spent) {
          expect(decision.closeVoucherRefused).toMatchObject({ reason: 'below-spent' });
          expect(decision.basis).toBe('highest-accepted');
          expect(decision.cumulativeAmount).toBe(book.acceptedCumulative);
          expect(decision.signature).toBe(book.acceptedCumulative > book.settledOnChain ? `sig-${book.acceptedCumulative}` : undefined);
        } else if (closeAmount <= book.deposit) {
          expect(decision.basis).toBe('close-voucher');
          expect(decision.cumulativeAmount).toBe(closeAmount);
        } else {
          expect(decision.closeVoucherRefused).toMatchObject({ reason: 'amount-exceeds-deposit' });
          expect(decision.cumulativeAmount).toBe(book.acceptedCumulative);
        }
        // whatever was chosen, the payee gets at least what was delivered
        expect(decision.cumulativeAmount).toBeGreaterThanOrEqual(book.spent);
      }),
      { numRuns: 300 },
    );
  });

  it('at close, settled + refunded = deposit, and the payee receives at least spent and at most what was authorized', () => {
    fc.assert(
      fc.property(sessionArb, fc.option(fc.bigInt({ min: 0n, max: 5_000n })), (session, closeAmount) => {
        const { book } = run(session);
        const decision = decideClose(book, closeAmount === null ? undefined : voucher(closeAmount));
        if (decision.kind !== 'close') throw new Error(decision.detail);
        const outcome = closeOutcome(decision.book, decision.cumulativeAmount);
        expect(outcome.settledToPayee + outcome.refundedToPayer).toBe(book.deposit);
        expect(outcome.settledToPayee).toBeGreaterThanOrEqual(book.spent);
        expect(outcome.settledToPayee).toBeLessThanOrEqual(decision.book.acceptedCumulative);
        const closed = onFinalized(decision.book, outcome);
        expect(closed.finalized).toBe(true);
        expect(closed.settledOnChain).toBe(outcome.settledToPayee);
        assertInvariants(closed, book);
        // nothing moves a finalized book
        expect(acceptVoucher(closed, voucher(closed.deposit))).toMatchObject({ kind: 'refused', reason: 'channel-finalized' });
        expect(charge(closed, 0n)).toMatchObject({ kind: 'refused', reason: 'channel-finalized' });
      }),
      { numRuns: 300 },
    );
  });

  it('after a close request nothing more is delivered or accepted until a top-up cancels it', () => {
    fc.assert(
      fc.property(sessionArb, fc.bigInt({ min: 1n, max: 100n }), (session, add) => {
        const { book } = run(session);
        const closing = onCloseRequested(book);
        expect(charge(closing, 0n)).toMatchObject({ kind: 'refused', reason: 'close-requested' });
        expect(acceptVoucher(closing, voucher(closing.deposit))).toMatchObject({ kind: 'refused', reason: 'close-requested' });
        const toppedUp = applyDeposit(closing, closing.deposit + add);
        expect(toppedUp.kind === 'updated' && toppedUp.book.closeRequested).toBe(false);
      }),
      { numRuns: 100 },
    );
  });
});
