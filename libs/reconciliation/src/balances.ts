import type { BreakKind, EntrySource, ReconRow } from './model';

/**
 * Balance checks: state against state, as of the run, beside the movement-by-movement matching of reconcile(). Each
 * payment channel the books know is matched against the escrow's `getChannel` read at one block, every channel the
 * escrow opened to the merchant's payee must be in the books, and each prepaid balance is matched against its own
 * transfers and its top-ups against the payments that funded them. Breaks carry `expected` (the books), `actual`
 * (the chain, or the book's own transfers) and `difference` = actual − expected; their keys are stable, so a break
 * found again is not notified again.
 */

/** A channel as the books have it. */
export interface BookedChannelState {
  /** absent: mpp-session */
  scheme?: 'mpp-session' | 'x402-batch';
  channelId: string;
  network: string;
  escrow: string;
  /** `eip155:8453/0x…` */
  asset: string;
  payer: string;
  payee: string;
  state: 'open' | 'closing' | 'closed';
  deposit: bigint;
  /** claimed, for an x402 batch channel (absent: not compared) */
  accepted?: bigint;
  settled: bigint;
  refunded: bigint;
}

/**
 * An x402 batch channel as the batch-settlement contract answered at the block: `channels(id)` and its receiver's
 * `receivers(receiver, token)` totals (what settle has paid out of what was claimed for the receiver, all channels).
 */
export interface BatchChannelOnChain {
  /** deposits − refunds − finalized withdrawals */
  balance: bigint;
  totalClaimed: bigint;
  receiverClaimed: bigint;
  receiverSettled: bigint;
}

/**
 * A channel as the escrow's getChannel answered at `block` (a payer of zero: no such channel); an x402 batch channel
 * carries `batch` (its deposit and settled are then not the contract's, which keeps neither per channel).
 */
export interface ChainChannelState {
  channelId: string;
  network: string;
  escrow: string;
  exists: boolean;
  finalized: boolean;
  deposit: bigint;
  settled: bigint;
  payer: string;
  payee: string;
  /** the token, lowercase */
  token: string;
  block: bigint;
  batch?: BatchChannelOnChain;
}

/** A channel the escrow opened to one of the merchant's payees (its ChannelOpened log). */
export interface OpenedChannel {
  channelId: string;
  network: string;
  escrow: string;
  payer: string;
  payee: string;
  token: string;
  deposit: bigint;
  transactionHash: string;
  blockNumber: bigint;
  occurredAt: Date;
}

export interface ChannelCheckInput {
  books: BookedChannelState[];
  /** by `channelKey` */
  chain: ReadonlyMap<string, ChainChannelState>;
  opened: OpenedChannel[];
  at: Date;
}

export const channelKey = (network: string, escrow: string, channelId: string) => `${network}|${escrow.toLowerCase()}|${channelId.toLowerCase()}`;

export function channelBreaks({ books, chain, opened, at }: ChannelCheckInput): ReconRow[] {
  const rows: ReconRow[] = [];
  const known = new Set(books.map((b) => channelKey(b.network, b.escrow, b.channelId)));
  for (const b of books) {
    const onChain = chain.get(channelKey(b.network, b.escrow, b.channelId));
    if (!onChain) continue;
    const details = {
      network: b.network,
      escrow: b.escrow,
      payer: b.payer,
      payee: b.payee,
      booksState: b.state,
      block: onChain.block.toString(),
      finalized: String(onChain.finalized),
    };
    const row = (kind: BreakKind, figure: string, expected?: bigint, actual?: bigint): ReconRow =>
      channelRow(kind, b.asset, b.channelId, at, { ...details, figure }, expected, actual);
    if (b.scheme === 'x402-batch') {
      if (onChain.batch) rows.push(...batchChannelBreaks(b, onChain.batch, row));
      continue;
    }
    if (!onChain.exists) {
      rows.push(row('channel_not_on_chain', 'deposit', b.deposit, 0n));
      continue;
    }
    if (onChain.deposit !== b.deposit) rows.push(row('channel_deposit_mismatch', 'deposit', b.deposit, onChain.deposit));
    if (onChain.settled !== b.settled) rows.push(row('channel_settled_mismatch', 'settled', b.settled, onChain.settled));
    if (b.state === 'closed' && !onChain.finalized) rows.push(row('channel_not_finalized', 'state'));
    if (b.state !== 'closed' && onChain.finalized) rows.push(row('channel_closed_on_chain_not_in_books', 'state'));
    // once finalized, what the escrow did not pay the payee went back to the payer
    if (b.state === 'closed' && onChain.finalized && b.refunded !== onChain.deposit - onChain.settled)
      rows.push(row('channel_refunded_mismatch', 'refunded', b.refunded, onChain.deposit - onChain.settled));
  }
  for (const o of opened) {
    if (known.has(channelKey(o.network, o.escrow, o.channelId))) continue;
    const onChain = chain.get(channelKey(o.network, o.escrow, o.channelId));
    rows.push(
      channelRow(
        'channel_unknown_to_books',
        `${o.network}/${o.token.toLowerCase()}`,
        o.channelId,
        o.occurredAt,
        {
          network: o.network,
          escrow: o.escrow,
          payer: o.payer,
          payee: o.payee,
          transactionHash: o.transactionHash,
          blockNumber: o.blockNumber.toString(),
          ...(onChain && { finalized: String(onChain.finalized), settled: onChain.settled.toString() }),
        },
        0n,
        onChain?.deposit ?? o.deposit,
      ),
    );
  }
  return rows;
}

