import { Injectable } from '@nestjs/common';
import { fromDbDecimal, PrismaService } from '@mp/db';
import type { SignedTransaction } from '@mp/chain';
import type { Hex } from 'viem';
import { gasShare } from './gas-share';

/** How long a transaction's payments are kept after they are read (gasShare). */
const CARRIED_KEEP_MS = 10_000;

export interface StoredTransaction extends SignedTransaction {
  createdAt: Date;
}

/**
 * The settlement transactions signed for payments (facilitator.payment_transactions), as workers read them back to
 * rebroadcast, replace and judge. They are written by the payment's transitions (payment-transitions.ts), in the
 * statement that moves the payment, before they are broadcast.
 */
@Injectable()
export class PaymentTransactions {
  private readonly carriedByHash = new Map<string, Promise<string[]>>();

  constructor(private readonly db: PrismaService) {}

  /** Every transaction signed for a payment, oldest first. */
  async transactions(paymentId: string): Promise<StoredTransaction[]> {
    const rows = await this.db.paymentTransaction.findMany({
      where: { paymentId },
      orderBy: [{ createdAt: 'asc' }, { hash: 'asc' }],
      include: { payment: { select: { settleTo: true, settleData: true } } },
    });
    return rows.map((r) => ({
      hash: r.hash as Hex,
      nonce: r.nonce,
      signer: r.signer as Hex,
      raw: r.rawTx as Hex,
      to: r.payment.settleTo as Hex,
      data: r.payment.settleData as Hex,
      gas: fromDbDecimal(r.gasLimit),
      maxFeePerGas: fromDbDecimal(r.maxFeePerGas),
      maxPriorityFeePerGas: fromDbDecimal(r.maxPriorityFeePerGas),
      createdAt: r.createdAt,
    }));
  }

  /** The payment's exact share of a transaction's fee (see gasShare): a batch's fee is split between its payments. */
  async gasShare(hash: string, paymentId: string, fee: bigint): Promise<bigint> {
    return gasShare(fee, await this.carried(hash), paymentId);
  }

  /**
   * The payments a transaction was recorded for, ordered by id as text (the order every payment of the batch computes
   * its share in). A transaction's payments are written with it, before it is broadcast, and never change, so the
   * answer is kept for the few seconds a batch's payments ask for it: one read per batch instead of one per payment.
   */
  private carried(hash: string): Promise<string[]> {
    const known = this.carriedByHash.get(hash);
    if (known) return known;
    const read = this.db.paymentTransaction
      .findMany({ where: { hash }, distinct: ['paymentId'], select: { paymentId: true } })
      .then((rows) => rows.map((r) => r.paymentId).sort());
    read.catch(() => this.carriedByHash.delete(hash));
    this.carriedByHash.set(hash, read);
    setTimeout(() => this.carriedByHash.delete(hash), CARRIED_KEEP_MS).unref();
    return read;
  }
}
