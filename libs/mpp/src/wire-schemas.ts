import type { z } from 'zod';
import { challengeSchema } from './challenge';
import { credentialWireSchema } from './credential';
import { evmChargeRequestSchema } from './methods/evm-charge';
import { stripeChargeRequestSchema } from './methods/stripe-charge';
import { receiptSchema } from './receipt';

/**
 * The MPP wire codecs by the name the OpenAPI documents give them, with what each one is: the documents' schemas are
 * made from these (`z.toJSONSchema`), so they cannot say other than what the facilitator and its clients parse.
 */
export const MPP_WIRE_SCHEMAS: Record<string, { schema: z.ZodType; description: string }> = {
  MppChallenge: {
    schema: challengeSchema,
    description:
      'An issued challenge, `request` as JSON (the MCP binding carries it so); `WWW-Authenticate` carries it base64url(JCS). `id` = base64url(HMAC-SHA256(merchant secret, realm|method|intent|request|expires|digest|opaque)).',
  },
  MppCredential: {
    schema: credentialWireSchema,
    description: "A credential as it travels: the JSON that `Payment <base64url>` carries (the challenge echoed, the method's payload, the payer as `source`).",
  },
  MppReceipt: { schema: receiptSchema, description: 'The `Payment-Receipt` (base64url JSON) content.' },
  MppEvmChargeRequest: {
    schema: evmChargeRequestSchema,
    description:
      'Method `evm`, intent `charge` (as mppx 0.11 writes it): an EIP-3009 `transferWithAuthorization` of exactly `amount` atomic units of `currency` to `recipient` on `methodDetails.chainId`, nonce = keccak256(challenge id + realm).',
  },
  MppStripeChargeRequest: {
    schema: stripeChargeRequestSchema,
    description:
      'Method `stripe`, intent `charge` (draft-stripe-charge-00): a Shared Payment Token redeemed by one confirmed PaymentIntent for `amount` minor units of `currency`.',
  },
};
