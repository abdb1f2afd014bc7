import { Injectable } from '@nestjs/common';
import type { Hex } from 'viem';
import { isUniqueViolation, PrismaService, withTransaction, type Tx } from '@mp/db';
import { MicroBatcher } from '@mp/platform';
import type { ChannelEventType } from '@mp/clients';

/** One channel's row, amounts as bigint. */
export interface ChannelRow {
  channelId: Hex;
  scope: string;
  merchantId: string | null;
  network: string;
  chainId: number;
  escrow: string;
  token: string;
  payer: string;
  payee: string;
  authorizedSigner: string;
  deposit: bigint;
  acceptedCumulative: bigint;
  acceptedSignature: string | null;
  spent: bigint;
  settledOnChain: bigint;
  minVoucherDelta: bigint;
  state: 'open' | 'closing' | 'closed';
  closeRequestedAt: Date | null;
  unsettledSince: Date | null;
  lastChallengeId: string;
  openTxHash: string;
  closeTxHash: string | null;
}

export interface NewChannel {
  channelId: Hex;
  scope: string;
  merchantId: string | null;
  network: string;
  chainId: number;
  escrow: string;
  token: string;
  payer: string;
  payee: string;
  authorizedSigner: string;
  deposit: bigint;
  settledOnChain: bigint;
  minVoucherDelta: bigint;
  challengeId: string;
  openTxHash: string;
}

export type ChargeOutcome =
  | { kind: 'charged'; channel: ChannelRow; amount: bigint; units: bigint | null; spentAfter: bigint; repeated: boolean }
  | { kind: 'need-voucher'; channel: ChannelRow; requiredCumulative: bigint }
  | { kind: 'not-found' }
  | { kind: 'not-open'; channel: ChannelRow }
  | { kind: 'conflict'; channel: ChannelRow; amount: bigint };

const COLUMNS = (c: string) => `${c}.channel_id AS "channelId", ${c}.scope, ${c}.merchant_id::text AS "merchantId", ${c}.network, ${c}.chain_id AS "chainId",
  ${c}.escrow, ${c}.token, ${c}.payer, ${c}.payee, ${c}.authorized_signer AS "authorizedSigner", ${c}.deposit::text AS deposit,
  ${c}.accepted_cumulative::text AS "acceptedCumulative", ${c}.accepted_signature AS "acceptedSignature", ${c}.spent::text AS spent,
  ${c}.settled_on_chain::text AS "settledOnChain", ${c}.min_voucher_delta::text AS "minVoucherDelta", ${c}.state,
  ${c}.close_requested_at AS "closeRequestedAt", ${c}.unsettled_since AS "unsettledSince", ${c}.last_challenge_id AS "lastChallengeId",
  ${c}.open_tx_hash AS "openTxHash", ${c}.close_tx_hash AS "closeTxHash"`;

/** The channel snapshot every event carries (channel-events.ts channelSnapshotSchema), built from the row it changed. */
const SNAPSHOT = (c: string) => `jsonb_build_object('channelId', ${c}.channel_id, 'merchantId', ${c}.merchant_id, 'network', ${c}.network,
  'escrow', ${c}.escrow, 'asset', ${c}.token, 'payer', ${c}.payer, 'payee', ${c}.payee, 'deposit', ${c}.deposit::text,
  'acceptedCumulative', ${c}.accepted_cumulative::text, 'spent', ${c}.spent::text, 'settled', ${c}.settled_on_chain::text, 'state', ${c}.state)`;

type RawRow = Omit<ChannelRow, 'deposit' | 'acceptedCumulative' | 'spent' | 'settledOnChain' | 'minVoucherDelta'> & {
  deposit: string;
  acceptedCumulative: string;
  spent: string;
  settledOnChain: string;
  minVoucherDelta: string;
};

function toRow(raw: RawRow): ChannelRow {
  return {
    ...raw,
    deposit: BigInt(raw.deposit),
    acceptedCumulative: BigInt(raw.acceptedCumulative),
    spent: BigInt(raw.spent),
    settledOnChain: BigInt(raw.settledOnChain),
    minVoucherDelta: BigInt(raw.minVoucherDelta),
  };
}

interface VoucherToAccept {
  channelId: string;
  cumulativeAmount: bigint;
  signature: string;
  challengeId: string;
}

/** Voucher statements running at once (each holds one pooled connection); what arrives meanwhile waits for the next. */
const VOUCHER_WRITES_IN_FLIGHT = 4;
/** Vouchers in one statement at most. */
const VOUCHER_BATCH_MAX = 256;

