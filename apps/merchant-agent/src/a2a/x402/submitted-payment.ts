import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { z } from 'zod';
import { exactEvmEip3009PayloadSchema, paymentPayloadV2Schema, X402Reason } from '@mp/x402';

/** A submitted payload that pays this task's offer: what verify and settle get, and the authorization it spends. */
export interface SubmittedPayment {
  payload: PaymentPayload;
  /** lowercase */
  payer: string;
  /** the EIP-3009 nonce, lowercase */
  nonce: string;
}

export type SubmissionCheck = ({ ok: true } & SubmittedPayment) | { ok: false; reason: string; message: string };

/**
 * Checks `x402.payment.payload` against the offer stored for the task (a2a-x402 v0.2 §5.1: the merchant matches a
 * payload to what it issued), before anything reaches the facilitator: version, scheme, network, asset, recipient,
 * amount and resource (the task). Failures carry the x402 reason the facilitator would give for the same mismatch.
 */
export function checkSubmission(submitted: unknown, offer: PaymentRequired): SubmissionCheck {
  const parsed = paymentPayloadV2Schema.safeParse(submitted);
  if (!parsed.success) return fail(X402Reason.invalidPayload, `x402.payment.payload is not an x402 v2 PaymentPayload: ${z.prettifyError(parsed.error)}`);
  const { accepted, resource } = parsed.data;
  const [offered] = offer.accepts;
  if (accepted.scheme !== offered.scheme)
    return fail(X402Reason.invalidScheme, `the payment uses scheme ${accepted.scheme}; this task takes ${offered.scheme}`);
  if (accepted.network !== offered.network) return fail(X402Reason.invalidNetwork, `the payment is on ${accepted.network}; this task takes ${offered.network}`);
  if (!sameAddress(accepted.asset, offered.asset))
    return fail(X402Reason.invalidPaymentRequirements, `the payment is in ${accepted.asset}; this task takes ${offered.asset}`);
  if (resource?.url !== offer.resource.url)
    return fail(X402Reason.invalidPaymentRequirements, `the payment is for ${resource?.url ?? 'no resource'}, not for this task (${offer.resource.url})`);

  const exact = exactEvmEip3009PayloadSchema.safeParse(parsed.data.payload);
  if (!exact.success) return fail(X402Reason.invalidPayload, `the payload is not an exact EIP-3009 authorization: ${z.prettifyError(exact.error)}`);
  const { authorization } = exact.data;
  if (!sameAddress(accepted.payTo, offered.payTo) || !sameAddress(authorization.to, offered.payTo)) {
    return fail(X402Reason.exactEvmRecipientMismatch, `the payment goes to ${authorization.to}; this task is paid to ${offered.payTo}`);
  }
  if (BigInt(accepted.amount) !== BigInt(offered.amount) || BigInt(authorization.value) !== BigInt(offered.amount)) {
    return fail(X402Reason.exactEvmAuthorizationValue, `the payment is of ${authorization.value} atomic units; this task costs ${offered.amount}`);
  }
  return { ok: true, payload: parsed.data as PaymentPayload, payer: authorization.from.toLowerCase(), nonce: authorization.nonce.toLowerCase() };
}

function fail(reason: string, message: string): SubmissionCheck {
  return { ok: false, reason, message };
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}
