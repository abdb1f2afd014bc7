import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsOptional, IsString, IsUUID, Matches, Max, MaxLength, ValidateIf } from 'class-validator';
import { Satisfies } from '@mp/platform';
import { PAYMENT_VIEW_STATES, type PaymentViewState } from './payment-view';
import { receivingAddress } from './receiving-addresses';

/**
 * The DTO classes of the merchant's own REST resources (and the operator's, which share some): checked by the global
 * validation pipe, whose `validation_failed` problem names every bad field with the reasons written here.
 */

/** Longest webhook URL accepted, as PUT /merchants/me/webhook (it is stored with every delivery). */
export const MAX_WEBHOOK_URL_LENGTH = 2_048;

/** A query value of digits from 1 to `max` becomes a number; anything else stays as it came and fails @IsInt. */
export function pageSize(max: number) {
  const digits = new RegExp(`^[1-9][0-9]{0,${String(max).length - 1}}$`);
  return ({ value }: { value: unknown }) => (typeof value === 'string' && digits.test(value) ? Number(value) : value);
}
const LIMIT_REASON = 'must be an integer from 1 to 100';
const CAIP2_EVM = 'must be a CAIP-2 EVM network id, e.g. eip155:8453';

// class-validator checks a property's rules from its last decorator up, and the pipe reports only the first rule a
// field breaks: so the most basic rule (the type) is written last, right above the property.

/** Why a value is not a 0x address a merchant may be paid at (20 bytes of hex, not zero, a valid EIP-55 checksum when mixed-case). */
function receivableAddressProblem(value: unknown): string | undefined {
  const checked = receivingAddress('eip155:1', value);
  return checked.ok ? undefined : checked.problems.find((p) => p.name === 'address')?.reason;
}

/** A string or null, and present: `{ "webhookUrl": null }` clears, a missing member is an error. */
const isStringOrNull = (value: unknown) => value === null || typeof value === 'string';

export class ReceivingAddressDto {
  @ApiProperty({ description: 'CAIP-2 EVM network id', example: 'eip155:8453' })
  @Matches(/^eip155:[1-9][0-9]{0,19}$/, { message: CAIP2_EVM })
  @IsString({ message: CAIP2_EVM })
  network!: string;

  @ApiProperty({
    description: '0x address, 20 bytes; a mixed-case one must carry a valid EIP-55 checksum',
    example: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
  })
  @Satisfies(
    (value) => receivableAddressProblem(value) === undefined,
    (value) => receivableAddressProblem(value) ?? 'must be a 0x-prefixed 20-byte hex address',
  )
  address!: string;
}

/** DELETE /merchants/me/receiving-addresses/{network}/{address} */
export class ReceivingAddressPath extends ReceivingAddressDto {}

export class SetWebhookDto {
  @ApiProperty({ type: String, nullable: true, maxLength: MAX_WEBHOOK_URL_LENGTH, description: 'https URL webhooks go to; null stops them' })
  // null is valid as it is (it clears); a missing member is not
  @ValidateIf((dto: SetWebhookDto) => dto.webhookUrl !== null)
  @MaxLength(MAX_WEBHOOK_URL_LENGTH, { message: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` })
  @Satisfies(isStringOrNull, 'must be an http(s) URL or null')
  webhookUrl!: string | null;
}

/** PATCH /merchants/me */
export class UpdateMerchantSettingsDto {
  @ApiProperty({ description: 'true: settlements may pay any address, not only the declared receiving addresses' })
  @IsBoolean({ message: 'must be true or false' })
  allowAnyPayTo!: boolean;
}

export class PageQuery {
  @ApiPropertyOptional({ type: Number, minimum: 1, maximum: 100, description: 'items per page' })
  @IsOptional()
  @Transform(pageSize(100))
  @Max(100, { message: LIMIT_REASON })
  @IsInt({ message: LIMIT_REASON })
  limit?: number;

  /** `nextCursor` of the previous page */
  @ApiPropertyOptional({ maxLength: 200, description: '`nextCursor` of the previous page' })
  @IsOptional()
  @MaxLength(200, { message: 'must be the nextCursor of a previous page' })
  @IsString({ message: 'must be the nextCursor of a previous page' })
  cursor?: string;
}

/** GET /payments */
export class PaymentsQuery extends PageQuery {
  @ApiPropertyOptional({ enum: PAYMENT_VIEW_STATES, description: 'only payments in this state' })
  @IsOptional()
  @IsIn(PAYMENT_VIEW_STATES, { message: `must be one of ${PAYMENT_VIEW_STATES.join(', ')}` })
  state?: PaymentViewState;
}

/** GET /payments/{id} */
export class PaymentPath {
  @ApiProperty({ format: 'uuid' })
  @IsUUID('all', { message: 'must be a payment id (a UUID)' })
  id!: string;
}
