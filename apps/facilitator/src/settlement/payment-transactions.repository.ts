import { Injectable } from '@nestjs/common';
import { fromDbDecimal, PrismaService } from '@mp/db';
import type { SignedTransaction } from '@mp/chain';
import type { Hex } from 'viem';
import { gasShare } from './gas-share';

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
    const rows = await this.db.paymentTransaction.findMany({ where: { hash }, distinct: ['paymentId'], select: { paymentId: true } });
    // ordered by id as text, the order every payment of the batch computes its share in
    return gasShare(fee, rows.map((r) => r.paymentId).sort(), paymentId);
  }
}
