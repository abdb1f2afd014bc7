import { createHash } from 'node:crypto';
import type { TransactionReceipt } from 'viem';
import { Prisma } from '@mp/db';
import { currentTraceContext } from '@mp/platform';
import { BATCH_SETTLEMENT_ADDRESS, BATCH_SETTLEMENT_SCHEME } from '@mp/x402';

type Tx = Pick<Prisma.TransactionClient, 'payment' | 'paymentEvent'>;

export interface SettledTransfer {
  /** the operation's request key: its merchant scope ('' in open mode) leads it */
  requestKey: string;
  network: string;
  token: string;
  receiver: string;
  /** what the contract's Settled event says it paid the receiver */
  amount: bigint;
  signer: string;
  txNonce: number;
  receipt: TransactionReceipt;
}

/**
 * A batch-settlement `settle` that paid the receiver, recorded as a confirmed payment with its payment.verified and
 * payment.confirmed events (the outbox the ledger books from), in the transaction that records the operation's
 * outcome, so it is booked exactly once. The payer is the batch-settlement contract (the transfer's sender on chain:
 * what reconciliation finds), the nonce the settle transaction's hash (one payment per transaction). Vouchers and
 * claims move nothing to the merchant and are not booked; the money arrives, and is booked, when it is settled.
 */
export async function recordSettledPayment(tx: Tx, s: SettledTransfer): Promise<void> {
  const scope = s.requestKey.slice(0, s.requestKey.indexOf(':'));
  const [network, asset, payer, payTo] = [s.network, s.token.toLowerCase(), BATCH_SETTLEMENT_ADDRESS.toLowerCase(), s.receiver.toLowerCase()];
  const hash = s.receipt.transactionHash;
  const payment = await tx.payment.create({
    data: {
      network,
      asset,
      payer,
      authorizationNonce: hash,
      payTo,
      amount: new Prisma.Decimal(s.amount.toString()),
      validAfter: new Prisma.Decimal(0),
      validBefore: new Prisma.Decimal(0),
      scheme: BATCH_SETTLEMENT_SCHEME,
      x402Version: 2,
      protocol: 'x402',
      rail: 'evm',
      payloadHash: createHash('sha256').update(s.requestKey).digest('hex'),
      state: 'confirmed',
      signer: s.signer,
      txHash: hash,
      txNonce: s.txNonce,
      attempts: 1,
      settleTo: BATCH_SETTLEMENT_ADDRESS.toLowerCase(),
      submittedAt: new Date(),
      settledAt: new Date(),
      merchantId: scope || null,
    },
    select: { id: true },
  });
  const gasFee = s.receipt.gasUsed * (s.receipt.effectiveGasPrice ?? 0n);
  const context = currentTraceContext();
  const traceContext = context ? { traceparent: context.traceparent, ...(context.tracestate && { tracestate: context.tracestate }) } : Prisma.DbNull;
  await tx.paymentEvent.createMany({
    data: [
      {
        paymentId: payment.id,
        type: 'payment.verified',
        data: { network, asset, payer, payTo, amount: s.amount.toString(), nonce: hash, protocol: 'x402', rail: 'evm' },
        traceContext,
      },
      {
        paymentId: payment.id,
        type: 'payment.confirmed',
        data: {
          txHash: hash,
          blockNumber: s.receipt.blockNumber.toString(),
          blockHash: s.receipt.blockHash,
          gasUsed: s.receipt.gasUsed.toString(),
          ...(s.receipt.effectiveGasPrice !== undefined && { effectiveGasPrice: s.receipt.effectiveGasPrice.toString() }),
          gasFee: gasFee.toString(),
        },
        traceContext,
      },
    ],
  });
}
