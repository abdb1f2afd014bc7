/** The largest balance a NUMERIC(78,0) column holds; a transfer that would pass it is refused as an overflow. */
export const BALANCE_MAX = 10n ** 78n - 1n;

/** An account's four running totals, as TigerBeetle keeps them; all are non-negative atomic units. */
export interface Balances {
  debitsPending: bigint;
  debitsPosted: bigint;
  creditsPending: bigint;
  creditsPosted: bigint;
}

/**
 * Which side increases the account: `credit` for what is owed to someone (a customer's prepaid balance, a
 * merchant's revenue), `debit` for what is held or owed to us (cash at a rail, receivables).
 */
export type NormalBalance = 'credit' | 'debit';

export interface BalanceSummary {
  /** posted movements only */
  posted: bigint;
  /** posted, plus everything pending in both directions */
  pending: bigint;
  /** posted, less what is reserved to go out: what can still be spent */
  available: bigint;
}

/** The balances a reader wants, signed on the account's normal side (a credit account gains from credits). */
export function summarize(b: Balances, normal: NormalBalance): BalanceSummary {
  const [inPosted, inPending, outPosted, outPending] =
    normal === 'credit'
      ? [b.creditsPosted, b.creditsPending, b.debitsPosted, b.debitsPending]
      : [b.debitsPosted, b.debitsPending, b.creditsPosted, b.creditsPending];
  return {
    posted: inPosted - outPosted,
    pending: inPosted + inPending - outPosted - outPending,
    available: inPosted - outPosted - outPending,
  };
}

/** The posted balance on the normal side, from the two posted totals (statements carry only these). */
export function postedBalance(normal: NormalBalance, debitsPosted: bigint, creditsPosted: bigint): bigint {
  return normal === 'credit' ? creditsPosted - debitsPosted : debitsPosted - creditsPosted;
}

export const ZERO_BALANCES: Readonly<Balances> = { debitsPending: 0n, debitsPosted: 0n, creditsPending: 0n, creditsPosted: 0n };
