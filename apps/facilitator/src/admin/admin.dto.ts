import { ApiProperty, ApiPropertyOptional, IntersectionType } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsBoolean, IsIn, IsOptional, IsString, IsUUID, Length, MaxLength, ValidateNested } from 'class-validator';
import { MAX_WEBHOOK_URL_LENGTH, PageQuery, ReceivingAddressDto } from '../merchants/merchants.dto';
import { MAX_RECEIVING_ADDRESSES } from '../merchants/receiving-addresses';

export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

const trimmed = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);

// class-validator checks a property's rules from its last decorator up, and the pipe reports only the first rule a
// field breaks: so the most basic rule (the type) is written last, right above the property.

export class CreateMerchantDto {
  @ApiProperty({ minLength: 1, maxLength: 200, description: "the merchant's name (trimmed)" })
  @Transform(trimmed)
  @Length(1, 200, { message: 'must be a string of 1 to 200 characters' })
  @IsString({ message: 'must be a string of 1 to 200 characters' })
  name!: string;

  /** Where its webhooks go; absent or null: none. The same destination checks as PUT /merchants/me/webhook. */
  @ApiPropertyOptional({ type: String, nullable: true, maxLength: MAX_WEBHOOK_URL_LENGTH, description: 'where its webhooks go; absent or null: none' })
  @IsOptional()
  @MaxLength(MAX_WEBHOOK_URL_LENGTH, { message: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` })
  @IsString({ message: 'must be an http(s) URL or null' })
  webhookUrl?: string | null;

  /** The addresses its settlements may pay (unless allowAnyPayTo). */
  @ApiPropertyOptional({
    type: [ReceivingAddressDto],
    maxItems: MAX_RECEIVING_ADDRESSES,
    description: 'the addresses its settlements may pay (unless allowAnyPayTo)',
  })
  @IsOptional()
  @Type(() => ReceivingAddressDto)
  @ValidateNested({ each: true, message: 'must be an object { network, address }' })
  @ArrayMaxSize(MAX_RECEIVING_ADDRESSES, { message: `a merchant declares at most ${MAX_RECEIVING_ADDRESSES} receiving addresses` })
  @IsArray({ message: 'must be an array of { network, address }' })
  receivingAddresses?: ReceivingAddressDto[];

  @ApiPropertyOptional({ description: 'settlements may pay any address' })
  @IsOptional()
  @IsBoolean({ message: 'must be true or false' })
  allowAnyPayTo?: boolean;

  /** Name of its first API key (default: `default`). */
  @ApiPropertyOptional({ minLength: 1, maxLength: 200, description: 'name of its first API key (default: `default`)' })
  @IsOptional()
  @Transform(trimmed)
  @Length(1, 200, { message: 'must be a string of 1 to 200 characters' })
  @IsString({ message: 'must be a string of 1 to 200 characters' })
  keyName?: string;
}

export class CreateApiKeyDto {
  @ApiPropertyOptional({ minLength: 1, maxLength: 200, description: "the key's name" })
  @IsOptional()
  @Transform(trimmed)
  @Length(1, 200, { message: 'must be a string of 1 to 200 characters' })
  @IsString({ message: 'must be a string of 1 to 200 characters' })
  name?: string;
}

export class DeliveriesQuery extends PageQuery {
  @IsOptional()
  @IsIn(WEBHOOK_DELIVERY_STATUSES, { message: `must be one of ${WEBHOOK_DELIVERY_STATUSES.join(', ')}` })
  status?: (typeof WEBHOOK_DELIVERY_STATUSES)[number];
}

export class MerchantPath {
  @IsUUID('all', { message: 'must be a merchant id (a UUID)' })
  merchantId!: string;
}

export class ApiKeyPath extends MerchantPath {
  @IsUUID('all', { message: 'must be an API key id (a UUID)' })
  keyId!: string;
}

export class DeliveryPath extends MerchantPath {
  @IsUUID('all', { message: 'must be a webhook delivery id (a UUID)' })
  deliveryId!: string;
}

/** DELETE /admin/merchants/{merchantId}/receiving-addresses/{network}/{address}: the merchant's path checks and the self-service ones */
export class MerchantReceivingAddressPath extends IntersectionType(MerchantPath, ReceivingAddressDto) {}
