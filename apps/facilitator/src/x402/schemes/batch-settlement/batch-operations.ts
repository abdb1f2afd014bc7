import { Inject, Injectable, Logger } from '@nestjs/common';
import { decodeFunctionData, getAddress, hexToBytes, keccak256, type Address, type Hex, type TransactionReceipt } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { batchSettlementAbi, isAlreadyKnown, isTransportFailure, revertReason, settlementGasLimit, signEip1559 } from '@mp/chain';
import { isUniqueViolation, Prisma, PrismaService, withTransaction } from '@mp/db';
import { X402Reason, type SettleResponse } from '@mp/x402';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../../../config/facilitator.config';
import type { Network } from '../../../networks/network-registry';
import { receiptMoves, settleMoves, writeBatchChannelEvents, type BatchChannelChange } from './batch-channel-events';
import { recordSettledPayment, type SettledTransfer } from './settled-payment';

export type OperationKind = 'deposit' | 'claim' | 'settle' | 'refund';

/** One batch-settlement transaction as the scheme asks for it. */
export interface OperationRequest {
  /** scope + request fingerprint: equal requests are one operation */
  key: string;
  kind: OperationKind;
  network: Network;
  to: Address;
  data: Hex;
  /** a fixed gas limit (settle); otherwise estimated when signing */
  gas?: bigint;
  /** the reason a send that would revert is recorded with (the kind's simulation_failed) */
  revertedReason: string;
  /** the answer from a mined receipt (the kind's transaction_failed on a revert, its extra on success) */
  judge: (receipt: TransactionReceipt) => Promise<SettleResponse>;
  /**
   * Whether the call's effect is already on chain, so a replacement would change nothing (a claim whose totals are
   * recorded, a settle with nothing owed); kinds whose repeat reverts (deposit, refund) need none.
   */
  done?: () => Promise<boolean>;
  payer?: string;
}

export interface OperationRow {
  id: string;
  requestKey: string;
  network: string;
  kind: string;
  status: string;
  toAddress: string;
  data: string;
  signer: string | null;
  txHash: string | null;
  txNonce: number | null;
  rawTx: string | null;
  answer: Prisma.JsonValue | null;
}

/**
 * Exactly-once transactions for x402 batch-settlement (table batch_settlement_operations). A request's key is unique:
 * the first /settle writes the row, signs and records the transaction (hash, nonce, raw bytes) before broadcasting it,
 * and takes its answer from the receipt; a repeated request finds the row and gets the recorded answer, or follows
 * the same transaction (broadcast again with the same bytes, signed anew only when its nonce was provably used by
 * another transaction). Sends hold a database lock on the sender wallet, so two processes never pick one nonce.
 * A node that lags on receipts shows the nonce used before it shows the receipt: a replacement that would then revert
 * or change nothing is not sent and is no outcome; the operation keeps following its first transaction.
 */
