import { Injectable } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import type { ChannelEventMessage } from '@mp/clients';
import { isSuccess, TRANSFER_RESULT_MESSAGES } from '@mp/ledger';
import { LedgerService } from '../core/ledger.service';
import {
  channelAccountIds,
  channelAccounts,
  figuresOf,
  missingBefore,
  planChannelEvent,
  stepTransfer,
  type ChannelFigures,
  type ChannelPlan,
  type ChannelScheme,
  type ChannelState,
} from './channel-booking';

/** An event that breaks the channel-events contract or that the books refuse: no retry can mend it. */
export class ChannelEventRefusedError extends Error {}

/**
 * An event that comes before its time: the books lack an earlier event of the channel (a gap in its figures). Nothing
 * is booked; the job is retried with backoff until the earlier event is booked (out-of-order delivery), and fails for
 * an operator after the last attempt (a lost event: reconciliation against the escrow shows the channel's break too).
 */
export class ChannelEventGapError extends Error {}

export type ChannelBookingOutcome = 'booked' | 'skipped';

/** A channel as its books read: where it is, its state and its figures. */
export interface BookedChannel extends ChannelFigures {
  channelId: string;
  /** mpp-session | x402-batch */
  scheme: ChannelScheme;
  network: string;
  escrow: string;
  asset: string;
  payer: string;
  payee: string;
  state: ChannelState;
  /** deposit − settled − refunded: what the escrow holds for it */
  held: bigint;
  /** accepted − spent */
  unspent: bigint;
  graceEndsAt: Date | null;
  lastEventId: string;
  openedAt: Date;
  closedAt: Date | null;
}

type ChannelRow = Awaited<ReturnType<PrismaService['ledgerChannel']['findUniqueOrThrow']>>;

/**
 * Books the facilitator's payment-channel events (see channel-booking.ts) and reads a channel's books back. An event
 * books at most one transfer, keyed by its figure and where that figure stood before it, after checking the books
 * are where the event says they were: behind is a gap (retried), elsewhere is a contract break (refused).
 */
@Injectable()
export class ChannelBooks {
  constructor(
    private readonly ledger: LedgerService,
    private readonly db: PrismaService,
  ) {}

  async book(event: ChannelEventMessage): Promise<ChannelBookingOutcome> {
    const planned = planChannelEvent(event);
    if (!planned.ok) throw new ChannelEventRefusedError(planned.reason);
    const plan = planned.plan;
    if (!plan) return 'skipped';
    const { merchantId, channelId } = plan;
    await this.open(plan, event);
    const books = await this.figures(merchantId, channelId);

    let outcome: ChannelBookingOutcome = 'skipped';
    const step = plan.step;
    if (step) {
      const at = books[step.figure];
      const transfer = stepTransfer(channelId, plan.asset, step);
      if (at >= step.after) {
        // past this step already: booked before (a redelivery), or by a step the event does not know (a break)
        const [found] = await this.ledger.lookupTransfers(merchantId, [transfer.id]);
        if (!found || found.amount !== transfer.amount)
          throw new ChannelEventRefusedError(
            `${event.type} ${event.eventId} of channel ${channelId}: the books' ${step.figure} is ${at}, past ${step.after}, by another step than ${step.before} → ${step.after}`,
          );
      } else if (at < step.before) {
        throw new ChannelEventGapError(
          `${event.type} ${event.eventId} of channel ${channelId}: ${step.figure} is ${at} in the books, the event starts at ${step.before} (an earlier event is not booked yet)`,
        );
      } else if (at > step.before) {
        throw new ChannelEventRefusedError(
          `${event.type} ${event.eventId} of channel ${channelId}: ${step.figure} is ${at} in the books, between the event's ${step.before} and ${step.after}`,
        );
      } else {
        this.checkNothingMissing(books, plan, event);
        const [result] = await this.ledger.createTransfers(merchantId, [transfer]);
        if (!isSuccess(result.result)) {
          const code = result.firstResult ?? result.result;
          throw new ChannelEventRefusedError(
            `${event.type} ${event.eventId} of channel ${channelId}: transfer ${transfer.id} refused: ${code} (${TRANSFER_RESULT_MESSAGES[code]})`,
          );
        }
        outcome = result.result === 'created' ? 'booked' : 'skipped';
      }
    } else {
      this.checkNothingMissing(books, plan, event);
    }
    if (await this.advance(plan, event)) outcome = 'booked';
    return outcome;
  }

  /** The channel's books, or undefined when the merchant has no such channel. */
  async read(merchantId: string, channelId: string): Promise<BookedChannel | undefined> {
    const row = await this.db.ledgerChannel.findUnique({ where: { merchantId_channelId: { merchantId, channelId: channelId.toLowerCase() } } });
    return row ? this.booksOf(row) : undefined;
  }

