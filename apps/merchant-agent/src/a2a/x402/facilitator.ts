import { setTimeout as sleep } from 'node:timers/promises';
import type { FacilitatorClient } from '@x402/core/server';
import {
  SettleError,
  VerifyError,
  type PaymentPayload,
  type PaymentRequirements,
  type SettleResponse,
  type SupportedResponse,
  type VerifyResponse,
} from '@x402/core/types';
import { registerLogSecrets } from '@mp/platform';
import { X402Reason } from '@mp/x402';
import { fetchWithTimeout } from '../../facilitator-fetch';
import type { MerchantConfig } from '../../merchant.config';

export const X402_FACILITATOR = Symbol('X402_FACILITATOR');

/** Outcomes that are not final: the facilitator settles an authorization once, so asking again returns its outcome. */
const UNKNOWN_OUTCOMES: ReadonlySet<string> = new Set([X402Reason.settlementPending, X402Reason.unexpectedSettleError]);
const SETTLE_ATTEMPTS = 4;
const SETTLE_BACKOFF_MS = 1_000;

/**
 * Our facilitator's x402 API with the merchant's API key on every call (as the paywall), each call bounded by
 * MERCHANT_FACILITATOR_TIMEOUT_MS: a settlement that times out is an unknown outcome.
 */
export function facilitatorClient(config: MerchantConfig): FacilitatorClient {
  registerLogSecrets([config.facilitatorApiKey]);
  return new X402FacilitatorClient({ url: config.facilitatorUrl, apiKey: config.facilitatorApiKey, fetch: fetchWithTimeout(config.facilitatorTimeoutMs) });
}

/**
 * The wire of @x402/core's HTTPFacilitatorClient (the same bodies, answers and errors: VerifyError and SettleError for
 * an HTTP error that carries a verdict, an Error for any other), over the fetch it is given (fetchWithTimeout: keep-alive
 * node:http) where HTTPFacilitatorClient takes none and calls the global fetch. Written for bench:paid: on every paid
 * task's path twice, where the global fetch cost about 1 CPU-ms and two to three socket writes per call more.
 */
export class X402FacilitatorClient implements FacilitatorClient {
  private readonly url: string;

  constructor(private readonly options: { url: string; apiKey?: string; fetch: typeof fetch }) {
    this.url = options.url.replace(/\/+$/, '');
  }

  async verify(paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): Promise<VerifyResponse> {
    const { status, data, text } = await this.call('/verify', { x402Version: paymentPayload.x402Version, paymentPayload, paymentRequirements });
    const verdict = data as VerifyResponse | undefined;
    if (typeof verdict?.isValid !== 'boolean') throw new Error(`the facilitator answered /verify with ${status}: ${excerpt(text)}`);
    if (status !== 200) throw new VerifyError(status, verdict);
    return verdict;
  }

  async settle(paymentPayload: PaymentPayload, paymentRequirements: PaymentRequirements): Promise<SettleResponse> {
    const { status, data, text } = await this.call('/settle', { x402Version: paymentPayload.x402Version, paymentPayload, paymentRequirements });
    const outcome = data as SettleResponse | undefined;
    if (typeof outcome?.success !== 'boolean') throw new Error(`the facilitator answered /settle with ${status}: ${excerpt(text)}`);
    if (status !== 200) throw new SettleError(status, outcome);
    return outcome;
  }

  async getSupported(): Promise<SupportedResponse> {
    const { status, data, text } = await this.call('/supported');
    if (status === 200 && Array.isArray((data as SupportedResponse | undefined)?.kinds)) return data as SupportedResponse;
    throw new Error(`the facilitator answered /supported with ${status}: ${excerpt(text)}`);
  }

  private async call(path: string, body?: unknown): Promise<{ status: number; data: unknown; text: string }> {
    const response = await this.options.fetch(`${this.url}${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: {
        ...(body !== undefined && { 'content-type': 'application/json' }),
        ...(this.options.apiKey && { authorization: `Bearer ${this.options.apiKey}` }),
      },
      ...(body !== undefined && { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      // not JSON: reported with the status
    }
    return { status: response.status, data, text };
  }
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

function excerpt(text: string): string {
  return text.length > 200 ? `${text.slice(0, 200)}…` : text;
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
