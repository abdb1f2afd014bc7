/**
 * The server's book of one payment channel (MPP evm `session`, recurring-and-streaming.md §2.3), as a pure state
 * machine: what the payer has authorized (the highest accepted voucher), what has been delivered (`spent`), what the
 * chain has paid out (`settledOnChain`) and what is escrowed (`deposit`). No I/O: the caller verifies signatures and
 * reads the chain, persists the returned state, and only then delivers or answers.
 *
 * Invariants (every operation keeps them; channel.property.spec.ts checks them):
 *   settledOnChain ≤ acceptedCumulative ≤ deposit,  spent ≤ acceptedCumulative,  each of the four only ever rises.
 */

export interface ChannelBook {
  readonly channelId: string;
  /** the escrowed total, as the chain reports it */
  readonly deposit: bigint;
  /** the highest voucher accepted (cumulative), and its signature: what a settle or close submits */
  readonly acceptedCumulative: bigint;
  readonly acceptedSignature: string | undefined;
  /** value delivered (persisted before each delivery) */
  readonly spent: bigint;
  /** what the escrow has paid the payee so far */
  readonly settledOnChain: bigint;
  /** the smallest step between two vouchers (the request's minVoucherDelta) */
  readonly minVoucherDelta: bigint;
  /** the payer called requestClose: stop delivering, settle at once */
  readonly closeRequested: boolean;
  readonly finalized: boolean;
  /** when the oldest accepted-but-unsettled value was accepted (for age-based settlement) */
  readonly unsettledSince: Date | undefined;
}

export type ChannelRefusal =
  | 'channel-finalized'
  | 'close-requested'
  | 'invalid-signature'
  | 'signer-mismatch'
  | 'delta-too-small'
  | 'amount-exceeds-deposit'
  | 'deposit-decreased'
  | 'below-spent';

/** The caller's verdict on a voucher signature (EIP-712 recovery, low s, on-chain signer or ERC-1271). */
export type SignatureVerdict = 'valid' | 'invalid-signature' | 'signer-mismatch';

export interface VoucherInput {
  cumulativeAmount: bigint;
  signature: string;
  verdict: SignatureVerdict;
  /** when the voucher arrived */
  at: Date;
}

export type Refused = { readonly kind: 'refused'; readonly reason: ChannelRefusal; readonly detail: string };

export function openBook(init: { channelId: string; deposit: bigint; settledOnChain?: bigint; minVoucherDelta?: bigint }): ChannelBook {
  const settled = init.settledOnChain ?? 0n;
  if (init.deposit <= 0n) throw new RangeError('a channel opens with a positive deposit');
  if (settled < 0n || settled > init.deposit) throw new RangeError('settledOnChain must lie in [0, deposit]');
  return {
    channelId: init.channelId,
    deposit: init.deposit,
    // what the chain already paid is authorized by definition (a resumed channel starts from there)
    acceptedCumulative: settled,
    acceptedSignature: undefined,
    spent: settled,
    settledOnChain: settled,
    minVoucherDelta: init.minVoucherDelta ?? 0n,
    closeRequested: false,
    finalized: false,
    unsettledSince: undefined,
  };
}

const refuse = (reason: ChannelRefusal, detail: string): Refused => ({ kind: 'refused', reason, detail });

/**
 * The deposit the chain now reports (after an open, a top-up, or a re-read). A top-up clears a pending close request
 * on chain, and so here. The deposit never falls while the channel lives.
 */
export function applyDeposit(book: ChannelBook, deposit: bigint): { kind: 'updated'; book: ChannelBook } | Refused {
  if (book.finalized) return refuse('channel-finalized', `channel ${book.channelId} is finalized`);
  if (deposit < book.deposit) return refuse('deposit-decreased', `the chain reports a deposit of ${deposit}, below the ${book.deposit} already seen`);
  if (deposit === book.deposit) return { kind: 'updated', book };
  return { kind: 'updated', book: { ...book, deposit, closeRequested: false } };
}

export type VoucherResult = { kind: 'accepted'; book: ChannelBook } | { kind: 'idempotent'; book: ChannelBook } | Refused;

