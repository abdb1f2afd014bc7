import { Inject, Injectable, Logger } from '@nestjs/common';
import { erc20Abi, getAddress, hexToBytes, keccak256, type Address, type Hex, type PublicClient } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { isAlreadyKnown, isTransportFailure, revertReason, settlementGasLimit, signEip1559 } from '@mp/chain';
import { PrismaService, withTransaction } from '@mp/db';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from '../config/facilitator.config';
import { NetworkRegistry, type Network } from '../networks/network-registry';
import { judgeRefundReceipt, refundCalldata, unminedTransaction, type RefundTransfer } from './refund-judgement';
import { RefundRepository, type RefundRecord } from './refund.repository';

interface RefundWallet {
  address: Address;
  key: Uint8Array;
}

/**
 * EVM refunds: an ERC-20 `transfer(refundTo, amount)` of the payment's token from the refund wallet the merchant
 * configured (REFUND_WALLET_KEYS), never from the facilitator's settlement wallets. Exactly once: the transaction is
 * signed and recorded (hash, nonce, raw bytes) before it is broadcast, its outcome comes from the receipt, and a
 * refund whose transaction has no receipt is broadcast again with the very same bytes, or signed anew only once its
 * nonce was provably taken by another transaction (so the old one can never be mined).
 */
