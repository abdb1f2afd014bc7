import type { z } from 'zod';
import {
  exactEvmEip3009PayloadSchema,
  facilitatorRequestEnvelopeSchema,
  paymentIdentifierInfoSchema,
  paymentPayloadV1Schema,
  paymentPayloadV2Schema,
  paymentRequirementsV1Schema,
  paymentRequirementsV2Schema,
  resourceInfoSchema,
  uptoEvmPermit2PayloadSchema,
} from './schemas';

/**
 * The x402 wire codecs by the name the OpenAPI documents give them, with what each one is: the documents' schemas
 * are made from these (`z.toJSONSchema`), so they cannot say other than what the facilitator and its clients parse.
 */
export const X402_WIRE_SCHEMAS: Record<string, { schema: z.ZodType; description: string }> = {
  ResourceInfo: { schema: resourceInfoSchema, description: 'x402 v2 resource description (`paymentPayload.resource`). Strict: unknown members are rejected.' },
  PaymentRequirementsV2: {
    schema: paymentRequirementsV2Schema,
    description:
      "x402 v2 payment requirements (`paymentRequirementsV2Schema`). Strict: unknown members are rejected with 400; `extra` is open. For `exact` on EVM, `extra` must hold the token's EIP-712 domain `{name, version}` (checked as a protocol reason, not a 400).",
  },
  PaymentPayloadV2: {
    schema: paymentPayloadV2Schema,
    description:
      'x402 v2 payment payload (`paymentPayloadV2Schema`). Strict; `payload` and `extensions` are open at this level (the scheme validates `payload`).',
  },
  PaymentRequirementsV1: {
    schema: paymentRequirementsV1Schema,
    description:
      'x402 v1 payment requirements (`paymentRequirementsV1Schema`). Strict; `extra` and `outputSchema` are open. `network` is a v1 name (e.g. `base`, `base-sepolia`) or a CAIP-2 id.',
  },
  PaymentPayloadV1: {
    schema: paymentPayloadV1Schema,
    description: 'x402 v1 payment payload (`paymentPayloadV1Schema`). Strict. v1 has no extensions, so no payment identifier.',
  },
  FacilitatorRequest: {
    schema: facilitatorRequestEnvelopeSchema,
    description:
      'The request of POST /verify and POST /settle. Decoding (libs/x402/src/request.ts):\n1. The envelope must be an object with `paymentPayload` (an object with an integer `x402Version`) and `paymentRequirements` (an object), and nothing else. Otherwise 400 `validation_failed`.\n2. `paymentPayload.x402Version` other than 1 or 2, or a top-level `x402Version` that differs from it: HTTP 200 with reason `invalid_x402_version`.\n3. The version decides the schemas of payload and requirements (strict; unknown members are a 400 naming them; `extra`, `extensions`, `outputSchema` and `payload` stay open), then the exact-EVM payload schema applies to `payload`.\nThe fingerprint of a request is sha256 of the canonical JSON (keys sorted) of `{paymentPayload, paymentRequirements}`; it decides whether two requests are "the same payload".',
  },
  ExactEvmEip3009Payload: {
    schema: exactEvmEip3009PayloadSchema,
    description:
      '`exact` on EVM with EIP-3009 `transferWithAuthorization` (`exactEvmEip3009PayloadSchema`). Strict at both levels. The signature is over the EIP-712 typed data `TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)` with domain `{name, version}` from `paymentRequirements.extra`, `chainId` of the network and `verifyingContract` = the asset.',
  },
  UptoEvmPermit2Payload: {
    schema: uptoEvmPermit2PayloadSchema,
    description:
      '`upto` on EVM (x402 v2): a Permit2 witness transfer (`uptoEvmPermit2PayloadSchema`). Strict at every level. The signature is over the EIP-712 typed data `PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,Witness witness)` with `TokenPermissions(address token,uint256 amount)` and `Witness(address to,address facilitator,uint256 validAfter)`, domain `{name: "Permit2", chainId, verifyingContract: 0x000000000022D473030F116dDEE9F6B43aC78BA3}`; `spender` is the x402 upto proxy `0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002`, `permitted.amount` the maximum, `witness.facilitator` the `extra.facilitatorAddress` of `/supported`. At /settle, `paymentRequirements.amount` is the amount to charge (0 to the maximum) and may differ from `accepted.amount`.',
  },
  PaymentIdentifierInfo: {
    schema: paymentIdentifierInfoSchema,
    description: 'The `info` of the payment-identifier extension (`paymentIdentifierInfoSchema`), open for other members.',
  },
};