/**
 * Accepts a batch of vouchers of distinct channels in one statement: each row is locked (in channel_id order, so two
 * instances' batches cannot deadlock), raised only where its guard holds, and gets its `channel.voucher_accepted`
 * outbox row in the same statement. Returns the rows it raised; a channel missing from the answer was refused.
 */
const ACCEPT_VOUCHERS = `WITH input AS (
     SELECT * FROM unnest($1::text[], $2::numeric[], $3::text[], $4::text[]) AS i(channel_id, cumulative, signature, challenge_id)
   ), prev AS (
     SELECT c.channel_id, c.accepted_cumulative AS before FROM facilitator.session_channels c
      WHERE c.channel_id = ANY($1::text[]) ORDER BY c.channel_id FOR UPDATE
   ), up AS (
     UPDATE facilitator.session_channels c
        SET accepted_cumulative = i.cumulative, accepted_signature = i.signature, unsettled_since = COALESCE(c.unsettled_since, now()),
            last_voucher_at = now(), last_challenge_id = i.challenge_id, updated_at = now()
       FROM prev JOIN input i ON i.channel_id = prev.channel_id
      WHERE c.channel_id = prev.channel_id AND c.state = 'open' AND i.cumulative > c.accepted_cumulative
        AND i.cumulative - c.accepted_cumulative >= c.min_voucher_delta AND i.cumulative <= c.deposit
     RETURNING c.*, prev.before
   ), ev AS (
     INSERT INTO facilitator.channel_events (channel_id, type, data, snapshot)
     SELECT up.channel_id, 'channel.voucher_accepted',
            jsonb_build_object('delta', (up.accepted_cumulative - up.before)::text, 'acceptedCumulative', up.accepted_cumulative::text), ${SNAPSHOT('up')}
       FROM up ORDER BY up.channel_id
   )
   SELECT ${COLUMNS('up')} FROM up`;

/**
 * The facilitator's channel book in PostgreSQL (session_channels, session_charges, session_deposits) and its outbox
 * (channel_events): every change and the event recording it are written in one transaction, most in one statement,
 * and every raise is guarded in SQL (monotone, ≤ deposit, spent ≤ accepted), so two instances can never overspend a
 * channel or count a voucher, deposit or charge twice.
 */
@Injectable()
export class SessionChannels {
  private readonly vouchers: MicroBatcher<VoucherToAccept, ChannelRow | undefined>;

  constructor(private readonly db: PrismaService) {
    this.vouchers = new MicroBatcher(
      (v) => v.channelId,
      (batch) => this.acceptVouchers(batch),
      { maxRunning: VOUCHER_WRITES_IN_FLIGHT, maxBatch: VOUCHER_BATCH_MAX },
    );
  }

  async find(channelId: string, db: PrismaService | Tx = this.db): Promise<ChannelRow | undefined> {
    const rows = await db.$queryRawUnsafe<RawRow[]>(
      `SELECT ${COLUMNS('c')} FROM facilitator.session_channels c WHERE c.channel_id = $1`,
      channelId.toLowerCase(),
    );
    return rows[0] && toRow(rows[0]);
  }

  /** Records an opened channel with its opening deposit and `channel.opened`; a second open of the same id changes nothing. */
  async open(channel: NewChannel): Promise<{ created: boolean; channel: ChannelRow }> {
    return withTransaction(this.db, async (tx) => {
      const inserted = await tx.$executeRawUnsafe(
        `INSERT INTO facilitator.session_channels (channel_id, scope, merchant_id, network, chain_id, escrow, token, payer, payee, authorized_signer,
           deposit, accepted_cumulative, spent, settled_on_chain, min_voucher_delta, last_challenge_id, open_tx_hash)
         VALUES ($1, $2, $3::uuid, $4, $5, $6, $7, $8, $9, $10, $11::numeric, $12::numeric, $12::numeric, $12::numeric, $13::numeric, $14, $15)
         ON CONFLICT (channel_id) DO NOTHING`,
        channel.channelId.toLowerCase(),
        channel.scope,
        channel.merchantId,
        channel.network,
        channel.chainId,
        channel.escrow.toLowerCase(),
        channel.token.toLowerCase(),
        channel.payer.toLowerCase(),
        channel.payee.toLowerCase(),
        channel.authorizedSigner.toLowerCase(),
        channel.deposit.toString(),
        // what the chain already paid out is accepted and spent by definition (a resumed channel starts from there)
        channel.settledOnChain.toString(),
        channel.minVoucherDelta.toString(),
        channel.challengeId,
        channel.openTxHash.toLowerCase(),
      );
      if (inserted) {
        await tx.$executeRawUnsafe(
          `INSERT INTO facilitator.session_deposits (tx_hash, channel_id, kind, amount) VALUES ($1, $2, 'open', $3::numeric) ON CONFLICT DO NOTHING`,
          channel.openTxHash.toLowerCase(),
          channel.channelId.toLowerCase(),
          channel.deposit.toString(),
        );
        await this.event(tx, channel.channelId, 'channel.opened', { deposit: channel.deposit.toString(), txHash: channel.openTxHash.toLowerCase() });
      }
      return { created: inserted > 0, channel: (await this.find(channel.channelId, tx))! };
    });
  }

