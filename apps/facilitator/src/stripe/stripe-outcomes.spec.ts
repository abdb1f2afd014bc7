import Stripe from 'stripe';
import { stripeCallOutcome, stripeFailure } from './stripe.client';
import { intentThatCounts, judgeIntent } from './stripe-outcomes';

/** The SDK's own error classes, built from raw error bodies as the SDK builds them from Stripe's answers. */
const sdkError = (statusCode: number | undefined, raw: { type: string; code?: string; message?: string }) => {
  const body = { message: 'x', ...raw, ...(statusCode !== undefined && { statusCode }) };
  return statusCode === undefined ? new Stripe.errors.StripeConnectionError(body as never) : Stripe.errors.generateV1Error(body as never);
};
const outcomeOf = (error: unknown) => stripeCallOutcome(stripeFailure(error)!);

describe('what a failed Stripe call says about the charge', () => {
  it('a card error is a decline', () => {
    expect(outcomeOf(sdkError(402, { type: 'card_error', code: 'card_declined' }))).toBe('declined');
  });

  it('a request Stripe refused (400, 404) charged nothing by this call', () => {
    expect(outcomeOf(sdkError(400, { type: 'invalid_request_error', code: 'parameter_missing' }))).toBe('refused');
    expect(outcomeOf(sdkError(404, { type: 'invalid_request_error', code: 'resource_missing' }))).toBe('refused');
  });

  it('409 idempotency_key_in_use, idempotency_error, 5xx, 429, key problems and no answer are unknown, whatever the message says', () => {
    expect(outcomeOf(sdkError(409, { type: 'invalid_request_error', code: 'idempotency_key_in_use' }))).toBe('unknown');
    expect(outcomeOf(sdkError(400, { type: 'idempotency_error', message: 'Your card was declined.' }))).toBe('unknown');
    expect(outcomeOf(sdkError(500, { type: 'api_error' }))).toBe('unknown');
    expect(outcomeOf(sdkError(503, { type: 'api_error' }))).toBe('unknown');
    expect(outcomeOf(sdkError(429, { type: 'invalid_request_error', code: 'rate_limit' }))).toBe('unknown');
    expect(outcomeOf(sdkError(401, { type: 'invalid_request_error' }))).toBe('unknown');
    expect(outcomeOf(sdkError(undefined, { type: 'api_connection_error' }))).toBe('unknown');
  });
});

describe('what a PaymentIntent says about its payment', () => {
  const intent = (status: Stripe.PaymentIntent.Status, extra: Partial<Stripe.PaymentIntent> = {}) => ({
    id: 'pi_1',
    status,
    last_payment_error: null,
    next_action: null,
    ...extra,
  });

  it('succeeded; failed when canceled, declined or needing the customer; pending otherwise', () => {
    expect(judgeIntent(intent('succeeded'))).toEqual({ kind: 'succeeded' });
    expect(judgeIntent(intent('canceled'))).toMatchObject({ kind: 'failed', reason: 'canceled', problem: 'verification-failed' });
    expect(judgeIntent(intent('requires_action'))).toMatchObject({ kind: 'failed', reason: 'requires_action', problem: 'payment-action-required' });
    const declined = intent('requires_payment_method', {
      last_payment_error: {
        type: 'card_error',
        code: 'card_declined',
        decline_code: 'insufficient_funds',
        message: 'Your card has insufficient funds.',
      } as Stripe.PaymentIntent.LastPaymentError,
    });
    expect(judgeIntent(declined)).toEqual({
      kind: 'failed',
      reason: 'insufficient_funds',
      message: 'Your card has insufficient funds.',
      problem: 'verification-failed',
    });
    for (const status of ['processing', 'requires_confirmation', 'requires_capture', 'requires_payment_method'] as const)
      expect(judgeIntent(intent(status))).toEqual({ kind: 'pending' });
  });

  it('of several for one challenge, a succeeded one counts, else the newest', () => {
    expect(intentThatCounts([{ status: 'canceled' }, { status: 'succeeded' }])).toEqual({ status: 'succeeded' });
    expect(
      intentThatCounts([
        { status: 'requires_action', id: 'new' },
        { status: 'canceled', id: 'old' },
      ]),
    ).toEqual({ status: 'requires_action', id: 'new' });
    expect(intentThatCounts([])).toBeUndefined();
  });
});