@Injectable()
export class BatchOperations {
  private readonly logger = new Logger(BatchOperations.name);
  readonly sender?: { address: Address; key: Uint8Array };

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly db: PrismaService,
  ) {
    const key = config.batchSettlement?.senderKey;
    if (key) this.sender = { address: privateKeyToAccount(key).address, key: hexToBytes(key) };
  }

  /** The recorded operation of a request key, if any. */
  async existing(key: string): Promise<OperationRow | null> {
    return this.db.batchSettlementOperation.findUnique({ where: { requestKey: key } });
  }

  /** Runs the operation of `request.key` once: a new row is sent, an existing one followed to its outcome. */
  async run(request: OperationRequest): Promise<SettleResponse> {
    let row = await this.existing(request.key);
    if (!row) {
      try {
        row = await this.db.batchSettlementOperation.create({
          data: {
            requestKey: request.key,
            network: request.network.config.network,
            kind: request.kind,
            status: 'pending',
            toAddress: request.to.toLowerCase(),
            data: request.data,
          },
        });
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        row = (await this.existing(request.key))!; // a concurrent twin wrote it first: follow that one
      }
      await this.send(request, row.id);
    }
    return this.follow(request, row.id);
  }

  /** Operations still pending and left alone for `idleMs` (no request follows them any more), oldest first. */
  async pending(idleMs: number, limit: number): Promise<OperationRow[]> {
    return this.db.batchSettlementOperation.findMany({
      where: { status: 'pending', updatedAt: { lt: new Date(Date.now() - idleMs) } },
      orderBy: { updatedAt: 'asc' },
      take: limit,
    });
  }

  /**
   * One look at a recorded operation for the finisher: the same steps a repeated request takes (send it if it was
   * never signed, judge its receipt, rebroadcast its recorded bytes, re-sign only once its nonce is provably lost),
   * without waiting: a transaction still unmined is looked at again next round.
   */
  async resume(request: OperationRequest, id: string): Promise<SettleResponse> {
    return this.follow(request, id, 0);
  }

  /** Follows the operation until it has an answer or the wait budget is spent (then settlement_pending). */
  private async follow(request: OperationRequest, id: string, budgetMs = this.config.batchSettlement?.waitMs ?? 15_000): Promise<SettleResponse> {
    const deadline = Date.now() + budgetMs;
    for (;;) {
      const row = await this.db.batchSettlementOperation.findUniqueOrThrow({ where: { id } });
      if (row.status !== 'pending') return row.answer as unknown as SettleResponse;
      try {
        if (!row.txHash) await this.send(request, id);
        else if (await this.judgeMined(request, row)) continue;
        else if (Date.now() >= deadline) {
          return {
            success: false,
            errorReason: X402Reason.settlementPending,
            errorMessage: `transaction ${row.txHash} is not mined yet; settle again with the same request for its outcome`,
            transaction: row.txHash,
            network: request.network.config.network,
            ...(request.payer ? { payer: request.payer } : {}),
          };
        }
      } catch (error) {
        // the chain unreachable: the operation stays pending and a repeated request resumes it
        if (!isTransportFailure(error) || Date.now() >= deadline) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, request.network.config.pollingIntervalMs ?? 100));
    }
  }

  /** The outcome from the receipt; false while there is none (rebroadcast, or re-sign once the nonce is provably lost). */
  private async judgeMined(request: OperationRequest, row: OperationRow): Promise<boolean> {
    const client = request.network.client;
    // the mined nonce is read before the receipt: used then and still no receipt after means another transaction took it
    const minedNonce = await client.getTransactionCount({ address: getAddress(row.signer!), blockTag: 'latest' });
    const receipt = await client.getTransactionReceipt({ hash: row.txHash as Hex }).catch((error: unknown) => {
      if ((error as Error).name === 'TransactionReceiptNotFoundError') return undefined;
      throw error;
    });
    if (receipt) {
      const answer = await request.judge(receipt);
      const paid = request.kind === 'settle' && answer.success ? BigInt(answer.amount ?? '0') : 0n;
      const channels = answer.success ? await this.channelChange(request, row, receipt) : undefined;
      await this.finish(row.id, answer, row.txHash, paid > 0n ? settledTransfer(row, request.data, paid, receipt) : undefined, channels);
      return true;
    }
    if (row.txNonce !== null && minedNonce > row.txNonce) {
      this.logger.warn(`batch-settlement operation ${row.id}: ${row.txHash} lost its nonce ${row.txNonce}; signing it again`);
      await this.send(request, row.id, row.txHash!);
    } else if (row.rawTx) {
      await this.broadcast(request, row.rawTx as Hex, row.id);
    }
    return false;
  }

  /** Signs, records, then broadcasts the operation's transaction under the sender wallet's lock. */
  private async send(request: OperationRequest, id: string, replaces?: string): Promise<void> {
    const sender = this.sender;
    if (!sender) throw new Error('BATCH_SETTLEMENT_SENDER_KEY is not configured');
    const { network } = request;
    const client = network.client;
    await withTransaction(
      this.db,
      async (tx) => {
        // SQL: an advisory lock has no Prisma Client form; it is released with this transaction, after the broadcast
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`batch-settlement-sender:${network.config.network}:${sender.address.toLowerCase()}`}, 0))`;
        const current = await this.db.batchSettlementOperation.findUniqueOrThrow({ where: { id } });
        if (current.status !== 'pending' || (current.txHash ?? undefined) !== replaces) return;
        // a replacement that would change nothing: the first transaction most likely did it (a node lagging on its
        // receipt while its nonce shows used); keep following it, its receipt decides the answer and what was paid
        if (replaces && (await request.done?.())) return;
        let gas = request.gas;
        if (gas === undefined) {
          try {
            gas = settlementGasLimit(await client.estimateGas({ account: sender.address, to: request.to, data: request.data }));
          } catch (error) {
            if (isTransportFailure(error)) throw error;
            // a replacement that would revert is no outcome either, for the same reason: keep following the first
            if (replaces) return;
            // nothing was sent: the call would revert now
            await this.finish(
              id,
              {
                success: false,
                errorReason: request.revertedReason,
                errorMessage: `the ${request.kind} transaction would revert: ${revertReason(error) ?? (error as Error).message.split('\n')[0]}`,
                transaction: '',
                network: network.config.network,
                ...(request.payer ? { payer: request.payer } : {}),
              },
              null,
            );
            return;
          }
        }
        const nonce = await client.getTransactionCount({ address: sender.address, blockTag: 'pending' });
        const fees = await client.estimateFeesPerGas();
        const raw = signEip1559({ type: 'eip1559', chainId: network.config.chainId, nonce, to: request.to, data: request.data, gas, ...fees }, sender.key);
        const hash = keccak256(raw);
        // its own committed write (not the lock's transaction): on record before the network can see it
        await this.db.batchSettlementOperation.update({
          where: { id },
          data: { signer: sender.address.toLowerCase(), txHash: hash, txNonce: nonce, rawTx: raw },
        });
        await this.broadcast(request, raw, id);
      },
      { timeout: 30_000, retries: 0 },
    );
  }

  /** A failed broadcast is only logged: the transaction is on record and following it broadcasts it again. */
  private async broadcast(request: OperationRequest, raw: Hex, id: string): Promise<void> {
    try {
      await request.network.client.sendRawTransaction({ serializedTransaction: raw });
    } catch (error) {
      if (isAlreadyKnown(error)) return;
      this.logger.warn(`batch-settlement operation ${id}: broadcast failed (followed again): ${(error as Error).message.split('\n')[0]}`);
    }
  }

  /**
   * What a successful operation did to its channels, from its receipt (and, for a settle, the contract's state at its
   * block): read before the outcome's transaction, written in it (see writeBatchChannelEvents).
   */
  private async channelChange(request: OperationRequest, row: OperationRow, receipt: TransactionReceipt): Promise<BatchChannelChange> {
    const { network } = request;
    let moves;
    if (request.kind === 'settle') {
      const call = decodeFunctionData({ abi: batchSettlementAbi, data: request.data });
      if (call.functionName !== 'settle') throw new Error(`a settle operation's calldata is ${call.functionName}`);
      const [receiver, token] = call.args;
      moves = await settleMoves(this.db, network.client, network.config.network, receiver, token, receipt.blockNumber);
    } else {
      moves = receiptMoves(request.data, receipt, network.config.chainId);
    }
    const scope = row.requestKey.slice(0, row.requestKey.indexOf(':'));
    return { network: network.config.network, merchantId: scope || null, txHash: receipt.transactionHash.toLowerCase(), moves };
  }

  /**
   * The outcome, once; in the same transaction, a settle that paid the receiver is recorded as its payment, and what a
   * successful operation did to its channels goes into the channel outbox (channel_events) for the ledger's books.
   */
  private async finish(id: string, answer: SettleResponse, txHash: string | null, settled?: SettledTransfer, channels?: BatchChannelChange): Promise<void> {
    await withTransaction(this.db, async (tx) => {
      const { count } = await tx.batchSettlementOperation.updateMany({
        where: { id, status: 'pending', txHash },
        data: { status: answer.success ? 'succeeded' : 'failed', answer: answer as unknown as Prisma.InputJsonValue },
      });
      // only the write that ended the operation records what it paid and moved: a twin that lost the race writes nothing
      if (count !== 1) return;
      if (settled) await recordSettledPayment(tx, settled);
      if (channels?.moves.length) await writeBatchChannelEvents(tx, channels);
    });
  }
}

/** What a mined settle(receiver, token) paid, from its recorded row and calldata. */
function settledTransfer(row: OperationRow, data: Hex, amount: bigint, receipt: TransactionReceipt): SettledTransfer {
  const call = decodeFunctionData({ abi: batchSettlementAbi, data });
  if (call.functionName !== 'settle') throw new Error(`a settle operation's calldata is ${call.functionName}`);
  const [receiver, token] = call.args;
  return { requestKey: row.requestKey, network: row.network, token, receiver, amount, signer: row.signer!, txNonce: row.txNonce!, receipt };
}
