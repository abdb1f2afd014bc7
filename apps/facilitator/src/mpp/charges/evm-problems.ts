import type { MppError, ProblemCode } from '@mp/mpp';
import { X402Reason, type SettleResponse } from '@mp/x402';
import type { TransferFault } from '../../eip3009/transfer-authorization.rail';
import { recordedReason } from '../../settlement/recorded-reason';

/** A rail's fault as an MPP problem; the detail names the reason the payment records use for it. */
export function problemOf(fault: TransferFault, message: string): MppError {
  const code: ProblemCode =
    fault === 'facilitator_unable' ? 'internal-payment-error' : fault === 'expires_too_soon' ? 'payment-expired' : 'verification-failed';
  return { code, detail: `${message} (${recordedReason(fault)})` };
}

/**
 * A failed settlement's outcome (the payment record's reason) as an MPP problem. Pending or unexpected outcomes are not
 * the payer's fault and not final: the claim stays, and the same credential may be sent again.
 */
export function problemOfOutcome(response: SettleResponse): { error: MppError; final: boolean } {
  const reason = response.errorReason ?? X402Reason.unexpectedSettleError;
  const detail = `${response.errorMessage ?? reason} (${reason})${response.transaction ? `; transaction ${response.transaction}` : ''}`;
  const pending = reason === X402Reason.settlementPending || reason === X402Reason.unexpectedSettleError;
  const code: ProblemCode = pending ? 'internal-payment-error' : reason === X402Reason.exactEvmValidBefore ? 'payment-expired' : 'verification-failed';
  return { error: { code, detail }, final: !pending };
}