/**
 * A voucher, checked in the spec's order (§2.3): no close requested; (the caller has processed any deposit); the
 * signature (recovery, low s, signer); only then `cum ≤ highest` is an idempotent success; the step is at least
 * minVoucherDelta; `cum ≤ deposit`; then it becomes the highest. A replayed or older voucher changes nothing.
 */
export function acceptVoucher(book: ChannelBook, voucher: VoucherInput): VoucherResult {
  if (book.finalized) return refuse('channel-finalized', `channel ${book.channelId} is finalized`);
  if (book.closeRequested) return refuse('close-requested', `the payer requested to close channel ${book.channelId}`);
  if (voucher.verdict !== 'valid')
    return refuse(
      voucher.verdict,
      voucher.verdict === 'signer-mismatch' ? "the voucher is not signed by the channel's signer" : 'the voucher signature is invalid',
    );
  if (voucher.cumulativeAmount <= book.acceptedCumulative) return { kind: 'idempotent', book };
  const delta = voucher.cumulativeAmount - book.acceptedCumulative;
  if (delta < book.minVoucherDelta) return refuse('delta-too-small', `the voucher adds ${delta}, the minimum step is ${book.minVoucherDelta}`);
  if (voucher.cumulativeAmount > book.deposit)
    return refuse('amount-exceeds-deposit', `the voucher authorizes ${voucher.cumulativeAmount}, the deposit is ${book.deposit}`);
  return {
    kind: 'accepted',
    book: {
      ...book,
      acceptedCumulative: voucher.cumulativeAmount,
      acceptedSignature: voucher.signature,
      unsettledSince: book.unsettledSince ?? voucher.at,
    },
  };
}

export type ChargeResult =
  | { kind: 'delivered'; book: ChannelBook }
  | { kind: 'need-voucher'; requiredCumulative: bigint; acceptedCumulative: bigint; deposit: bigint; mustTopUp: boolean }
  | Refused;

/**
 * Reserves `cost` of the accepted value for one delivery. The caller persists the returned book before delivering.
 * When the accepted value does not cover it, the answer is what `payment-need-voucher` carries (and whether the
 * payer must top up first because the voucher needed exceeds the deposit).
 */
export function charge(book: ChannelBook, cost: bigint): ChargeResult {
  if (cost < 0n) throw new RangeError('a cost is never negative');
  if (book.finalized) return refuse('channel-finalized', `channel ${book.channelId} is finalized`);
  if (book.closeRequested) return refuse('close-requested', `the payer requested to close channel ${book.channelId}`);
  const required = book.spent + cost;
  if (required > book.acceptedCumulative) {
    return {
      kind: 'need-voucher',
      requiredCumulative: required,
      acceptedCumulative: book.acceptedCumulative,
      deposit: book.deposit,
      mustTopUp: required > book.deposit,
    };
  }
  return { kind: 'delivered', book: { ...book, spent: required } };
}

/** What a cooperative close submits to the escrow: `close(channelId, cumulativeAmount, signature)`. */
export interface CloseDecision {
  kind: 'close';
  book: ChannelBook;
  cumulativeAmount: bigint;
  /** undefined when nothing above settledOnChain is claimed (the escrow then forfeits without reading it) */
  signature: string | undefined;
  /** which voucher the close uses, and why the payer's was not */
  basis: 'close-voucher' | 'highest-accepted';
  closeVoucherRefused?: Refused;
}

/**
 * The payer's close voucher must cover at least `spent` (ours: clients sign close = spent of the last receipt); a
 * lower or invalid one is refused and the highest accepted voucher is settled instead, so the payee never receives
 * less than was delivered and the payer never pays more than it authorized.
 */