@Injectable()
export class EvmRefunds {
  private readonly logger = new Logger(EvmRefunds.name);
  private readonly wallets = new Map<string, RefundWallet>();

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly networks: NetworkRegistry,
    private readonly refunds: RefundRepository,
    private readonly db: PrismaService,
  ) {
    for (const [merchantId, key] of config.refunds.wallets) this.wallets.set(merchantId, { address: privateKeyToAccount(key).address, key: hexToBytes(key) });
  }

  /** The merchant's refund wallet, if it configured one. */
  walletOf(merchantId: string): Address | undefined {
    return this.wallets.get(merchantId.toLowerCase())?.address;
  }

  network(network: string): Network | undefined {
    return this.networks.resolve(network, 2);
  }

  /** Whether the refund wallet holds less of the token than `amount` (an RPC failure throws: nothing is decided on it). */
  async underfunded(merchantId: string, network: Network, token: string, amount: bigint): Promise<boolean> {
    const wallet = this.walletOf(merchantId);
    if (!wallet) return true;
    const balance = await network.client.readContract({ address: getAddress(token), abi: erc20Abi, functionName: 'balanceOf', args: [wallet] });
    return balance < amount;
  }

  /** Sends an accepted refund and follows it for up to `waitMs`; what is not final by then the sweep finishes. */
  async execute(refund: RefundRecord, waitMs: number): Promise<void> {
    await this.send(refund);
    const deadline = Date.now() + waitMs;
    for (;;) {
      const current = await this.refunds.byId(refund.id);
      if (!current || current.status !== 'pending' || !current.txHash) return;
      if (await this.judgeMined(current)) return;
      if (Date.now() >= deadline) return;
      await new Promise((resolve) => setTimeout(resolve, this.network(refund.network)?.config.pollingIntervalMs ?? 200));
    }
  }

  /**
   * One step of the sweep for a pending refund: nothing sent yet → send; mined → its outcome; not mined and its nonce
   * taken by another transaction → signed again; otherwise the same bytes broadcast again.
   */
  async resume(refund: RefundRecord): Promise<void> {
    if (!refund.txHash || refund.txNonce === null || !refund.signer || !refund.rawTx) return this.send(refund);
    const network = this.network(refund.network);
    if (!network) return;
    // The mined nonce is read before the receipt: if the nonce was already used then and ours has no receipt after,
    // another transaction used it and ours can never be mined.
    const minedNonce = await network.client.getTransactionCount({ address: getAddress(refund.signer), blockTag: 'latest' });
    if (await this.judgeMined(refund)) return;
    if (unminedTransaction(refund.txNonce, minedNonce) === 'dead') {
      this.logger.warn(`refund ${refund.id}: transaction ${refund.txHash} lost its nonce ${refund.txNonce} to another transaction; signing it again`);
      return this.send(refund, refund.txHash);
    }
    await this.broadcast(network.client, refund.rawTx as Hex, refund);
  }

  /** The refund's outcome from its receipt, once it has the network's confirmations; false while there is none. */
  private async judgeMined(refund: RefundRecord): Promise<boolean> {
    const network = this.network(refund.network);
    if (!network || !refund.txHash) return false;
    const receipt = await network.client.getTransactionReceipt({ hash: refund.txHash as Hex }).catch((error: unknown) => {
      if ((error as Error).name === 'TransactionReceiptNotFoundError') return undefined;
      throw error;
    });
    if (!receipt) return false;
    if (network.config.confirmations > 1) {
      const head = await network.client.getBlockNumber();
      if (head - receipt.blockNumber + 1n < BigInt(network.config.confirmations)) return false;
    }
    const verdict = judgeRefundReceipt(this.transferOf(refund, getAddress(refund.signer!)), receipt);
    if (verdict.executed) {
      if (await this.refunds.executed(refund.id, refund.txHash, receipt.blockNumber)) this.logger.log(`refund ${refund.id} executed in ${refund.txHash}`);
    } else if (await this.refunds.failed(refund.id, verdict.reason, verdict.message, refund.txHash)) {
      this.logger.warn(`refund ${refund.id} failed: ${verdict.message}`);
    }
    return true;
  }

  /**
   * Signs and records the transfer, then broadcasts it, holding a database lock on the wallet throughout (so two
   * processes never pick one nonce). The record is its own committed write before the broadcast. `replaces`: the
   * refund's earlier transaction, which can no longer be mined.
   */
  private async send(refund: RefundRecord, replaces?: string): Promise<void> {
    const network = this.network(refund.network);
    const wallet = this.wallets.get(refund.merchantId.toLowerCase());
    // Accepted refunds had both; a process configured otherwise (a rollout in progress) leaves the refund to one that has them.
    if (!network) throw new Error(`network ${refund.network} is not configured in this process`);
    if (!wallet) throw new Error(`merchant ${refund.merchantId} has no refund wallet in this process (REFUND_WALLET_KEYS)`);
    const transfer = this.transferOf(refund, wallet.address);
    const data = refundCalldata(transfer);
    const client = network.client;
    await withTransaction(
      this.db,
      async (lock) => {
        // SQL: an advisory lock has no Prisma Client form; it is released with this transaction, after the broadcast
        await lock.$executeRaw`SELECT pg_advisory_xact_lock(hashtextextended(${`refund-wallet:${network.config.network}:${wallet.address.toLowerCase()}`}, 0))`;
        const current = await this.refunds.byId(refund.id);
        if (!current || current.status !== 'pending' || (current.txHash ?? undefined) !== replaces) return;
        let gas: bigint;
        try {
          gas = await client.estimateGas({ account: wallet.address, to: transfer.token, data });
        } catch (error) {
          if (isTransportFailure(error)) throw error;
          // nothing was sent: the wallet cannot make this transfer now (its tokens went elsewhere)
          await this.refunds.failed(refund.id, 'transfer_would_revert', `the refund transfer would revert: ${revertReason(error) ?? 'no reason given'}`, null);
          return;
        }
        const nonce = await client.getTransactionCount({ address: wallet.address, blockTag: 'pending' });
        const fees = await this.fees(network);
        const raw = signEip1559(
          { type: 'eip1559', chainId: network.config.chainId, nonce, to: transfer.token, data, gas: settlementGasLimit(gas), ...fees },
          wallet.key,
        );
        const hash = keccak256(raw);
        if (!(await this.refunds.recordTransaction(refund.id, { signer: wallet.address, txHash: hash, txNonce: nonce, rawTx: raw }, replaces))) return;
        await this.broadcast(client, raw, { id: refund.id, txHash: hash });
      },
      { timeout: 30_000, retries: 0 },
    );
  }

  /** A failed broadcast is only logged: the transaction is on record, and the sweep broadcasts it again or judges it. */
  private async broadcast(client: PublicClient, raw: Hex, refund: Pick<RefundRecord, 'id' | 'txHash'>): Promise<void> {
    try {
      await client.sendRawTransaction({ serializedTransaction: raw });
    } catch (error) {
      if (isAlreadyKnown(error)) return;
      this.logger.warn(`refund ${refund.id}: broadcast of ${refund.txHash} failed (the sweep tries again): ${(error as Error).message.split('\n')[0]}`);
    }
  }

  private async fees(network: Network): Promise<{ maxFeePerGas: bigint; maxPriorityFeePerGas: bigint }> {
    const estimate = await network.client.estimateFeesPerGas();
    const cap = network.config.maxFeePerGas;
    const maxFeePerGas = cap !== undefined && estimate.maxFeePerGas > cap ? cap : estimate.maxFeePerGas;
    const maxPriorityFeePerGas = estimate.maxPriorityFeePerGas < maxFeePerGas ? estimate.maxPriorityFeePerGas : maxFeePerGas;
    return { maxFeePerGas, maxPriorityFeePerGas };
  }

  private transferOf(refund: RefundRecord, from: Address): RefundTransfer {
    return { token: getAddress(refund.asset), from, to: getAddress(refund.refundTo!), amount: refund.amount };
  }
}
