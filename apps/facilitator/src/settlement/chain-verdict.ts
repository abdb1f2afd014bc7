import type { Hex, TransactionReceipt } from 'viem';
import type { AuthorizationUse } from '../eip3009/transfer-authorization.rail';
import { judgeSettlementReceipt, type SettledTransfer } from '../eip3009/receipt-judgement';

/**
 * What the chain says about a payment whose transactions may have reached it, the only ground for any outcome:
 * - `carried`: one of our transactions (oldest first) was mined and made the transfer;
 * - `taken`: the authorization is spent without the transfer: by a transaction that is not ours, by the payer's
 *   cancellation, or by one of ours whose logs do not show the authorized transfer (a token that misreports);
 * - `open`: none of ours carried it and the authorization is unused: it may be sent again, failed or expired;
 * - `unknown`: a transaction of ours used it, but this node cannot show its receipt yet: ask again later.
 */
export type ChainVerdict =
  { kind: 'carried'; hash: Hex; receipt: TransactionReceipt } | { kind: 'taken'; message: string } | { kind: 'open' } | { kind: 'unknown'; message: string };

/** What was read from the chain about one payment. */
export interface ChainFacts {
  /** The transfer the payment's authorization allows. */
  transfer: SettledTransfer;
  /**
   * Our transactions for the payment, oldest first, each with its receipt once mined with the network's
   * confirmations (undefined: not mined, or this node does not show it yet). Reading may stop at one that carried it.
   */
  ours: readonly { hash: Hex; receipt: TransactionReceipt | undefined }[];
  /** Whether the token has the authorization used or canceled, and by which transaction; read when none of ours carried it. */
  use?: AuthorizationUse;
  /** The receipt of the transaction that used it, when that transaction is ours (undefined: not shown yet). */
  useReceipt?: TransactionReceipt;
  /** Whether a receipt shows the transfer; EIP-3009's judgement unless the scheme has its own (upto's Permit2 permit). */
  carries?: (receipt: TransactionReceipt) => boolean;
}

/** The verdict the facts support (see ChainVerdict). */
export function chainVerdict({
  transfer,
  ours,
  use,
  useReceipt,
  carries = (receipt) => judgeSettlementReceipt(transfer, receipt).success,
}: ChainFacts): ChainVerdict {
  const carrier = ours.find((tx) => tx.receipt && carries(tx.receipt));
  if (carrier?.receipt) return { kind: 'carried', hash: carrier.hash, receipt: carrier.receipt };
  const nonce = transfer.authorization.nonce;
  if (!use) return { kind: 'unknown', message: `whether authorization ${nonce} is used was not read` };
  if (!use.used) return { kind: 'open' };
  if (use.canceled) return { kind: 'taken', message: `the payer canceled authorization ${nonce}${use.transaction ? ` in ${use.transaction}` : ''}` };
  if (!use.transaction) {
    if (ours.some((tx) => tx.receipt)) return { kind: 'taken', message: `authorization ${nonce} is used, and no transaction of ours shows the transfer` };
    return { kind: 'unknown', message: `authorization ${nonce} is used, by a transaction this node does not show yet` };
  }
  if (!isOurs(ours, use.transaction)) {
    return { kind: 'taken', message: `authorization ${nonce} was used by transaction ${use.transaction}, which this facilitator did not send` };
  }
  if (!useReceipt)
    return { kind: 'unknown', message: `authorization ${nonce} was used by our transaction ${use.transaction}, whose receipt this node does not show yet` };
  if (carries(useReceipt)) return { kind: 'carried', hash: use.transaction, receipt: useReceipt };
  return { kind: 'taken', message: `authorization ${nonce} was used by our transaction ${use.transaction} without the transfer it authorizes` };
}

/** Whether a transaction is one of ours. */
export function isOurs(ours: readonly { hash: Hex }[], hash: Hex): boolean {
  return ours.some((tx) => tx.hash.toLowerCase() === hash.toLowerCase());
}
