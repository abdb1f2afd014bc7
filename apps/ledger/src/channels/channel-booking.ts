import type { ChannelEventMessage } from '@mp/clients';
import {
  CHANNEL_ACCOUNT_ROLES,
  channelAccount,
  channelAccountId,
  channelTransferId,
  postedBalance,
  TransferCode,
  type AccountInput,
  type ChannelAccountRole,
  type NormalBalance,
  type TransferInput,
} from '@mp/ledger';

/**
 * How a payment channel's events are booked, as plain data. A channel has seven accounts (see `channelAccount`); each
 * of its five figures is one account's balance and only ever grows, by one kind of transfer:
 *
 * | figure   | transfer (code)        | debit            | credit           |
 * |----------|------------------------|------------------|------------------|
 * | deposit  | channelDeposit (10)    | escrow           | deposit          |
 * | accepted | channelVoucher (11)    | accepted         | unspent          |
 * | spent    | channelSpend (12)      | unspent          | spent            |
 * | settled  | channelSettle (13)     | settled          | escrow           |
 * | refunded | channelRefund (14)     | refunded         | escrow           |
 *
 * so escrow = deposit − settled − refunded (what the escrow holds; never below zero) and unspent = accepted − spent
 * (never below zero): the core's balance limits keep settled + refunded ≤ deposit and spent ≤ accepted under its locks.
 *
 * An x402 batch-settlement channel (snapshot `scheme: "x402-batch"`) is booked on the same accounts with the same
 * transfers: deposits (opened, topped_up) are deposit; each claim comes as voucher_accepted + spent of its delta
 * (claimed is accepted and spent at once); settle(receiver, token) is settled per channel; a refund or finalized
 * withdrawal (channel.refunded) is refunded, and may come while the channel stays open. Its snapshot carries `refunded`
 * (its books' refunded must reach it) and keeps claimed + refunded ≤ deposit, as the contract does.
 */
export const CHANNEL_FIGURES = ['deposit', 'accepted', 'spent', 'settled', 'refunded'] as const;
export type ChannelFigure = (typeof CHANNEL_FIGURES)[number];
export type ChannelFigures = Record<ChannelFigure, bigint>;
export type ChannelState = 'open' | 'closing' | 'closed';
export type ChannelScheme = 'mpp-session' | 'x402-batch';

const FIGURE_TRANSFERS: Record<ChannelFigure, { debit: ChannelAccountRole; credit: ChannelAccountRole; code: number }> = {
  deposit: { debit: 'channelEscrow', credit: 'channelDeposit', code: TransferCode.channelDeposit },
  accepted: { debit: 'channelAccepted', credit: 'channelUnspent', code: TransferCode.channelVoucher },
  spent: { debit: 'channelUnspent', credit: 'channelSpent', code: TransferCode.channelSpend },
  settled: { debit: 'channelSettled', credit: 'channelEscrow', code: TransferCode.channelSettle },
  refunded: { debit: 'channelRefunded', credit: 'channelEscrow', code: TransferCode.channelRefund },
};

/** The account whose balance is the figure. */
const FIGURE_ACCOUNTS: Record<ChannelFigure, ChannelAccountRole> = {
  deposit: 'channelDeposit',
  accepted: 'channelAccepted',
  spent: 'channelSpent',
  settled: 'channelSettled',
  refunded: 'channelRefunded',
};

/** One figure's step: from `before` to `after` (> before), named by `reference` (the transaction, the charge, the event). */
export interface ChannelStep {
  figure: ChannelFigure;
  before: bigint;
  after: bigint;
  reference: string;
}

export interface ChannelPlan {
  channelId: string;
  merchantId: string;
  scheme: ChannelScheme;
  /** the ledger asset: `eip155:8453/0x…` */
  asset: string;
  /** absent: the event moves no money (close requested, a close with nothing to refund) */
  step?: ChannelStep;
  /** the books' figures once this event is booked, as the event's snapshot says */
  expected: ChannelFigures;
  state: ChannelState;
  graceEndsAt?: Date;
}