  /**
   * Counts a top-up transaction once (by its hash): the deposit becomes the chain's, a close request is cleared (the
   * escrow clears it on a top-up), and `channel.topped_up` is written. `counted` false: it was counted before.
   */
  async topUp(channelId: Hex, txHash: Hex, amount: bigint, chainDeposit: bigint): Promise<{ counted: boolean; channel: ChannelRow }> {
    return withTransaction(this.db, async (tx) => {
      const inserted = await tx.$executeRawUnsafe(
        `INSERT INTO facilitator.session_deposits (tx_hash, channel_id, kind, amount) VALUES ($1, $2, 'topUp', $3::numeric) ON CONFLICT DO NOTHING`,
        txHash.toLowerCase(),
        channelId.toLowerCase(),
        amount.toString(),
      );
      if (inserted) {
        await tx.$executeRawUnsafe(
          `UPDATE facilitator.session_channels SET deposit = GREATEST(deposit, $2::numeric), close_requested_at = NULL,
             state = CASE WHEN state = 'closing' AND close_requested_at IS NOT NULL THEN 'open' ELSE state END, updated_at = now()
           WHERE channel_id = $1 AND state <> 'closed'`,
          channelId.toLowerCase(),
          chainDeposit.toString(),
        );
        const after = (await this.find(channelId, tx))!;
        await this.event(tx, channelId, 'channel.topped_up', { amount: amount.toString(), deposit: after.deposit.toString(), txHash: txHash.toLowerCase() });
      }
      return { counted: inserted > 0, channel: (await this.find(channelId, tx))! };
    });
  }

  /**
   * Raises the accepted cumulative to `cumulativeAmount` with its signature, and writes `channel.voucher_accepted`,
   * in one statement guarded by the row: open, strictly higher, at least minVoucherDelta higher, within the deposit.
   * Undefined when the guard refused it (the caller reads the row to tell why). Concurrent vouchers of different
   * channels share that statement (group commit: one round trip and one commit for the lot, see ACCEPT_VOUCHERS); two
   * of one channel never do, so each is judged against the row the other left.
   */
  acceptVoucher(channelId: Hex, cumulativeAmount: bigint, signature: Hex, challengeId: string): Promise<ChannelRow | undefined> {
    return this.vouchers.submit({ channelId: channelId.toLowerCase(), cumulativeAmount, signature: signature.toLowerCase(), challengeId });
  }

  private async acceptVouchers(vouchers: VoucherToAccept[]): Promise<PromiseSettledResult<ChannelRow | undefined>[]> {
    const rows = await this.db.$queryRawUnsafe<RawRow[]>(
      ACCEPT_VOUCHERS,
      vouchers.map((v) => v.channelId),
      vouchers.map((v) => v.cumulativeAmount.toString()),
      vouchers.map((v) => v.signature),
      vouchers.map((v) => v.challengeId),
    );
    const accepted = new Map<string, ChannelRow>(rows.map((raw) => [raw.channelId, toRow(raw)]));
    return vouchers.map((v) => ({ status: 'fulfilled', value: accepted.get(v.channelId) }));
  }

