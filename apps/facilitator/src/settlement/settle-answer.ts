import { X402Reason, type SettleResponse } from '@mp/x402';
import type { PaymentRecord } from './payment-record';

/** Who asks to settle: the payment they present, and the merchant whose API key asks (null in open mode). */
export interface SettleAsker {
  payer: string;
  /** The network as the request named it, echoed in the answer. */
  network: string;
  /** The request's payload fingerprint, compared with the record's payload hash. */
  fingerprint: string;
  merchantId: string | null;
}

/**
 * What a settle request does with the payment's record as it stands:
 * - `answer`: reply with this response;
 * - `retry`: an earlier attempt failed before anything reached the chain; verify this payload again and resend;
 * - `wait`: still in flight; wait for the record to change (the deadline has not passed).
 */
export type SettleAnswer = { kind: 'answer'; response: SettleResponse } | { kind: 'retry' } | { kind: 'wait' };

/**
 * Maps a payment's record to the answer every caller of that payment gets. `startedAt`: when this request began
 * following the record (a failure recorded since then is this request's outcome); `deadline`: when it must answer.
 */
export function settleAnswer(record: PaymentRecord, asker: SettleAsker, time: { startedAt: number; now: number; deadline: number }): SettleAnswer {
  const answer = (response: SettleResponse): SettleAnswer => ({ kind: 'answer', response });
  if (record.merchantId !== asker.merchantId) {
    // Another merchant's (or an open-mode) payment: say only that the authorization is taken, never its outcome.
    return answer(settleFailure(asker, X402Reason.exactEvmNonceAlreadyUsed, 'this authorization was already presented to this facilitator'));
  }
  if (record.payloadHash !== asker.fingerprint && record.state !== 'failed') {
    return answer(
      settleFailure(
        asker,
        X402Reason.exactEvmNonceAlreadyUsed,
        `this authorization was already presented with a different payload${record.txHash ? ` and settled by ${record.txHash}` : ''}`,
      ),
    );
  }
  switch (record.state) {
    case 'confirmed':
      return answer({ success: true, payer: asker.payer, transaction: record.txHash ?? '', network: asker.network });
    case 'expired':
      return answer(
        settleFailure(
          asker,
          X402Reason.exactEvmValidBefore,
          record.errorMessage ?? 'the authorization expired before it could be settled',
          record.txHash ?? '',
        ),
      );
    case 'failed':
      // Mined and failed (final), or failed while this request waited: the outcome of this payment is that failure.
      if (record.txHash || record.updatedAt.getTime() >= time.startedAt) {
        return answer(settleFailure(asker, record.errorReason ?? X402Reason.exactEvmTransactionFailed, record.errorMessage ?? undefined, record.txHash ?? ''));
      }
      return { kind: 'retry' };
    default:
      if (time.now >= time.deadline) {
        const message = record.txHash
          ? 'the transaction is not mined yet; settle again to get its outcome'
          : 'the settlement is queued; settle again to get its outcome';
        return answer(settleFailure(asker, X402Reason.settlementPending, message, record.txHash ?? ''));
      }
      return { kind: 'wait' };
  }
}

/** A failed settlement's response; `transaction` is "" when nothing was sent. */
export function settleFailure(to: { payer: string; network: string }, reason: string, message?: string, transaction = ''): SettleResponse {
  return { success: false, errorReason: reason, ...(message ? { errorMessage: message } : {}), payer: to.payer, transaction, network: to.network };
}
