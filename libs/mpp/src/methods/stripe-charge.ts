import { z } from 'zod';
import type { Challenge } from '../challenge';
import { fail, ok, type Result } from '../problems';

/** Method `stripe`, intent `charge` (draft-stripe-charge-00): a Shared Payment Token redeemed by a PaymentIntent. */
export const STRIPE_METHOD = 'stripe';

/**
 * An amount Stripe takes for one charge: minor units, at most Stripe's ceiling of 99,999,999 (eight digits), so it is
 * always an exact JS number.
 */
export const stripeAmountSchema = z
  .string()
  .regex(/^[1-9][0-9]{0,7}$/, "must be a positive decimal string of the currency's minor units, at most 99999999 (Stripe's maximum)");

export const stripeChargeRequestSchema = z.strictObject({
  amount: stripeAmountSchema,
  currency: z.string().regex(/^[a-z]{3}$/, 'must be a lowercase ISO 4217 code such as "usd"'),
  description: z.string().max(1024).optional(),
  externalId: z.string().max(256).optional(),
  recipient: z.string().max(256).optional(),
  methodDetails: z.strictObject({
    networkId: z.string().min(1).max(256),
    paymentMethodTypes: z.array(z.string().min(1).max(64)).min(1).max(16),
    metadata: z.record(z.string().max(40), z.string().max(500)).optional(),
  }),
});

export type StripeChargeRequest = z.infer<typeof stripeChargeRequestSchema>;

export const sptPayloadSchema = z.strictObject({
  spt: z.string().regex(/^spt_[A-Za-z0-9_]{1,250}$/, 'must be a Shared Payment Token id (spt_...)'),
  externalId: z.string().max(256).optional(),
});

export type SptPayload = z.infer<typeof sptPayloadSchema>;

export interface StripeChargeCredential {
  request: StripeChargeRequest;
  payload: SptPayload;
}

/** Shape checks of a stripe charge credential; whether the token is good is Stripe's to say. */
export function checkStripeCharge(challenge: Challenge, payload: unknown): Result<StripeChargeCredential> {
  const request = stripeChargeRequestSchema.safeParse(challenge.request);
  if (!request.success) return fail('invalid-challenge', 'the challenge is not a stripe charge request');
  const parsed = sptPayloadSchema.safeParse(payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('invalid-payload', `payload.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return ok({ request: request.data, payload: parsed.data });
}

/** The idempotency key mppx and the spec use for the PaymentIntent: one credential, one charge. */
export function stripeIdempotencyKey(challengeId: string, spt: string): string {
  return `mpp_${challengeId}_${spt}`;
}
