import { encodeFunctionData, erc20Abi, isAddressEqual, parseEventLogs, type Address, type Hex, type TransactionReceipt } from 'viem';

/** The ERC-20 transfer a refund sends from the merchant's refund wallet. */
export interface RefundTransfer {
  token: Address;
  from: Address;
  to: Address;
  amount: bigint;
}

export function refundCalldata(transfer: RefundTransfer): Hex {
  return encodeFunctionData({ abi: erc20Abi, functionName: 'transfer', args: [transfer.to, transfer.amount] });
}

export type RefundReceiptJudgement = { executed: true } | { executed: false; reason: 'transaction_reverted' | 'transfer_mismatch'; message: string };

/**
 * A mined refund counts only when it succeeded and the token logged exactly this Transfer (from the refund wallet,
 * to the refund address, of the amount): a token that moves something else did not refund.
 */
export function judgeRefundReceipt(transfer: RefundTransfer, receipt: Pick<TransactionReceipt, 'status' | 'logs' | 'transactionHash'>): RefundReceiptJudgement {
  if (receipt.status !== 'success')
    return { executed: false, reason: 'transaction_reverted', message: `refund transaction ${receipt.transactionHash} reverted` };
  const logs = parseEventLogs({ abi: erc20Abi, eventName: 'Transfer', logs: receipt.logs.filter((l) => isAddressEqual(l.address, transfer.token)) });
  const moved = logs.some((l) => isAddressEqual(l.args.from, transfer.from) && isAddressEqual(l.args.to, transfer.to) && l.args.value === transfer.amount);
  return moved
    ? { executed: true }
    : {
        executed: false,
        reason: 'transfer_mismatch',
        message: `refund transaction ${receipt.transactionHash} has no Transfer of ${transfer.amount} from ${transfer.from} to ${transfer.to}`,
      };
}

/**
 * What became of a refund's recorded transaction that has no receipt, from the wallet's mined nonce: a mined nonce
 * above it means another transaction took that nonce, so ours can never be mined and the refund may be signed again;
 * otherwise it may still be mined, and is broadcast again (the very same bytes).
 */
export function unminedTransaction(txNonce: number, minedNonce: number): 'dead' | 'rebroadcast' {
  return minedNonce > txNonce ? 'dead' : 'rebroadcast';
}