export type PlanResult = { ok: true; plan: ChannelPlan } | { ok: false; reason: string } | { ok: true; plan: undefined };

/**
 * What an event books, or why it breaks the channel-events contract (a reason no retry changes): its cumulative figure
 * must be its snapshot's, its step must not start below zero, and its snapshot must keep the channel's rules
 * (settled ≤ accepted ≤ deposit, spent ≤ accepted; once closed, settled + refunded = deposit). `plan: undefined`: a
 * channel no merchant's key claimed (open mode) belongs to no merchant's book.
 */
export function planChannelEvent(event: ChannelEventMessage): PlanResult {
  const { channel } = event;
  if (!channel.merchantId) return { ok: true, plan: undefined };
  const snapshot = {
    deposit: BigInt(channel.deposit),
    accepted: BigInt(channel.acceptedCumulative),
    spent: BigInt(channel.spent),
    settled: BigInt(channel.settled),
  };
  const scheme: ChannelScheme = channel.scheme ?? 'mpp-session';
  const refunded = channel.refunded !== undefined ? BigInt(channel.refunded) : event.type === 'channel.closed' ? BigInt(event.data.refunded) : 0n;
  const expected: ChannelFigures = { ...snapshot, refunded };
  const broken = (reason: string): PlanResult => ({ ok: false, reason: `${event.type} ${event.eventId} of channel ${channel.channelId}: ${reason}` });

  if (scheme === 'x402-batch' && (channel.state !== 'open' || event.type === 'channel.closed' || event.type === 'channel.close_requested'))
    return broken(`an x402-batch channel is never closed on chain (a ${event.type} in state ${channel.state})`);
  if (scheme === 'x402-batch' && snapshot.accepted + refunded > snapshot.deposit)
    return broken(`claimed ${snapshot.accepted} + refunded ${refunded} exceeds the deposit ${snapshot.deposit}`);
  if (scheme === 'x402-batch' && snapshot.spent !== snapshot.accepted && event.type !== 'channel.voucher_accepted')
    return broken(`spent ${snapshot.spent} is not claimed ${snapshot.accepted} (a claim is both)`);
  if (scheme === 'mpp-session' && event.type === 'channel.refunded') return broken('an MPP session channel is refunded by its close only');
  if (snapshot.accepted > snapshot.deposit) return broken(`accepted ${snapshot.accepted} exceeds the deposit ${snapshot.deposit}`);
  if (snapshot.spent > snapshot.accepted) return broken(`spent ${snapshot.spent} exceeds accepted ${snapshot.accepted}`);
  if (snapshot.settled > snapshot.accepted) return broken(`settled ${snapshot.settled} exceeds accepted ${snapshot.accepted}`);

  let step: { figure: ChannelFigure; amount: bigint; after: bigint; reference: string } | undefined;
  let state: ChannelState = channel.state;
  let graceEndsAt: Date | undefined;
  switch (event.type) {
    case 'channel.opened':
      step = { figure: 'deposit', amount: BigInt(event.data.deposit), after: BigInt(event.data.deposit), reference: event.data.txHash };
      break;
    case 'channel.topped_up':
      step = { figure: 'deposit', amount: BigInt(event.data.amount), after: BigInt(event.data.deposit), reference: event.data.txHash };
      break;
    case 'channel.voucher_accepted':
      step = { figure: 'accepted', amount: BigInt(event.data.delta), after: BigInt(event.data.acceptedCumulative), reference: `event:${event.eventId}` };
      break;
    case 'channel.spent':
      step = { figure: 'spent', amount: BigInt(event.data.amount), after: BigInt(event.data.spent), reference: event.data.chargeId };
      break;
    case 'channel.settled':
      step = { figure: 'settled', amount: BigInt(event.data.delta), after: BigInt(event.data.settled), reference: event.data.txHash };
      break;
    case 'channel.close_requested':
      state = 'closing';
      graceEndsAt = new Date(event.data.graceEndsAt);
      break;
    case 'channel.closed': {
      state = 'closed';
      if (BigInt(event.data.settled) !== snapshot.settled) return broken(`settled ${event.data.settled} is not the snapshot's ${snapshot.settled}`);
      if (snapshot.settled + refunded !== snapshot.deposit)
        return broken(`settled ${snapshot.settled} + refunded ${refunded} is not the deposit ${snapshot.deposit}`);
      step = { figure: 'refunded', amount: refunded, after: refunded, reference: event.data.txHash };
      break;
    }
    case 'channel.refunded':
      step = { figure: 'refunded', amount: BigInt(event.data.amount), after: BigInt(event.data.refunded), reference: event.data.txHash };
      break;
  }
  if (step && step.after !== expected[step.figure]) return broken(`${step.figure} ${step.after} is not the snapshot's ${expected[step.figure]}`);
  if (step && step.amount > step.after) return broken(`the step of ${step.amount} is more than the total ${step.after}`);
  return {
    ok: true,
    plan: {
      channelId: channel.channelId,
      merchantId: channel.merchantId,
      scheme,
      asset: channelAsset(channel.network, channel.asset),
      ...(step && step.amount > 0n && { step: { figure: step.figure, before: step.after - step.amount, after: step.after, reference: step.reference } }),
      expected,
      state,
      ...(graceEndsAt && { graceEndsAt }),
    },
  };
}

