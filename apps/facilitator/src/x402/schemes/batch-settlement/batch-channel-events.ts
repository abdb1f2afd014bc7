import { decodeFunctionData, isAddressEqual, parseEventLogs, type Hex, type PublicClient, type TransactionReceipt } from 'viem';
import { batchSettlementAbi, MULTICALL3_ADDRESS } from '@mp/chain';
import type { ChannelEventType, ChannelSnapshot } from '@mp/clients';
import { Prisma, type Tx } from '@mp/db';
import { BATCH_SETTLEMENT_ADDRESS, channelIdOf, type ChannelConfigWire } from '@mp/x402';

/** Who a batch channel is between, from the ChannelConfig our calldata carried. */
export interface BatchChannelParties {
  payer: string;
  receiver: string;
  token: string;
}

/**
 * One change a mined batch-settlement operation made to one channel, as the chain says it (the receipt's logs of the
 * batch-settlement contract, or its state at the operation's block), in the order it happened:
 * - `deposit`: a Deposited log (`amount` pulled from the payer into the channel);
 * - `claim`: a Claimed log (`totalClaimed` the channel's claimed total after it);
 * - `refund`: a Refunded log (`amount` of the unclaimed deposit back to the payer);
 * - `settle`: settle(receiver, token) paid out everything claimed for the receiver and token, so every channel of
 *   theirs is settled up to its claimed total at that block (`claimedAt`, read from the contract at the block).
 */
export type BatchChannelMove =
  | { kind: 'deposit'; channelId: string; parties: BatchChannelParties; amount: bigint }
  | { kind: 'claim'; channelId: string; totalClaimed: bigint }
  | { kind: 'refund'; channelId: string; amount: bigint }
  | { kind: 'settle'; channelId: string; claimedAt: bigint };

/**
 * The moves a successful deposit, claim or refund operation made, from its receipt: only logs the batch-settlement
 * contract emitted count, in log order. A settle's moves need the contract's state (see `settleMoves`).
 */
export function receiptMoves(data: Hex, receipt: TransactionReceipt, chainId: number): BatchChannelMove[] {
  const parties = new Map<string, BatchChannelParties>();
  for (const config of channelConfigsOf(data)) {
    parties.set(channelIdOf(config, chainId).toLowerCase(), {
      payer: config.payer.toLowerCase(),
      receiver: config.receiver.toLowerCase(),
      token: config.token.toLowerCase(),
    });
  }
  const ours = receipt.logs.filter((log) => isAddressEqual(log.address, BATCH_SETTLEMENT_ADDRESS));
  const moves: BatchChannelMove[] = [];
  for (const log of parseEventLogs({ abi: batchSettlementAbi, logs: ours, strict: true })) {
    switch (log.eventName) {
      case 'Deposited': {
        const channelId = log.args.channelId.toLowerCase();
        const known = parties.get(channelId);
        // a deposit our calldata did not name cannot be ours: its parties are unknown, so it is left to reconciliation
        if (known) moves.push({ kind: 'deposit', channelId, parties: known, amount: log.args.amount });
        break;
      }
      case 'Claimed':
        moves.push({ kind: 'claim', channelId: log.args.channelId.toLowerCase(), totalClaimed: log.args.newTotalClaimed });
        break;
      case 'Refunded':
        moves.push({ kind: 'refund', channelId: log.args.channelId.toLowerCase(), amount: log.args.amount });
        break;
      default:
        break;
    }
  }
  return moves;
}

/** Every ChannelConfig in our calldata: a deposit's, each claim row's, a refund's (inside a multicall too). */
function channelConfigsOf(data: Hex): ChannelConfigWire[] {
  const call = decodeFunctionData({ abi: batchSettlementAbi, data });
  const wire = (c: {
    payer: string;
    payerAuthorizer: string;
    receiver: string;
    receiverAuthorizer: string;
    token: string;
    withdrawDelay: number;
    salt: string;
  }) => c as ChannelConfigWire;
  switch (call.functionName) {
    case 'multicall':
      return call.args[0].flatMap((inner) => channelConfigsOf(inner));
    case 'deposit':
    case 'refundWithSignature':
    case 'refund':
      return [wire(call.args[0])];
    case 'claimWithSignature':
    case 'claim':
      return call.args[0].map((row) => wire(row.voucher.channel));
    default:
      return [];
  }
}