export function decideClose(book: ChannelBook, closeVoucher: VoucherInput | undefined): CloseDecision | Refused {
  if (book.finalized) return refuse('channel-finalized', `channel ${book.channelId} is finalized`);
  const highest = (refused?: Refused): CloseDecision => ({
    kind: 'close',
    book,
    cumulativeAmount: book.acceptedCumulative,
    signature: book.acceptedCumulative > book.settledOnChain ? book.acceptedSignature : undefined,
    basis: 'highest-accepted',
    ...(refused && { closeVoucherRefused: refused }),
  });
  if (closeVoucher === undefined) return highest();
  if (closeVoucher.verdict !== 'valid')
    return highest(
      refuse(
        closeVoucher.verdict,
        closeVoucher.verdict === 'signer-mismatch' ? "the close voucher is not signed by the channel's signer" : 'the close voucher signature is invalid',
      ),
    );
  if (closeVoucher.cumulativeAmount < book.spent)
    return highest(refuse('below-spent', `the close voucher (${closeVoucher.cumulativeAmount}) is below the value delivered (${book.spent})`));
  if (closeVoucher.cumulativeAmount > book.deposit)
    return highest(refuse('amount-exceeds-deposit', `the close voucher authorizes ${closeVoucher.cumulativeAmount}, the deposit is ${book.deposit}`));
  // A close voucher above what was accepted is still the payer's own authorization: it becomes the highest.
  const raised =
    closeVoucher.cumulativeAmount > book.acceptedCumulative
      ? {
          ...book,
          acceptedCumulative: closeVoucher.cumulativeAmount,
          acceptedSignature: closeVoucher.signature,
          unsettledSince: book.unsettledSince ?? closeVoucher.at,
        }
      : book;
  return {
    kind: 'close',
    book: raised,
    cumulativeAmount: closeVoucher.cumulativeAmount,
    signature: closeVoucher.cumulativeAmount > book.settledOnChain ? closeVoucher.signature : undefined,
    basis: 'close-voucher',
  };
}

/** The escrow paid out up to `settled` (a Settled event or a re-read). Only ever rises. */
export function onChainSettled(book: ChannelBook, settled: bigint): ChannelBook {
  if (settled <= book.settledOnChain) return book;
  if (settled > book.deposit) throw new RangeError(`the chain reports ${settled} settled, above the deposit ${book.deposit}`);
  // Settling a voucher is authorization by definition: raise accepted if the chain knows more than we do.
  const acceptedCumulative = settled > book.acceptedCumulative ? settled : book.acceptedCumulative;
  return { ...book, settledOnChain: settled, acceptedCumulative, unsettledSince: settled >= acceptedCumulative ? undefined : book.unsettledSince };
}

/** The payer asked for a forced close (CloseRequested): stop delivering and settle the highest voucher at once. */
export function onCloseRequested(book: ChannelBook): ChannelBook {
  return book.finalized || book.closeRequested ? book : { ...book, closeRequested: true };
}

export interface Finalization {
  settledToPayee: bigint;
  refundedToPayer: bigint;
}

/** ChannelClosed: the escrow paid `settledToPayee` in all and refunded the rest. The two always add up to the deposit. */
export function onFinalized(book: ChannelBook, closed: Finalization): ChannelBook {
  if (closed.settledToPayee + closed.refundedToPayer !== book.deposit)
    throw new RangeError(`settled ${closed.settledToPayee} + refunded ${closed.refundedToPayer} is not the deposit ${book.deposit}`);
  const settled = onChainSettled(book, closed.settledToPayee);
  return { ...settled, finalized: true, unsettledSince: undefined };
}

export interface SettlementPolicy {
  /** settle once this much accepted value is unsettled */
  minUnsettled: bigint;
  /** or once the oldest unsettled value is this old */
  maxAgeMs: number;
}

/** Whether the channel is due an on-chain settle now: by amount, by age, or at once after a close request. */
export function settlementDue(book: ChannelBook, policy: SettlementPolicy, now: Date): boolean {
  if (book.finalized) return false;
  const unsettled = book.acceptedCumulative - book.settledOnChain;
  if (unsettled <= 0n) return false;
  if (book.closeRequested) return true;
  if (unsettled >= policy.minUnsettled) return true;
  return book.unsettledSince !== undefined && now.getTime() - book.unsettledSince.getTime() >= policy.maxAgeMs;
}

/** settled + refunded at a close that settles `cumulativeAmount`, as the escrow computes it (for checks and receipts). */
export function closeOutcome(book: ChannelBook, cumulativeAmount: bigint): Finalization {
  const settledToPayee = cumulativeAmount > book.settledOnChain ? cumulativeAmount : book.settledOnChain;
  return { settledToPayee, refundedToPayer: book.deposit - settledToPayee };
}
