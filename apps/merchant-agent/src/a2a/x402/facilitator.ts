import { setTimeout as sleep } from 'node:timers/promises';
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse, VerifyResponse } from '@x402/core/types';
import { registerLogSecrets } from '@mp/platform';
import { X402Reason } from '@mp/x402';
import type { MerchantConfig } from '../../merchant.config';

export const X402_FACILITATOR = Symbol('X402_FACILITATOR');

/** Outcomes that are not final: the facilitator settles an authorization once, so asking again returns its outcome. */
const UNKNOWN_OUTCOMES: ReadonlySet<string> = new Set([X402Reason.settlementPending, X402Reason.unexpectedSettleError]);
const SETTLE_ATTEMPTS = 4;
const SETTLE_BACKOFF_MS = 1_000;

/**
 * Our facilitator through the official x402 client, with the merchant's API key on /verify and /settle (as the
 * paywall), each call bounded by MERCHANT_FACILITATOR_TIMEOUT_MS: a settlement that times out is an unknown outcome.
 */
export function facilitatorClient(config: MerchantConfig): FacilitatorClient {
  const apiKey = config.facilitatorApiKey;
  registerLogSecrets([apiKey]);
  const headers = { authorization: `Bearer ${apiKey}` };
  return new HTTPFacilitatorClient({
    url: config.facilitatorUrl,
    timeoutMs: config.facilitatorTimeoutMs,
    ...(apiKey ? { createAuthHeaders: async () => ({ verify: headers, settle: headers }) } : {}),
  });
}

/** /verify; a facilitator that cannot answer is an invalid verification the buyer may retry (nothing has moved). */
export async function verifyPayment(facilitator: FacilitatorClient, payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
  try {
    return await facilitator.verify(payload, requirements);
  } catch (error) {
    return {
      isValid: false,
      invalidReason: X402Reason.unexpectedVerifyError,
      invalidMessage: `the facilitator could not verify the payment: ${describe(error)}`,
    };
  }
}

/**
 * /settle until the outcome is known: a timeout (FacilitatorTimeoutError), an unreachable facilitator or
 * settlement_pending is asked again
 * (the same authorization never settles twice). After the last of `attempts` the unknown outcome is returned as it is.
 */
export async function settlePayment(
  facilitator: FacilitatorClient,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  attempts = SETTLE_ATTEMPTS,
): Promise<SettleResponse> {
  for (let attempt = 1; ; attempt++) {
    let response: SettleResponse;
    try {
      response = await facilitator.settle(payload, requirements);
    } catch (error) {
      response = {
        success: false,
        errorReason: X402Reason.unexpectedSettleError,
        errorMessage: describe(error),
        transaction: '',
        network: requirements.network,
      };
    }
    if (response.success || !isUnknownOutcome(response) || attempt >= attempts) return response;
    await sleep(SETTLE_BACKOFF_MS * 2 ** (attempt - 1));
  }
}

/** A failed settlement whose money may still move: asking the facilitator again would tell. */
export function isUnknownOutcome(response: SettleResponse): boolean {
  return !response.success && UNKNOWN_OUTCOMES.has(response.errorReason ?? '');
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