/** Channels read per Multicall3 request. */
const READ_CHUNK = 200;

/**
 * What settle(receiver, token) mined at `blockNumber` settled per channel: each channel of the receiver and token the
 * facilitator keeps (batch_channels) at its claimed total at that block, read from the contract. The contract pays
 * totalClaimed − totalSettled of the receiver and token, so after it every one of their channels is settled up to what
 * was claimed on it by then. Channels already settled that far are left out.
 */
export async function settleMoves(
  db: Pick<Prisma.TransactionClient, 'batchChannel'>,
  client: PublicClient,
  network: string,
  receiver: string,
  token: string,
  blockNumber: bigint,
): Promise<BatchChannelMove[]> {
  const channels = await db.batchChannel.findMany({
    where: { network, receiver: receiver.toLowerCase(), token: token.toLowerCase() },
    select: { channelId: true, settled: true },
    orderBy: { channelId: 'asc' },
  });
  const moves: BatchChannelMove[] = [];
  for (let i = 0; i < channels.length; i += READ_CHUNK) {
    const chunk = channels.slice(i, i + READ_CHUNK);
    const answers = await client.multicall({
      multicallAddress: MULTICALL3_ADDRESS,
      allowFailure: false,
      blockNumber,
      contracts: chunk.map(
        (c) => ({ address: BATCH_SETTLEMENT_ADDRESS, abi: batchSettlementAbi, functionName: 'channels', args: [c.channelId as Hex] }) as const,
      ),
    });
    chunk.forEach((c, j) => {
      const claimedAt = (answers[j] as readonly [bigint, bigint])[1];
      // settled up to there already (settled never passes claimed): nothing to write, no row to lock
      if (claimedAt > BigInt(c.settled.toFixed())) moves.push({ kind: 'settle', channelId: c.channelId, claimedAt });
    });
  }
  return moves;
}

interface ChannelRow {
  channelId: string;
  network: string;
  merchantId: string | null;
  payer: string;
  receiver: string;
  token: string;
  deposited: bigint;
  claimed: bigint;
  settled: bigint;
  refunded: bigint;
}

/** What one operation's moves write: its network, the merchant whose key asked for it, its transaction. */
export interface BatchChannelChange {
  network: string;
  /** the operation's merchant scope: a channel a deposit opens becomes this merchant's (null in open mode) */
  merchantId: string | null;
  txHash: string;
  moves: BatchChannelMove[];
}

/**
 * Applies an operation's moves to the facilitator's batch channels and writes their channel.* events into the outbox
 * (channel_events), in the caller's transaction: the one that records the operation's outcome, so they are written
 * exactly once. Each channel row is locked while it moves. A deposit opens the channel (channel.opened) or tops it
 * up; a claim above the recorded total is channel.voucher_accepted + channel.spent of its delta (a claim is the
 * merchant's accepted and earned revenue at once); a refund is channel.refunded; a settle raises settled to the
 * channel's claimed total at its block (channel.settled), after a claim the chain shows and the facilitator has not
 * recorded yet (its operation still unfinished) is recorded first, so settled never passes claimed. Moves of a channel
 * no deposit of ours opened are not the facilitator's to book: reconciliation finds such channels on chain.
 * Returns the events written.
 */