/** The ledger asset of a channel's token, as payments name it: `eip155:8453/0x…` (lowercase). */
export function channelAsset(network: string, token: string): string {
  return `${network}/${token.toLowerCase()}`;
}

export function channelAccounts(channelId: string, asset: string): AccountInput[] {
  return CHANNEL_ACCOUNT_ROLES.map((role) => channelAccount(channelId, role, asset));
}

/** The transfer of one step: keyed by its figure and where it starts (see `channelTransferId`). */
export function stepTransfer(channelId: string, asset: string, step: ChannelStep): TransferInput {
  const { debit, credit, code } = FIGURE_TRANSFERS[step.figure];
  return {
    id: channelTransferId(channelId, step.figure, step.before),
    debitAccountId: channelAccountId(channelId, debit),
    creditAccountId: channelAccountId(channelId, credit),
    amount: step.after - step.before,
    asset,
    code,
    flags: 0,
    reference: step.reference,
  };
}

/** The channel's figures from its accounts' posted totals (a missing account reads zero). */
export function figuresOf(
  accounts: readonly { id: string; normalBalance: NormalBalance; debitsPosted: bigint; creditsPosted: bigint }[],
  channelId: string,
): ChannelFigures & { held: bigint; unspent: bigint } {
  const byId = new Map(accounts.map((a) => [a.id, a]));
  const balance = (role: ChannelAccountRole) => {
    const a = byId.get(channelAccountId(channelId, role));
    return a ? postedBalance(a.normalBalance, a.debitsPosted, a.creditsPosted) : 0n;
  };
  const figures = Object.fromEntries(CHANNEL_FIGURES.map((f) => [f, balance(FIGURE_ACCOUNTS[f])])) as ChannelFigures;
  return { ...figures, held: balance('channelEscrow'), unspent: balance('channelUnspent') };
}

/** The channel's account ids, for a lookup. */
export function channelAccountIds(channelId: string): string[] {
  return CHANNEL_ACCOUNT_ROLES.map((role) => channelAccountId(channelId, role));
}

/**
 * What the books lack before this event can be booked: figures below the event's snapshot other than the one it moves
 * (an earlier event of the channel not booked yet). Empty when nothing is missing.
 */
export function missingBefore(books: ChannelFigures, plan: ChannelPlan): string[] {
  return CHANNEL_FIGURES.filter((f) => f !== plan.step?.figure && books[f] < plan.expected[f]).map(
    (f) => `${f} is ${books[f]} in the books, the event says ${plan.expected[f]}`,
  );
}
