import { isAddress, isHex } from 'viem';
import { z } from 'zod';
import { isAtomicString } from '@mp/money';
import { isCaip2 } from './networks';

/**
 * Wire schemas for the facilitator API. Envelopes are strict (an unknown member is an error naming it);
 * `extra` and `extensions` stay open because the protocol lets servers and clients put anything there.
 */
const nonEmpty = z.string().min(1, 'must not be empty').max(2048, 'is too long');
const openObject = z.record(z.string(), z.unknown());
const atomic = z.string().refine(isAtomicString, 'must be a non-negative integer in atomic units, as a decimal string');
const address = z.string().refine((v) => isAddress(v, { strict: true }), 'must be a 0x-prefixed 20-byte address (valid checksum if mixed case)');
const bytes32 = z.string().refine((v) => isHex(v, { strict: true }) && v.length === 66, 'must be 0x-prefixed 32 bytes of hex');
const signatureHex = z
  .string()
  .refine((v) => isHex(v, { strict: true }) && v.length >= 4 && v.length % 2 === 0 && v.length <= 16_386, 'must be 0x-prefixed hex bytes');
// 0 is allowed: @x402/evm's batch-settlement channel manager sends it with its claim and settle requests
const timeoutSeconds = z.number().int('must be an integer').nonnegative('must not be negative').max(31_536_000, 'is more than a year');

export const resourceInfoSchema = z.strictObject({
  url: nonEmpty,
  description: z.string().max(4096).nullish(),
  mimeType: z.string().max(256).nullish(),
  serviceName: z.string().max(32).nullish(),
  tags: z.array(z.string().max(32)).max(5).nullish(),
  iconUrl: z.string().max(2048).nullish(),
});

export const paymentRequirementsV2Schema = z.strictObject({
  scheme: nonEmpty,
  network: nonEmpty.refine(isCaip2, 'must be a CAIP-2 network id such as eip155:8453'),
  amount: atomic,
  asset: nonEmpty,
  payTo: nonEmpty,
  maxTimeoutSeconds: timeoutSeconds,
  extra: openObject.nullish(),
});

export const paymentPayloadV2Schema = z.strictObject({
  x402Version: z.literal(2),
  resource: resourceInfoSchema.nullish(),
  accepted: paymentRequirementsV2Schema,
  payload: openObject,
  extensions: openObject.nullish(),
});

export const paymentRequirementsV1Schema = z.strictObject({
  scheme: nonEmpty,
  network: nonEmpty,
  maxAmountRequired: atomic,
  resource: nonEmpty,
  description: z.string().max(4096),
  mimeType: z.string().max(256).nullish(),
  outputSchema: openObject.nullish(),
  payTo: nonEmpty,
  maxTimeoutSeconds: timeoutSeconds,
  asset: nonEmpty,
  extra: openObject.nullish(),
});

export const paymentPayloadV1Schema = z.strictObject({
  x402Version: z.literal(1),
  scheme: nonEmpty,
  network: nonEmpty,
  payload: openObject,
});

/** The envelope of POST /verify and /settle; the version inside decides which payload schema applies. */
export const facilitatorRequestEnvelopeSchema = z.strictObject({
  x402Version: z.number().int('must be an integer').optional(),
  paymentPayload: z.looseObject({ x402Version: z.number().int('must be an integer') }),
  paymentRequirements: openObject,
});

/** `exact` on EVM with EIP-3009: the payload a client signs (x402 scheme_exact_evm.md). */
export const exactEvmEip3009PayloadSchema = z.strictObject({
  signature: signatureHex,
  authorization: z.strictObject({
    from: address,
    to: address,
    value: atomic,
    validAfter: atomic,
    validBefore: atomic,
    nonce: bytes32,
  }),
});

/** `upto` on EVM: the Permit2 witness transfer a client signs (x402 scheme_upto_evm.md; @x402/evm 2.27 upto client). */
export const uptoEvmPermit2PayloadSchema = z.strictObject({
  signature: signatureHex,
  permit2Authorization: z.strictObject({
    from: address,
    permitted: z.strictObject({ token: address, amount: atomic }),
    spender: address,
    nonce: atomic,
    deadline: atomic,
    witness: z.strictObject({ to: address, facilitator: address, validAfter: atomic }),
  }),
});

/** The payment-identifier extension as the client echoes it (specs/extensions/payment_identifier.md). */
export const paymentIdentifierInfoSchema = z.looseObject({
  required: z.boolean().optional(),
  id: z
    .string()
    .min(16, 'must be 16 to 128 characters')
    .max(128, 'must be 16 to 128 characters')
    .regex(/^[A-Za-z0-9_-]+$/, 'may contain only letters, digits, _ and -')
    .optional(),
});

export type ResourceInfo = z.infer<typeof resourceInfoSchema>;
export type PaymentRequirementsV2 = z.infer<typeof paymentRequirementsV2Schema>;
export type PaymentRequirementsV1 = z.infer<typeof paymentRequirementsV1Schema>;
export type PaymentPayloadV2 = z.infer<typeof paymentPayloadV2Schema>;
export type PaymentPayloadV1 = z.infer<typeof paymentPayloadV1Schema>;
export type ExactEvmEip3009Payload = z.infer<typeof exactEvmEip3009PayloadSchema>;
export type UptoEvmPermit2Payload = z.infer<typeof uptoEvmPermit2PayloadSchema>;
