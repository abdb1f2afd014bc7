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
  return failure.type === 'StripeConnectionError' || failure.type === 'StripeAPIError' || failure.type === 'StripeRateLimitError' || (failure.statusCode ?? 0) >= 500;
}