/**
 * An x402 batch channel against the batch-settlement contract. The contract keeps per channel its balance (deposits −
 * refunds − withdrawals) and claimed total, and per receiver and token what was claimed and settled over all their
 * channels: settle(receiver, token) pays it all, so a channel is settled at most up to its claimed total and at least
 * up to claimed − what the receiver is still owed.
 */
function batchChannelBreaks(
  b: BookedChannelState,
  c: BatchChannelOnChain,
  row: (kind: BreakKind, figure: string, expected?: bigint, actual?: bigint) => ReconRow,
): ReconRow[] {
  const rows: ReconRow[] = [];
  const held = b.deposit - b.refunded;
  if (c.balance !== held) rows.push(row('channel_deposit_mismatch', 'balance (deposit − refunded)', held, c.balance));
  const claimed = b.accepted ?? 0n;
  if (c.totalClaimed !== claimed) rows.push(row('channel_claimed_mismatch', 'claimed', claimed, c.totalClaimed));
  const owed = c.receiverClaimed - c.receiverSettled;
  const leastSettled = c.totalClaimed > owed ? c.totalClaimed - owed : 0n;
  if (b.settled > c.totalClaimed) rows.push(row('channel_settled_mismatch', 'settled', b.settled, c.totalClaimed));
  else if (b.settled < leastSettled) rows.push(row('channel_settled_mismatch', 'settled', b.settled, leastSettled));
  return rows;
}

function channelRow(
  kind: BreakKind,
  asset: string,
  channelId: string,
  at: Date,
  details: Record<string, string>,
  expected?: bigint,
  actual?: bigint,
): ReconRow {
  return {
    key: [kind, 'chain', asset, 'channel', '-', channelId.toLowerCase()].join('|'),
    kind,
    source: 'chain',
    asset,
    entryKind: 'channel',
    reference: channelId.toLowerCase(),
    occurredAt: at,
    ...(expected !== undefined && { expected }),
    ...(actual !== undefined && { actual }),
    ...(expected !== undefined && actual !== undefined && { difference: actual - expected }),
    details,
  };
}

/** A top-up of a prepaid balance and what the books know of the payment it names. */
export interface TopUpCheck {
  transferId: string;
  amount: bigint;
  /** the funding payment's reference: a transaction hash, a PaymentIntent */
  paymentReference: string;
  occurredAt: Date;
  /** the confirmed payments of the asset booked under that reference (their amounts); empty: none */
  funding: bigint[];
  /** on chain: who sent the asset in the funding transaction (lowercase); undefined when not read (Stripe, no chain source) */
  senders?: string[];
}

/** A payer's prepaid balance: as stored on its account, and as its transfers add up. */
export interface PrepaidCheckInput {
  accountId: string;
  payer: string;
  asset: string;
  /** credits posted − debits posted, as stored */
  stored: bigint;
  /** held by pending holds, as stored */
  held: bigint;
  /** posted top-ups − charges − captured holds (± corrections), from the account's transfers */
  recomputed: bigint;
  topUps: TopUpCheck[];
}

export function prepaidBreaks(balances: PrepaidCheckInput[], at: Date): ReconRow[] {
  const rows: ReconRow[] = [];
  for (const b of balances) {
    const source: EntrySource = b.asset.startsWith('stripe/') ? 'stripe' : 'chain';
    const details = { payer: b.payer, account: b.accountId };
    const row = (kind: BreakKind, reference: string, occurredAt: Date, extra: Record<string, string>, expected?: bigint, actual?: bigint): ReconRow => ({
      key: [kind, source, b.asset, 'prepaid', b.accountId, reference].join('|'),
      kind,
      source,
      asset: b.asset,
      entryKind: 'prepaid',
      reference,
      occurredAt,
      ...(expected !== undefined && { expected }),
      ...(actual !== undefined && { actual }),
      ...(expected !== undefined && actual !== undefined && { difference: actual - expected }),
      details: { ...details, ...extra },
    });
    for (const t of b.topUps) {
      const paid = t.funding.reduce((sum, a) => sum + a, 0n);
      if (t.funding.length === 0) rows.push(row('prepaid_funding_missing', t.paymentReference, t.occurredAt, { topUp: t.transferId }, t.amount));
      else if (paid !== t.amount) rows.push(row('prepaid_funding_mismatch', t.paymentReference, t.occurredAt, { topUp: t.transferId }, t.amount, paid));
      // the payment was made, but by someone else than the payer it credits
      else if (t.senders && !t.senders.includes(b.payer.toLowerCase()))
        rows.push(row('prepaid_funding_mismatch', t.paymentReference, t.occurredAt, { topUp: t.transferId, paidBy: t.senders.join(' ') }, t.amount, paid));
    }
    if (b.stored !== b.recomputed) rows.push(row('prepaid_balance_mismatch', b.payer, at, {}, b.recomputed, b.stored));
    if (b.stored < 0n || b.stored - b.held < 0n) rows.push(row('prepaid_negative', b.payer, at, { held: b.held.toString() }, 0n, b.stored - b.held));
  }
  return rows;
}
