import { Injectable, Logger } from '@nestjs/common';
import { BaseError, ContractFunctionRevertedError, getAddress, hexToBytes, keccak256, type Address, type Hex, type TransactionReceipt } from 'viem';
import { privateKeyToAddress } from 'viem/accounts';
import { isAlreadyKnown, isTransportFailure, revertReason, sessionEscrowAbi, settlementGasLimit, signEip1559 } from '@mp/chain';
import { isUniqueViolation, Prisma, PrismaService, withTransaction } from '@mp/db';
import { sessionProblemForRevert, type ProblemCode } from '@mp/mpp';
import type { Network } from '../networks/network-registry';

/** What a channel transaction came to: judged from its receipt, or refused before sending (it would revert). */
export type OperationOutcome =
  | { ok: true; txHash: Hex; result: Record<string, string> }
  | { ok: false; code: ProblemCode; detail: string; txHash?: Hex }
  /** not mined within the wait: the same request later follows the same transaction */
  | { ok: false; pending: true; code: 'session/transaction-reverted'; detail: string; txHash: Hex };

export interface OperationRequest {
  /** equal keys are one operation: `<kind>:<channelId>[:…]` */
  key: string;
  kind: 'open' | 'topUp' | 'settle' | 'close';
  channelId: Hex;
  network: Network;
  escrow: Address;
  functionName: string;
  args: readonly unknown[];
  data: Hex;
  /** the wallet that signs and pays gas: the channel's payee key */
  senderKey: Hex;
  waitMs: number;
  /** the outcome of a successful receipt (status 1): what the escrow's events say happened */
  judge: (receipt: TransactionReceipt) => OperationOutcome;
}

interface OperationRow {
  id: string;
  status: string;
  signer: string;
  txHash: string | null;
  txNonce: number | null;
  rawTx: string | null;
  outcome: Prisma.JsonValue | null;
}

/**
 * Exactly-once channel transactions (table session_operations), the batch-settlement pattern: a request key is unique;
 * the first request writes the row, signs and records the transaction (hash, nonce, raw bytes) in a committed write
 * before broadcasting it, and takes the outcome from the receipt; a repeated request finds the row and gets the
 * recorded outcome, or follows the same transaction (re-broadcast with the same bytes, re-signed only once its nonce
 * was provably used by another transaction). Sends hold an advisory lock on the sender, so two processes never pick
 * one nonce. The sender is the channel's payee key: settle and close must come from the payee, and a wallet of its
 * own keeps these nonces apart from the signer pool's.
 */
@Injectable()
export class SessionOperations {
  private readonly logger = new Logger(SessionOperations.name);

  constructor(private readonly db: PrismaService) {}

  async run(request: OperationRequest): Promise<OperationOutcome> {
    let row = await this.db.sessionOperation.findUnique({ where: { requestKey: request.key } });
    if (!row) {
      try {
        row = await this.db.sessionOperation.create({
          data: {
            requestKey: request.key,
            channelId: request.channelId,
            network: request.network.config.network,
            kind: request.kind,
            status: 'pending',
            toAddress: request.escrow.toLowerCase(),
            data: request.data,
            signer: privateKeyToAddress(request.senderKey).toLowerCase(),
          },
        });
      } catch (error) {
        if (!isUniqueViolation(error)) throw error;
        row = (await this.db.sessionOperation.findUnique({ where: { requestKey: request.key } }))!; // a concurrent twin: follow it
      }
      if (row.status === 'pending' && !row.txHash) await this.send(request, row.id);
    }
    return this.follow(request, row.id);
  }

  private async follow(request: OperationRequest, id: string): Promise<OperationOutcome> {
    const deadline = Date.now() + request.waitMs;
    for (;;) {
      const row = await this.db.sessionOperation.findUniqueOrThrow({ where: { id } });
      if (row.status !== 'pending') return row.outcome as unknown as OperationOutcome;
      try {
        if (!row.txHash) await this.send(request, id);
        else if (await this.judgeMined(request, row)) continue;
        else if (Date.now() >= deadline)
          return {
            ok: false,
            pending: true,
            code: 'session/transaction-reverted',
            detail: `transaction ${row.txHash} is not mined yet; send the same credential again for its outcome`,
            txHash: row.txHash as Hex,
          };
      } catch (error) {
        if (!isTransportFailure(error) || Date.now() >= deadline) throw error;
      }
      await new Promise((resolve) => setTimeout(resolve, request.network.config.pollingIntervalMs));
    }
  }