  /** Every channel of the merchant with its books, oldest first. */
  async list(merchantId: string): Promise<BookedChannel[]> {
    const rows = await this.db.ledgerChannel.findMany({ where: { merchantId }, orderBy: [{ openedAt: 'asc' }, { channelId: 'asc' }] });
    return Promise.all(rows.map((row) => this.booksOf(row)));
  }

  private async booksOf(row: ChannelRow): Promise<BookedChannel> {
    const figures = figuresOf(await this.ledger.lookupAccounts(row.merchantId, channelAccountIds(row.channelId)), row.channelId);
    return {
      channelId: row.channelId,
      scheme: row.scheme as ChannelScheme,
      network: row.network,
      escrow: row.escrow,
      asset: row.asset,
      payer: row.payer,
      payee: row.payee,
      state: row.state as ChannelState,
      ...figures,
      graceEndsAt: row.graceEndsAt,
      lastEventId: row.lastEventId.toString(),
      openedAt: row.openedAt,
      closedAt: row.closedAt,
    };
  }

  private checkNothingMissing(books: ChannelFigures, plan: ChannelPlan, event: ChannelEventMessage): void {
    const missing = missingBefore(books, plan);
    if (missing.length)
      throw new ChannelEventGapError(`${event.type} ${event.eventId} of channel ${plan.channelId}: an earlier event is not booked yet (${missing.join('; ')})`);
  }

  private async figures(merchantId: string, channelId: string): Promise<ChannelFigures> {
    return figuresOf(await this.ledger.lookupAccounts(merchantId, channelAccountIds(channelId)), channelId);
  }

  /**
   * The channel's row and accounts, created by whichever of its events comes first; an event that names the channel
   * with another scheme, escrow, asset, payer or payee than its first one breaks the contract.
   */
  private async open(plan: ChannelPlan, event: ChannelEventMessage): Promise<void> {
    const { channel } = event;
    const identity = { scheme: plan.scheme, network: channel.network, escrow: channel.escrow, asset: plan.asset, payer: channel.payer, payee: channel.payee };
    await this.db.ledgerChannel.createMany({
      data: {
        merchantId: plan.merchantId,
        channelId: plan.channelId,
        ...identity,
        state: 'open',
        lastEventId: 0n,
        ...(event.type === 'channel.opened' && { openedAt: new Date(event.occurredAt) }),
      },
      skipDuplicates: true,
    });
    const row = await this.db.ledgerChannel.findUniqueOrThrow({ where: { merchantId_channelId: { merchantId: plan.merchantId, channelId: plan.channelId } } });
    for (const [key, value] of Object.entries(identity))
      if (row[key as keyof typeof identity] !== value)
        throw new ChannelEventRefusedError(
          `${event.type} ${event.eventId} of channel ${plan.channelId}: its ${key} ${value} is not the channel's ${row[key as keyof typeof identity]}`,
        );
    const results = await this.ledger.createAccounts(plan.merchantId, channelAccounts(plan.channelId, plan.asset));
    const refused = results.find((r) => r.result !== 'created' && r.result !== 'exists');
    if (refused) throw new ChannelEventRefusedError(`the accounts of channel ${plan.channelId}: ${refused.result}`);
  }

  /**
   * Moves the row's state forward (never back: a late close_requested after the close changes nothing) and its last
   * event id up, in one statement under the row's lock; true when the state changed.
   */
  private async advance(plan: ChannelPlan, event: ChannelEventMessage): Promise<boolean> {
    const rank = (column: string) => `CASE ${column} WHEN 'open' THEN 0 WHEN 'closing' THEN 1 ELSE 2 END`;
    const [row] = await this.db.$queryRawUnsafe<{ before: string; after: string }[]>(
      `UPDATE ledger.channels c SET
         state = CASE WHEN ${rank('$3::text')} > ${rank('c.state')} THEN $3::text ELSE c.state END,
         last_event_id = GREATEST(c.last_event_id, $4::bigint),
         opened_at = COALESCE($5::timestamptz, c.opened_at),
         grace_ends_at = CASE WHEN $6::timestamptz IS NOT NULL AND c.state <> 'closed' THEN $6::timestamptz ELSE c.grace_ends_at END,
         closed_at = CASE WHEN $3::text = 'closed' AND c.state <> 'closed' THEN $7::timestamptz ELSE c.closed_at END,
         updated_at = now()
       FROM (SELECT state FROM ledger.channels WHERE merchant_id = $1::uuid AND channel_id = $2 FOR UPDATE) o
       WHERE c.merchant_id = $1::uuid AND c.channel_id = $2
       RETURNING o.state AS before, c.state AS after`,
      plan.merchantId,
      plan.channelId,
      plan.state,
      event.eventId,
      event.type === 'channel.opened' ? new Date(event.occurredAt) : null,
      plan.graceEndsAt ?? null,
      new Date(event.occurredAt),
    );
    return row !== undefined && row.before !== row.after;
  }
}