  /**
   * Charges `amount` against the accepted value, before delivery: `spent += amount` only while `spent + amount ≤
   * accepted`, the charge row (its chargeId unique per channel) and `channel.spent` in the same statement. A repeated
   * chargeId never adds to spent: it is answered with the original charge (or a conflict if the amount differs).
   */
  async charge(scope: string, channelId: Hex, chargeId: string, amount: bigint, units: bigint | undefined): Promise<ChargeOutcome> {
    try {
      const rows = await this.db.$queryRawUnsafe<RawRow[]>(
        `WITH up AS (
           UPDATE facilitator.session_channels c SET spent = c.spent + $3::numeric, updated_at = now()
            WHERE c.channel_id = $1 AND c.scope = $2 AND c.state = 'open' AND c.spent + $3::numeric <= c.accepted_cumulative
              AND NOT EXISTS (SELECT 1 FROM facilitator.session_charges s WHERE s.channel_id = $1 AND s.charge_id = $4)
           RETURNING c.*
         ), ch AS (
           INSERT INTO facilitator.session_charges (channel_id, charge_id, amount, units, spent_after)
           SELECT up.channel_id, $4, $3::numeric, $5::numeric, up.spent FROM up
         ), ev AS (
           INSERT INTO facilitator.channel_events (channel_id, type, data, snapshot)
           SELECT up.channel_id, 'channel.spent',
                  jsonb_strip_nulls(jsonb_build_object('chargeId', $4::text, 'amount', $3::numeric::text, 'spent', up.spent::text, 'units', $5::numeric::text)), ${SNAPSHOT('up')}
             FROM up
         )
         SELECT ${COLUMNS('up')} FROM up`,
        channelId.toLowerCase(),
        scope,
        amount.toString(),
        chargeId,
        units === undefined ? null : units.toString(),
      );
      if (rows[0]) {
        const channel = toRow(rows[0]);
        return { kind: 'charged', channel, amount, units: units ?? null, spentAfter: channel.spent, repeated: false };
      }
    } catch (error) {
      // the same chargeId charged concurrently: the other request's charge is the one (this statement rolled back)
      if (!isUniqueViolation(error)) throw error;
    }
    const channel = await this.find(channelId);
    if (!channel || channel.scope !== scope) return { kind: 'not-found' };
    const earlier = await this.db.$queryRawUnsafe<{ amount: string; units: string | null; spentAfter: string }[]>(
      `SELECT amount::text, units::text, spent_after::text AS "spentAfter" FROM facilitator.session_charges WHERE channel_id = $1 AND charge_id = $2`,
      channelId.toLowerCase(),
      chargeId,
    );
    if (earlier[0]) {
      if (BigInt(earlier[0].amount) !== amount) return { kind: 'conflict', channel, amount: BigInt(earlier[0].amount) };
      return {
        kind: 'charged',
        channel,
        amount,
        units: earlier[0].units === null ? null : BigInt(earlier[0].units),
        spentAfter: BigInt(earlier[0].spentAfter),
        repeated: true,
      };
    }
    if (channel.state !== 'open') return { kind: 'not-open', channel };
    return { kind: 'need-voucher', channel, requiredCumulative: channel.spent + amount };
  }

  /** Stops charging for a close under way (the payer's close credential): open → closing. False if it was not open. */
  async beginClose(channelId: Hex, challengeId: string): Promise<ChannelRow | undefined> {
    const rows = await this.db.$queryRawUnsafe<RawRow[]>(
      `UPDATE facilitator.session_channels c SET state = 'closing', last_challenge_id = $2, updated_at = now()
        WHERE c.channel_id = $1 AND c.state IN ('open', 'closing') RETURNING ${COLUMNS('c')}`,
      channelId.toLowerCase(),
      challengeId,
    );
    return rows[0] && toRow(rows[0]);
  }

  /**
   * The escrow finalized the channel (ChannelClosed: our close, or the payer's withdraw after the grace period):
   * settled and accepted raised to what it paid, `channel.settled` (when it paid anything new) and `channel.closed`.
   * Idempotent: a closed channel is left as it is.
   */
  async closed(
    channelId: Hex,
    close: { by: 'close' | 'withdraw'; signature?: string; settledToPayee: bigint; refundedToPayer: bigint; txHash: Hex },
  ): Promise<ChannelRow> {
    return withTransaction(this.db, async (tx) => {
      const before = await tx.$queryRawUnsafe<{ settled: string; state: string }[]>(
        `SELECT settled_on_chain::text AS settled, state FROM facilitator.session_channels WHERE channel_id = $1 FOR UPDATE`,
        channelId.toLowerCase(),
      );
      if (!before[0] || before[0].state === 'closed') return (await this.find(channelId, tx))!;
      const settledBefore = BigInt(before[0].settled);
      await tx.$executeRawUnsafe(
        `UPDATE facilitator.session_channels
            SET accepted_signature = CASE WHEN $2::numeric > accepted_cumulative THEN $3 ELSE accepted_signature END,
                accepted_cumulative = GREATEST(accepted_cumulative, $2::numeric),
                settled_on_chain = $2::numeric, state = 'closed', close_tx_hash = $4, unsettled_since = NULL, updated_at = now()
          WHERE channel_id = $1`,
        channelId.toLowerCase(),
        close.settledToPayee.toString(),
        close.signature ?? null,
        close.txHash.toLowerCase(),
      );
      if (close.settledToPayee > settledBefore)
        await this.event(tx, channelId, 'channel.settled', {
          delta: (close.settledToPayee - settledBefore).toString(),
          settled: close.settledToPayee.toString(),
          txHash: close.txHash.toLowerCase(),
        });
      await this.event(tx, channelId, 'channel.closed', {
        by: close.by,
        refunded: close.refundedToPayer.toString(),
        settled: close.settledToPayee.toString(),
        txHash: close.txHash.toLowerCase(),
      });
      return (await this.find(channelId, tx))!;
    });
  }