  private async judgeMined(request: OperationRequest, row: OperationRow): Promise<boolean> {
    const client = request.network.client;
    // the mined nonce before the receipt: used then and still no receipt after means another transaction took it
    const minedNonce = await client.getTransactionCount({ address: getAddress(row.signer), blockTag: 'latest' });
    const receipt = await client.getTransactionReceipt({ hash: row.txHash as Hex }).catch((error: unknown) => {
      if ((error as Error).name === 'TransactionReceiptNotFoundError') return undefined;
      throw error;
    });
    if (receipt) {
      // status 0x0 is final (the spec: answer transaction-reverted, do not poll)
      const outcome: OperationOutcome =
        receipt.status === 'success'
          ? request.judge(receipt)
          : { ok: false, code: 'session/transaction-reverted', detail: `the ${request.kind} transaction ${row.txHash} reverted`, txHash: row.txHash as Hex };
      await this.finish(row.id, outcome, row.txHash);
      return true;
    }
    if (row.txNonce !== null && minedNonce > row.txNonce) {
      this.logger.warn(`session operation ${row.id}: ${row.txHash} lost its nonce ${row.txNonce}; signing it again`);
      await this.send(request, row.id, row.txHash!);
    } else if (row.rawTx) {
      await this.broadcast(request, row.rawTx as Hex, row.id);
    }
    return false;
  }

  /** Simulates (a revert is refused with its problem type, nothing sent), signs, records, then broadcasts under the sender's lock. */
  private async send(request: OperationRequest, id: string, replaces?: string): Promise<void> {
    const { network } = request;
    const client = network.client;
    const sender = privateKeyToAddress(request.senderKey);
    await withTransaction(
      this.db,
      async (tx) => {
        // SQL: an advisory lock has no Prisma Client form; released with this transaction, after the broadcast
        await tx.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`session-sender:${network.config.network}:${sender.toLowerCase()}`}, 0))`;
        const current = await this.db.sessionOperation.findUniqueOrThrow({ where: { id } });
        if (current.status !== 'pending' || (current.txHash ?? undefined) !== replaces) return;
        let gas: bigint;
        try {
          await client.simulateContract({
            account: sender,
            address: request.escrow,
            abi: sessionEscrowAbi,
            functionName: request.functionName,
            args: request.args,
          } as never);
          gas = settlementGasLimit(await client.estimateGas({ account: sender, to: request.escrow, data: request.data }));
        } catch (error) {
          if (isTransportFailure(error)) throw error;
          const errorName = revertErrorName(error);
          await this.finish(
            id,
            {
              ok: false,
              code: problemForRevert(errorName, revertReason(error)),
              detail: `the ${request.kind} transaction would revert (${errorName ?? revertReason(error) ?? 'reverted'})`,
            },
            replaces ?? null,
          );
          return;
        }
        const nonce = await client.getTransactionCount({ address: sender, blockTag: 'pending' });
        const fees = await client.estimateFeesPerGas();
        const raw = signEip1559(
          { type: 'eip1559', chainId: network.config.chainId, nonce, to: request.escrow, data: request.data, gas, ...fees },
          hexToBytes(request.senderKey),
        );
        const hash = keccak256(raw);
        // its own committed write: on record before the network can see it
        await this.db.sessionOperation.update({ where: { id }, data: { txHash: hash, txNonce: nonce, rawTx: raw } });
        await this.broadcast(request, raw, id);
      },
      { timeout: 30_000, retries: 0 },
    );
  }

  private async broadcast(request: OperationRequest, raw: Hex, id: string): Promise<void> {
    try {
      await request.network.client.sendRawTransaction({ serializedTransaction: raw });
    } catch (error) {
      if (isAlreadyKnown(error)) return;
      this.logger.warn(`session operation ${id}: broadcast failed (followed again): ${(error as Error).message.split('\n')[0]}`);
    }
  }

  private async finish(id: string, outcome: OperationOutcome, txHash: string | null): Promise<void> {
    await this.db.sessionOperation.updateMany({
      where: { id, status: 'pending', txHash },
      data: { status: outcome.ok ? 'succeeded' : 'failed', outcome: outcome as unknown as Prisma.InputJsonValue },
    });
  }
}

function revertErrorName(error: unknown): string | undefined {
  if (!(error instanceof BaseError)) return undefined;
  const reverted = error.walk((e) => e instanceof ContractFunctionRevertedError);
  return reverted instanceof ContractFunctionRevertedError ? (reverted.data?.errorName ?? undefined) : undefined;
}

/** The escrow's custom error by name; the token's string reverts (a failed pull) by what they say. */
function problemForRevert(errorName: string | undefined, reason: string | undefined): ProblemCode {
  if (errorName) return sessionProblemForRevert(errorName);
  if (reason && /balance|allowance/i.test(reason)) return 'session/insufficient-balance';
  if (reason && /signature|authorization/i.test(reason)) return 'session/invalid-signature';
  return 'session/transaction-reverted';
}
