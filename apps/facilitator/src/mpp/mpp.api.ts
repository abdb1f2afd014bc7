import { z } from 'zod';
import { MAX_SUBSCRIPTION_CREDENTIAL_CHARS, PAYMENT_AUTHORIZATION_HEADER } from '@mp/mpp';
import { MAX_CHALLENGE_TTL_SECONDS } from './mpp-secrets';

export const offerSchema = z.strictObject({
  method: z.string().regex(/^[a-z][a-z0-9:_-]*$/, 'must be a lowercase payment method name such as "evm" or "stripe"'),
  intent: z.string().regex(/^[a-z][a-z0-9_-]*$/, 'must be a lowercase intent such as "charge" or "subscription"'),
  request: z.record(z.string(), z.unknown()),
  description: z.string().max(1024).optional(),
});

/**
 * A route's payment terms: what the merchant issues challenges from, and what a credential presented on that route
 * must have been issued for. The same object goes to /mpp/challenges, /mpp/verify and /mpp/settle.
 */
export const termsSchema = z.strictObject({
  realm: z.string().min(1).max(256),
  offers: z.array(offerSchema).min(1).max(8),
  /** seconds a new challenge is valid; default MPP_CHALLENGE_TTL_SECONDS */
  expiresIn: z.number().int().min(10).max(MAX_CHALLENGE_TTL_SECONDS).optional(),
  /** RFC 9530 digest of the request body the challenge is for */
  digest: z
    .string()
    .regex(/^sha-256=:[A-Za-z0-9+/]+=*:$/, 'must be an RFC 9530 digest, sha-256=:<base64>:')
    .optional(),
  /** a flat map echoed back by the client and bound into the challenge id */
  opaque: z
    .record(
      z.string().refine((key) => key !== '_nonce', 'the key _nonce is reserved'),
      z.string(),
    )
    .optional(),
  /** ask the client to send the credential in Payment-Authorization (draft -02) */
  header: z.literal(PAYMENT_AUTHORIZATION_HEADER).optional(),
});

export type TermsInput = z.infer<typeof termsSchema>;

/** The longest credential of intent `charge` (a subscription's may be up to MAX_SUBSCRIPTION_CREDENTIAL_CHARS, checked once its intent is known). */
export const MAX_CHARGE_CREDENTIAL_CHARS = 32 * 1024;

export const credentialBodySchema = z.strictObject({
  /**
   * the Authorization (or Payment-Authorization) header value as the client sent it: `Payment <base64url>`; at most
   * 32 KiB, 60 KiB for intent `subscription` (one authorization per period)
   */
  credential: z.string().min(1).max(MAX_SUBSCRIPTION_CREDENTIAL_CHARS),
  /** which header carried it */
  credentialHeader: z.enum(['Authorization', PAYMENT_AUTHORIZATION_HEADER]).default('Authorization'),
  terms: termsSchema,
});

export type CredentialBody = z.infer<typeof credentialBodySchema>;

/** The facilitator's MPP request bodies by the name the OpenAPI document gives them (schemas made from these codecs). */
export const MPP_API_SCHEMAS: Record<string, { schema: z.ZodType; description: string }> = {
  MppOffer: {
    schema: offerSchema,
    description:
      'One payment option of a route: what a challenge for it carries. `request` is method-defined; the facilitator validates it and makes it canonical (checksummed addresses, `credentialTypes` and `decimals` filled in for evm; `networkId` from STRIPE_NETWORK_ID when omitted for stripe).',
  },
  MppTerms: {
    schema: termsSchema,
    description:
      "A route's payment terms. The merchant sends the same object to issue challenges and to verify or settle a credential presented on that route: the credential's challenge must equal one offer (realm, method, intent, canonical request), carry the same `digest` and `opaque`, or it is `invalid-challenge` (the HMAC proves issuance, not the route).",
  },
  MppCredentialRequest: {
    schema: credentialBodySchema,
    description: 'The body of POST /mpp/verify and /mpp/settle: the credential as the client sent it, and the terms of the route it was presented on.',
  },
};
