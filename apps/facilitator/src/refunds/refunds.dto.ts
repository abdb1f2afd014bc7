import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Type } from 'class-transformer';
import { IsDefined, IsIn, IsObject, IsString, IsUUID, Matches, MaxLength, ValidateIf, ValidateNested } from 'class-validator';
import { isAddress } from 'viem';
import { isAtomicString } from '@mp/money';
import { Satisfies } from '@mp/platform';

/**
 * POST /refunds: the x402 `refund` extension's RefundRequest (x402-foundation/x402 specs/extensions/refund.md), checked
 * by the global validation pipe. A bad or unknown member is a 400 naming it and nothing is written.
 */

// the pipe reports the first rule a field breaks, checked from the last decorator up: presence and type go last

/** The extension's machine-readable reason codes. */
export const REFUND_REASONS = ['service_not_delivered', 'service_defective', 'duplicate_payment', 'overcharge', 'customer_request', 'other'] as const;
export type RefundReason = (typeof REFUND_REASONS)[number];

/** Absent is fine, null is not. */
const Optional = () => ValidateIf((_object, value) => value !== undefined);
const REQUIRED = { message: 'is required' };

const NETWORK_PATTERN = /^(eip155:[1-9][0-9]{0,19}|stripe)$/;
const TX_HASH_PATTERN = /^0x[0-9a-fA-F]{64}$/;
/** our payment id (a UUID), an x402 payment-identifier, or a Stripe PaymentIntent id */
const PAYMENT_ID_PATTERN = /^[A-Za-z0-9_-]{16,128}$/;
const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9_.:-]{1,128}$/;
const SIGNATURE_PATTERN = /^0x(?:[0-9a-fA-F]{2}){1,4096}$/;

const amountReason = (value: unknown) =>
  typeof value !== 'string'
    ? 'must be a decimal string of atomic units, e.g. "10000"'
    : value.startsWith('-')
      ? 'must be greater than 0'
      : value === '0'
        ? 'must be greater than 0: a refund moves something'
        : 'must be a whole number of atomic units in decimal, e.g. "10000" (no sign, decimal point or exponent; at most 2^256-1)';
const isPositiveAtomic = (value: unknown) => isAtomicString(value) && value !== '0';

/** The settled payment the refund is about. */
export class PaymentReferenceDto {
  @ApiProperty({
    pattern: NETWORK_PATTERN.source,
    example: 'eip155:8453',
    description: 'CAIP-2 network of the settlement; `stripe` for a payment settled through Stripe',
  })
  @Matches(NETWORK_PATTERN, { message: 'must be a CAIP-2 eip155 network (eip155:<chain id>) or "stripe"' })
  @IsString({ message: 'must be a CAIP-2 eip155 network (eip155:<chain id>) or "stripe"' })
  @IsDefined(REQUIRED)
  network!: string;

  @ApiPropertyOptional({
    pattern: TX_HASH_PATTERN.source,
    description: 'the settlement transaction (EVM payments: required unless paymentId names the payment; not used for Stripe)',
  })
  @Optional()
  @Matches(TX_HASH_PATTERN, { message: 'must be a 32-byte 0x hex transaction hash' })
  @IsString({ message: 'must be a 32-byte 0x hex transaction hash' })
  txHash?: string;

  @ApiPropertyOptional({
    pattern: PAYMENT_ID_PATTERN.source,
    description:
      "the payment: the facilitator's payment id (a UUID, as in GET /payments), the x402 payment-identifier it was settled under, or (Stripe) its PaymentIntent `pi_…`. Needed when one transaction settled several payments (batches).",
  })
  @Optional()
  @Matches(PAYMENT_ID_PATTERN, { message: 'must be a payment id, a payment-identifier (16 to 128 of A-Z a-z 0-9 _ -) or a PaymentIntent id' })
  @IsString({ message: 'must be a payment id, a payment-identifier (16 to 128 of A-Z a-z 0-9 _ -) or a PaymentIntent id' })
  paymentId?: string;
}

/** POST /refunds */
export class CreateRefundDto {
  @ApiProperty({ enum: [2], description: 'x402 protocol version; must be 2' })
  @IsIn([2], { message: 'must be 2' })
  @IsDefined(REQUIRED)
  x402Version!: 2;

  @ApiProperty({ type: PaymentReferenceDto })
  @Type(() => PaymentReferenceDto)
  @ValidateNested({ message: 'must be an object { network, txHash?, paymentId? }' })
  @Satisfies((value) => typeof value === 'object' && value !== null && !Array.isArray(value), 'must be an object { network, txHash?, paymentId? }')
  @IsDefined(REQUIRED)
  paymentReference!: PaymentReferenceDto;

  @ApiProperty({ description: 'atomic units of the settled asset (Stripe: minor units of the currency), > 0, in decimal', example: '10000' })
  @Satisfies(isPositiveAtomic, amountReason)
  @IsDefined(REQUIRED)
  amount!: string;

  @ApiProperty({ enum: REFUND_REASONS })
  @IsIn(REFUND_REASONS, { message: `must be one of ${REFUND_REASONS.join(', ')}` })
  @IsDefined(REQUIRED)
  reason!: RefundReason;

  @ApiPropertyOptional({ maxLength: 500, description: 'free-text detail' })
  @Optional()
  @MaxLength(500, { message: 'must be at most 500 characters' })
  @IsString({ message: 'must be a string of at most 500 characters' })
  reasonDetail?: string;

  @ApiPropertyOptional({
    pattern: '^0x[0-9a-fA-F]{40}$',
    description:
      "EVM only: where the refund goes, an address on the payment's network; default: the payer. Not accepted for Stripe payments (refunds go back to the card).",
  })
  @Optional()
  @Satisfies(
    (value) => typeof value === 'string' && /^0x[0-9a-fA-F]{40}$/.test(value) && isAddress(value),
    'must be a 0x address (20 bytes hex; mixed case must be a valid checksum)',
  )
  refundTo?: string;

  @ApiProperty({
    pattern: IDEMPOTENCY_KEY_PATTERN.source,
    description:
      'chosen by the client (a UUID, say), unique per merchant: the same key with the same request answers the original outcome, with another request 409',
  })
  @Matches(IDEMPOTENCY_KEY_PATTERN, { message: 'must be 1 to 128 of A-Z a-z 0-9 _ . : -' })
  @IsString({ message: 'must be 1 to 128 of A-Z a-z 0-9 _ . : -' })
  @IsDefined(REQUIRED)
  idempotencyKey!: string;

  @ApiPropertyOptional({
    pattern: SIGNATURE_PATTERN.source,
    description:
      "the payer's signature over the request, as the extension defines it. Recorded, not verified: the merchant's API key is the authority for a refund here (the merchant checks the payer before asking).",
  })
  @Optional()
  @Matches(SIGNATURE_PATTERN, { message: 'must be 0x hex bytes' })
  @IsString({ message: 'must be 0x hex bytes' })
  payerSignature?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: true,
    description: 'the signed receipt of the Offer and Receipt extension, when there is one (part of the request; not checked)',
  })
  @Optional()
  @IsObject({ message: 'must be an object' })
  receipt?: Record<string, unknown>;
}

/** GET /refunds/{id} */
export class RefundPath {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'must be a refund id (a UUID)' })
  id!: string;
}