export async function writeBatchChannelEvents(tx: Tx, change: BatchChannelChange): Promise<number> {
  let written = 0;
  const event = async (row: ChannelRow, type: ChannelEventType, data: Record<string, string>, spent = row.claimed) => {
    await tx.channelEvent.create({
      data: { channelId: row.channelId, type, data, snapshot: batchSnapshot(row, spent) as unknown as Prisma.InputJsonValue },
    });
    written += 1;
  };
  const claimUpTo = async (row: ChannelRow, total: bigint) => {
    if (total <= row.claimed) return;
    const [delta, spentBefore] = [total - row.claimed, row.claimed];
    row.claimed = total;
    // accepted first, spent still where it was; then spent catches up
    await event(row, 'channel.voucher_accepted', { delta: delta.toString(), acceptedCumulative: total.toString() }, spentBefore);
    await event(row, 'channel.spent', { chargeId: `claim:${change.txHash}`, amount: delta.toString(), spent: total.toString() });
  };
  for (const move of change.moves) {
    if (move.kind === 'deposit') {
      await tx.batchChannel.createMany({
        data: {
          channelId: move.channelId,
          network: change.network,
          merchantId: change.merchantId,
          ...move.parties,
          deposited: 0,
          claimed: 0,
          settled: 0,
          refunded: 0,
        },
        skipDuplicates: true,
      });
    }
    const row = await locked(tx, move.channelId);
    if (!row || row.network !== change.network) continue;
    const before = { ...row };
    switch (move.kind) {
      case 'deposit':
        row.deposited += move.amount;
        if (before.deposited === 0n) await event(row, 'channel.opened', { deposit: row.deposited.toString(), txHash: change.txHash });
        else await event(row, 'channel.topped_up', { amount: move.amount.toString(), deposit: row.deposited.toString(), txHash: change.txHash });
        break;
      case 'claim':
        await claimUpTo(row, move.totalClaimed);
        break;
      case 'refund':
        if (move.amount === 0n) break;
        row.refunded += move.amount;
        await event(row, 'channel.refunded', { by: 'refund', amount: move.amount.toString(), refunded: row.refunded.toString(), txHash: change.txHash });
        break;
      case 'settle':
        await claimUpTo(row, move.claimedAt);
        if (move.claimedAt > row.settled) {
          const delta = move.claimedAt - row.settled;
          row.settled = move.claimedAt;
          await event(row, 'channel.settled', { delta: delta.toString(), settled: row.settled.toString(), txHash: change.txHash });
        }
        break;
    }
    if (row.deposited !== before.deposited || row.claimed !== before.claimed || row.settled !== before.settled || row.refunded !== before.refunded) {
      await tx.batchChannel.update({
        where: { channelId: row.channelId },
        data: {
          deposited: new Prisma.Decimal(row.deposited.toString()),
          claimed: new Prisma.Decimal(row.claimed.toString()),
          settled: new Prisma.Decimal(row.settled.toString()),
          refunded: new Prisma.Decimal(row.refunded.toString()),
        },
      });
    }
  }
  return written;
}

/** The channel's row under its lock for this transaction (SQL: FOR UPDATE has no Prisma Client form). */
async function locked(tx: Tx, channelId: string): Promise<ChannelRow | undefined> {
  const [row] = await tx.$queryRawUnsafe<
    (Omit<ChannelRow, 'deposited' | 'claimed' | 'settled' | 'refunded'> & Record<'deposited' | 'claimed' | 'settled' | 'refunded', string>)[]
  >(
    `SELECT channel_id AS "channelId", network, merchant_id::text AS "merchantId", payer, receiver, token,
            deposited::text AS deposited, claimed::text AS claimed, settled::text AS settled, refunded::text AS refunded
       FROM facilitator.batch_channels WHERE channel_id = $1 FOR UPDATE`,
    channelId,
  );
  if (!row) return undefined;
  return { ...row, deposited: BigInt(row.deposited), claimed: BigInt(row.claimed), settled: BigInt(row.settled), refunded: BigInt(row.refunded) };
}

/**
 * The channel-events snapshot of a batch channel (channel-events.ts channelSnapshotSchema, scheme x402-batch): spent is
 * what was claimed, except between a claim's two events (`spent` then still the claimed total before it).
 */
export function batchSnapshot(row: ChannelRow, spent: bigint = row.claimed): ChannelSnapshot {
  return {
    scheme: 'x402-batch',
    channelId: row.channelId,
    merchantId: row.merchantId,
    network: row.network,
    escrow: BATCH_SETTLEMENT_ADDRESS.toLowerCase(),
    asset: row.token,
    payer: row.payer,
    payee: row.receiver,
    deposit: row.deposited.toString(),
    acceptedCumulative: row.claimed.toString(),
    spent: spent.toString(),
    settled: row.settled.toString(),
    refunded: row.refunded.toString(),
    state: 'open',
  };
}