  /** The escrow paid out up to `settled` (our settle's Settled event): raised once, with `channel.settled`. */
  async settled(channelId: Hex, settled: bigint, txHash: Hex): Promise<ChannelRow> {
    return withTransaction(this.db, async (tx) => {
      const before = await tx.$queryRawUnsafe<{ settled: string }[]>(
        `SELECT settled_on_chain::text AS settled FROM facilitator.session_channels WHERE channel_id = $1 AND state <> 'closed' FOR UPDATE`,
        channelId.toLowerCase(),
      );
      if (before[0] && settled > BigInt(before[0].settled)) {
        await tx.$executeRawUnsafe(
          `UPDATE facilitator.session_channels
              SET settled_on_chain = $2::numeric,
                  unsettled_since = CASE WHEN $2::numeric >= accepted_cumulative THEN NULL ELSE unsettled_since END, updated_at = now()
            WHERE channel_id = $1`,
          channelId.toLowerCase(),
          settled.toString(),
        );
        await this.event(tx, channelId, 'channel.settled', {
          delta: (settled - BigInt(before[0].settled)).toString(),
          settled: settled.toString(),
          txHash: txHash.toLowerCase(),
        });
      }
      return (await this.find(channelId, tx))!;
    });
  }

  /** The payer called requestClose on chain: closing, with `channel.close_requested` (once). */
  async closeRequested(channelId: Hex, requestedAt: Date, graceEndsAt: Date, txHash: Hex): Promise<ChannelRow | undefined> {
    return withTransaction(this.db, async (tx) => {
      const marked = await tx.$executeRawUnsafe(
        `UPDATE facilitator.session_channels SET state = 'closing', close_requested_at = $2, updated_at = now()
          WHERE channel_id = $1 AND state <> 'closed' AND close_requested_at IS NULL`,
        channelId.toLowerCase(),
        requestedAt,
      );
      if (marked) await this.event(tx, channelId, 'channel.close_requested', { graceEndsAt: graceEndsAt.toISOString(), txHash: txHash.toLowerCase() });
      return this.find(channelId, tx);
    });
  }

  /** Channels not finalized yet, the least recently looked at first: what the worker watches and settles. */
  async live(networks: string[], limit: number): Promise<ChannelRow[]> {
    const rows = await this.db.$queryRawUnsafe<RawRow[]>(
      `SELECT ${COLUMNS('c')} FROM facilitator.session_channels c WHERE c.state <> 'closed' AND c.network = ANY($1::text[]) ORDER BY c.updated_at LIMIT ${Number(limit)}`,
      networks,
    );
    return rows.map(toRow);
  }

  /** Channels open without a voucher (or an open) since `before`: closed by us (SESSION_IDLE_CLOSE_MS). */
  async idleSince(networks: string[], before: Date, limit: number): Promise<ChannelRow[]> {
    const rows = await this.db.$queryRawUnsafe<RawRow[]>(
      `SELECT ${COLUMNS('c')} FROM facilitator.session_channels c
        WHERE c.state = 'open' AND c.network = ANY($2::text[]) AND COALESCE(c.last_voucher_at, c.created_at) < $1 ORDER BY c.created_at LIMIT ${Number(limit)}`,
      before,
      networks,
    );
    return rows.map(toRow);
  }

  /** A close that did not go through (it would revert, or reverted): the channel is open again for the next attempt. */
  async reopen(channelId: Hex): Promise<void> {
    await this.db.$executeRawUnsafe(
      `UPDATE facilitator.session_channels SET state = 'open', updated_at = now() WHERE channel_id = $1 AND state = 'closing' AND close_requested_at IS NULL`,
      channelId.toLowerCase(),
    );
  }

  /** Writes one outbox row with the channel as it is now in this transaction. */
  private async event(tx: Tx, channelId: string, type: ChannelEventType, data: Record<string, string>): Promise<void> {
    await tx.$executeRawUnsafe(
      `INSERT INTO facilitator.channel_events (channel_id, type, data, snapshot)
       SELECT c.channel_id, $2, $3::jsonb, ${SNAPSHOT('c')} FROM facilitator.session_channels c WHERE c.channel_id = $1`,
      channelId.toLowerCase(),
      type,
      JSON.stringify(data),
    );
  }
}
