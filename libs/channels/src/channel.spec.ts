import {
  acceptVoucher,
  applyDeposit,
  charge,
  decideClose,
  onChainSettled,
  onCloseRequested,
  onFinalized,
  openBook,
  settlementDue,
  type ChannelBook,
} from './channel';

const t0 = new Date('2026-12-02T12:00:00Z');
const later = (ms: number) => new Date(t0.getTime() + ms);
const valid = (cumulativeAmount: bigint, at = t0) => ({ cumulativeAmount, signature: `sig-${cumulativeAmount}`, verdict: 'valid' as const, at });

function accepted(book: ChannelBook, amount: bigint, at = t0): ChannelBook {
  const result = acceptVoucher(book, valid(amount, at));
  if (result.kind !== 'accepted') throw new Error(`expected accepted, got ${result.kind}`);
  return result.book;
}

describe('channel book', () => {
  const book = openBook({ channelId: '0xc1', deposit: 1_000n, minVoucherDelta: 10n });

  it('checks a voucher in the spec order: close request, signature, idempotent, delta, deposit', () => {
    const at300 = accepted(book, 300n);
    expect(acceptVoucher(onCloseRequested(at300), { ...valid(400n), verdict: 'invalid-signature' })).toMatchObject({ reason: 'close-requested' });
    expect(acceptVoucher(at300, { ...valid(100n), verdict: 'signer-mismatch' })).toMatchObject({ reason: 'signer-mismatch' });
    expect(acceptVoucher(at300, valid(300n))).toEqual({ kind: 'idempotent', book: at300 });
    expect(acceptVoucher(at300, valid(305n))).toMatchObject({ reason: 'delta-too-small' });
    expect(acceptVoucher(at300, valid(1_001n))).toMatchObject({ reason: 'amount-exceeds-deposit' });
    expect(accepted(at300, 1_000n)).toMatchObject({ acceptedCumulative: 1_000n, acceptedSignature: 'sig-1000' });
  });

  it('charges from accepted value and asks for the next voucher, naming a top-up when it exceeds the deposit', () => {
    const at300 = accepted(book, 300n);
    const delivered = charge(at300, 250n);
    expect(delivered).toMatchObject({ kind: 'delivered', book: { spent: 250n } });
    const spent = delivered.kind === 'delivered' ? delivered.book : at300;
    expect(charge(spent, 100n)).toEqual({ kind: 'need-voucher', requiredCumulative: 350n, acceptedCumulative: 300n, deposit: 1_000n, mustTopUp: false });
    expect(charge(spent, 800n)).toMatchObject({ kind: 'need-voucher', requiredCumulative: 1_050n, mustTopUp: true });
    expect(applyDeposit(spent, 900n)).toMatchObject({ kind: 'refused', reason: 'deposit-decreased' });
  });

  it('is due for settlement by amount, by age, or at once after a close request', () => {
    const policy = { minUnsettled: 500n, maxAgeMs: 60_000 };
    const at100 = accepted(book, 100n, t0);
    expect(settlementDue(book, policy, t0)).toBe(false);
    expect(settlementDue(at100, policy, later(59_999))).toBe(false);
    expect(settlementDue(at100, policy, later(60_000))).toBe(true);
    expect(settlementDue(accepted(at100, 600n, later(1)), policy, later(1))).toBe(true);
    expect(settlementDue(onCloseRequested(at100), policy, t0)).toBe(true);
    const settled = onChainSettled(at100, 100n);
    expect(settled.unsettledSince).toBeUndefined();
    expect(settlementDue(settled, policy, later(3_600_000))).toBe(false);
    // the age counts from the oldest unsettled acceptance, not the latest voucher
    expect(accepted(at100, 200n, later(30_000)).unsettledSince).toEqual(t0);
  });

  it('closes with the highest accepted voucher when there is no close voucher, forfeiting when nothing is above settled', () => {
    const at300 = onChainSettled(accepted(book, 300n), 300n);
    expect(decideClose(at300, undefined)).toMatchObject({ cumulativeAmount: 300n, signature: undefined, basis: 'highest-accepted' });
    expect(() => onFinalized(at300, { settledToPayee: 300n, refundedToPayer: 600n })).toThrow(RangeError);
    expect(onFinalized(at300, { settledToPayee: 300n, refundedToPayer: 700n })).toMatchObject({ finalized: true, settledOnChain: 300n });
  });
});
