import { getAddress } from 'viem';
import type { RefundRecord, RefundStatus } from './refund.repository';

/**
 * A refund as the API answers it: the x402 refund extension's RefundResponse (`status`, `amount`, `refundTxHash` when
 * executed on chain, `denialReason` when denied) and what names it here. `failed` is ours: a refund that was pending
 * and did not happen (its transfer reverted, Stripe failed it); nothing moved.
 */
export interface RefundView {
  id: string;
  status: RefundStatus;
  /** atomic units refunded (or requested, when denied or failed) */
  amount: string;
  refundTxHash?: string;
  denialReason?: string;
  paymentId: string;
  rail: 'evm' | 'stripe';
  network: string;
  asset: string;
  reason: string;
  reasonDetail: string | null;
  idempotencyKey: string;
  /** evm: the address refunded (checksummed); stripe: null (the original payment method) */
  refundTo: string | null;
  /** what the rail knows it by: the transaction hash, or the Stripe refund `re_…` */
  reference: string | null;
  failureReason: string | null;
  failureMessage: string | null;
  createdAt: string;
  finishedAt: string | null;
}

export function toRefundView(r: RefundRecord): RefundView {
  return {
    id: r.id,
    status: r.status,
    amount: r.amount.toString(),
    ...(r.status === 'executed' && r.rail === 'evm' && r.txHash && { refundTxHash: r.txHash }),
    ...(r.status === 'denied' && r.denialReason && { denialReason: r.denialReason }),
    paymentId: r.paymentId,
    rail: r.rail,
    network: r.network,
    asset: r.rail === 'evm' ? checksummed(r.asset) : r.asset,
    reason: r.reason,
    reasonDetail: r.reasonDetail,
    idempotencyKey: r.idempotencyKey,
    refundTo: r.refundTo ? checksummed(r.refundTo) : null,
    reference: r.rail === 'evm' ? (r.status === 'executed' || r.status === 'failed' ? r.txHash : null) : r.reference,
    failureReason: r.failureReason,
    failureMessage: r.failureMessage,
    createdAt: r.createdAt.toISOString(),
    finishedAt: r.finishedAt?.toISOString() ?? null,
  };
}

function checksummed(address: string): string {
  try {
    return getAddress(address);
  } catch {
    return address;
  }
}
