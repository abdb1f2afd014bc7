import { Transform, Type } from 'class-transformer';
import {
  ArrayMaxSize,
  IsArray,
  IsBoolean,
  IsIn,
  IsInt,
  IsOptional,
  IsString,
  IsUUID,
  Length,
  Matches,
  Max,
  MaxLength,
  registerDecorator,
  ValidateIf,
  ValidateNested,
  type ValidationArguments,
} from 'class-validator';
import { MAX_RECEIVING_ADDRESSES, receivingAddress } from '../merchants/receiving-addresses';

/** Longest webhook URL accepted, as PUT /merchants/me/webhook (it is stored with every delivery). */
export const MAX_WEBHOOK_URL_LENGTH = 2_048;
export const WEBHOOK_DELIVERY_STATUSES = ['pending', 'delivered', 'failed'] as const;

const trimmed = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.trim() : value);
/** A query value `1`..`100` becomes a number; anything else stays as it came and fails @IsInt. */
const pageSize = ({ value }: { value: unknown }) => (typeof value === 'string' && /^[1-9][0-9]{0,2}$/.test(value) ? Number(value) : value);
const LIMIT_REASON = 'must be an integer from 1 to 100';

// class-validator checks a property's rules from its last decorator up, and the pipe reports only the first rule a
// field breaks: so the most basic rule (the type) is written last, right above the property.

/** A 0x address a merchant may be paid at: 20 bytes of hex, not zero, a valid EIP-55 checksum when mixed-case. */
function IsReceivableAddress(): PropertyDecorator {
  const problem = (value: unknown) => {
    const checked = receivingAddress('eip155:1', value);
    return checked.ok ? undefined : checked.problems.find((p) => p.name === 'address')?.reason;
  };
  return (target, propertyName) =>
    registerDecorator({
      name: 'isReceivableAddress',
      target: target.constructor,
      propertyName: String(propertyName),
      validator: {
        validate: (value: unknown) => problem(value) === undefined,
        defaultMessage: (args?: ValidationArguments) => problem(args?.value) ?? 'must be a 0x-prefixed 20-byte hex address',
      },
    });
}

/** A string or null, and present: `{ "webhookUrl": null }` clears, a missing member is an error. */
function IsStringOrNull(message: string): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'isStringOrNull',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message },
      validator: { validate: (value: unknown) => value === null || typeof value === 'string' },
    });
}

export class ReceivingAddressDto {
  @Matches(/^eip155:[1-9][0-9]{0,19}$/, { message: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' })
  @IsString({ message: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' })
  network!: string;

  @IsReceivableAddress()
  address!: string;
}

export class CreateMerchantDto {
  @Transform(trimmed)
  @Length(1, 200, { message: 'must be a string of 1 to 200 characters' })
  @IsString({ message: 'must be a string of 1 to 200 characters' })
  name!: string;

  /** Where its webhooks go; absent or null: none. The same destination checks as PUT /merchants/me/webhook. */
  @IsOptional()
  @MaxLength(MAX_WEBHOOK_URL_LENGTH, { message: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` })
  @IsString({ message: 'must be an http(s) URL or null' })
  webhookUrl?: string | null;

  /** The addresses its settlements may pay (unless allowAnyPayTo). */
  @IsOptional()
  @Type(() => ReceivingAddressDto)
  @ValidateNested({ each: true, message: 'must be an object { network, address }' })
  @ArrayMaxSize(MAX_RECEIVING_ADDRESSES, { message: `a merchant declares at most ${MAX_RECEIVING_ADDRESSES} receiving addresses` })
  @IsArray({ message: 'must be an array of { network, address }' })
  receivingAddresses?: ReceivingAddressDto[];

  @IsOptional()
  @IsBoolean({ message: 'must be true or false' })
  allowAnyPayTo?: boolean;

  /** Name of its first API key (default: `default`). */
  @IsOptional()
  @Transform(trimmed)
  @Length(1, 200, { message: 'must be a string of 1 to 200 characters' })
  @IsString({ message: 'must be a string of 1 to 200 characters' })
  keyName?: string;
}

export class UpdateMerchantDto {
  /** true: its settlements may pay any address, declared or not */
  @IsBoolean({ message: 'must be true or false' })
  allowAnyPayTo!: boolean;
}

export class CreateApiKeyDto {
  @IsOptional()
  @Transform(trimmed)
  @Length(1, 200, { message: 'must be a string of 1 to 200 characters' })
  @IsString({ message: 'must be a string of 1 to 200 characters' })
  name?: string;
}

export class SetWebhookDto {
  // null is valid as it is (it clears); a missing member is not
  @ValidateIf((dto: SetWebhookDto) => dto.webhookUrl !== null)
  @MaxLength(MAX_WEBHOOK_URL_LENGTH, { message: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` })
  @IsStringOrNull('must be an http(s) URL or null')
  webhookUrl!: string | null;
}

export class PageQuery {
  @IsOptional()
  @Transform(pageSize)
  @Max(100, { message: LIMIT_REASON })
  @IsInt({ message: LIMIT_REASON })
  limit?: number;

  /** `nextCursor` of the previous page */
  @IsOptional()
  @MaxLength(200, { message: 'must be the nextCursor of a previous page' })
  @IsString({ message: 'must be the nextCursor of a previous page' })
  cursor?: string;
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

export class ReceivingAddressPath extends MerchantPath {
  @Matches(/^eip155:[1-9][0-9]{0,19}$/, { message: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' })
  @IsString({ message: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' })
  network!: string;

  @IsReceivableAddress()
  address!: string;
}
