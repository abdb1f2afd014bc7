import Stripe from 'stripe';
import type { StripeConfig } from '../config/facilitator.config';

export const STRIPE_CLIENT = Symbol('STRIPE_CLIENT');

/** The official SDK, pointed at STRIPE_API_BASE (Stripe itself, or the local fake in tests and the demo). */
export function createStripeClient(config: StripeConfig): Stripe {
  const base = config.apiBase;
  const protocol = base.protocol === 'http:' ? 'http' : 'https';
  return new Stripe(config.secretKey, {
    host: base.hostname,
    port: base.port ? Number(base.port) : protocol === 'http' ? 80 : 443,
    protocol,
    timeout: config.timeoutMs,
    // Safe: every PaymentIntent carries our idempotency key, which the SDK reuses on its retries.
    maxNetworkRetries: 1,
    appInfo: { name: 'machine-payments-facilitator' },
  });
}

/** What a failed SDK call tells us, without trusting its class identity across module copies. */
export interface StripeFailure {
  /** StripeCardError, StripeInvalidRequestError, StripeConnectionError, ... */
  type: string;
  statusCode?: number;
  code?: string;
  declineCode?: string;
  message: string;
  /** the PaymentIntent Stripe returned with a decline */
  paymentIntentId?: string;
}

export function stripeFailure(error: unknown): StripeFailure | undefined {
  const type = error instanceof Error ? (error as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !type.startsWith('Stripe')) return undefined;
  const e = error as unknown as Error & { type: string; statusCode?: number; code?: string; decline_code?: string; raw?: { payment_intent?: { id?: string } } };
  return {
    type: e.type,
    ...(e.statusCode !== undefined && { statusCode: e.statusCode }),
    ...(e.code && { code: e.code }),
    ...(e.decline_code && { declineCode: e.decline_code }),
    message: e.message,
    ...(e.raw?.payment_intent?.id && { paymentIntentId: e.raw.payment_intent.id }),
  };
}

/** Stripe could not be reached or failed on its side: the outcome of the call is unknown. */
export function isStripeUnavailable(failure: StripeFailure): boolean {
  return (
    failure.type === 'StripeConnectionError' || failure.type === 'StripeAPIError' || failure.type === 'StripeRateLimitError' || (failure.statusCode ?? 0) >= 500
  );
}

/**
 * What a failed call that would charge tells about the charge, by Stripe's status code and error type (never by its
 * message):
 * - `declined`: a card error (402); the PaymentIntent exists and is not paid;
 * - `refused`: Stripe refused the request itself (400/404), so this call charged nothing; an earlier call may have;
 * - `unknown`: anything else: no answer or a timeout, a 5xx, `409 idempotency_key_in_use` (the same call is still
 *   running at Stripe), an `idempotency_error` (the key was first used with other parameters: that first call may
 *   have charged), rate limits and key problems. Only the PaymentIntent can tell.
 */
export type StripeCallOutcome = 'declined' | 'refused' | 'unknown';

export function stripeCallOutcome(failure: StripeFailure): StripeCallOutcome {
  if (failure.type === 'StripeCardError' || failure.statusCode === 402) return 'declined';
  if (failure.type === 'StripeIdempotencyError' || failure.type === 'StripeRateLimitError') return 'unknown';
  if (failure.statusCode === 400 || failure.statusCode === 404) return 'refused';
  return 'unknown';
}
