import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, registerDecorator } from 'class-validator';
import { normalizeAsset, parseLedgerId } from '@mp/ledger';
import { TRANSFER_STATUSES, type TransferStatus } from '../core/ledger.service';

/**
 * The query strings and path parameters of the ledger's REST resources, checked by the global validation pipe: a bad
 * or unknown parameter is the `validation_failed` problem naming it, with the reasons written here. Ids and assets
 * come out normalized (an id in decimal becomes its UUID, an asset its lowercase form), numbers as numbers.
 */

const LEDGER_ID_REASON = 'must be a UUID or a 128-bit unsigned integer in decimal';
const ASSET_REASON = 'must be an asset such as "eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" or "stripe/usd"';
const CODE_REASON = 'must be an integer from 0 to 65535';
const TIME_REASON = 'must be an ISO 8601 date-time, e.g. 2026-12-01T00:00:00Z';
/** What z.iso.datetime({ offset: true }) accepts: a date, a time (seconds and fraction optional), Z or an offset. */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** A rule given as a predicate: class-validator's own decorators have no "this parser accepts it". */
function Satisfies(check: (value: unknown, query: Record<string, unknown>) => boolean, message: string): PropertyDecorator {
  return (target, propertyName) =>
    registerDecorator({
      name: 'satisfies',
      target: target.constructor,
      propertyName: String(propertyName),
      options: { message },
      validator: { validate: (value, args) => check(value, args?.object as Record<string, unknown>) },
    });
}

/** `to` of a period: not before its `from` (when both are well formed; each says so itself otherwise). */
const notBeforeFrom = (to: unknown, query: Record<string, unknown>) =>
  !isTime(query.from) || !isTime(to) || Date.parse(query.from as string) <= Date.parse(to as string);

const toLedgerId = ({ value }: { value: unknown }) => parseLedgerId(value) ?? value;
const toAsset = ({ value }: { value: unknown }) => normalizeAsset(value) ?? value;
/** Digits become a number (up to `digits` of them); anything else stays as it came and fails @IsInt. */
const toInteger =
  (digits: number) =>
  ({ value }: { value: unknown }) =>
    typeof value === 'string' && new RegExp(`^[0-9]{1,${digits}}$`).test(value) ? Number(value) : value;
const isTime = (value: unknown) => typeof value === 'string' && ISO_DATE_TIME.test(value) && !Number.isNaN(Date.parse(value));

/** A page of at most `max` items, `default` when absent; `cursor` is the previous page's `nextCursor`. */
function pageOf(max: number) {
  const reason = `must be an integer from 1 to ${max}`;
  class Page {
    @ApiPropertyOptional({ type: Number, minimum: 1, maximum: max, description: 'items per page' })
    @IsOptional()
    @Transform(toInteger(String(max).length))
    @Max(max, { message: reason })
    @Min(1, { message: reason })
    @IsInt({ message: reason })
    limit?: number;

    @ApiPropertyOptional({ maxLength: 200, description: '`nextCursor` of the previous page' })
    @IsOptional()
    @MaxLength(200, { message: 'is not a cursor this API returned' })
    @IsString({ message: 'is not a cursor this API returned' })
    cursor?: string;
  }
  return Page;
}

/** GET /accounts/{id}, GET /transfers/{id} */
export class LedgerIdPath {
  @ApiProperty({ description: 'a UUID, or a 128-bit unsigned integer in decimal' })
  @Transform(toLedgerId)
  @Satisfies((value) => parseLedgerId(value) !== undefined, LEDGER_ID_REASON)
  id!: string;
}

/** GET /accounts */
export class AccountListQuery extends pageOf(1000) {
  @ApiPropertyOptional({ description: 'only accounts of this asset' })
  @IsOptional()
  @Transform(toAsset)
  @Satisfies((value) => normalizeAsset(value) !== undefined, ASSET_REASON)
  asset?: string;

  @ApiPropertyOptional({ type: Number, minimum: 0, maximum: 65_535, description: 'only accounts with this code' })
  @IsOptional()
  @Transform(toInteger(5))
  @Max(65_535, { message: CODE_REASON })
  @IsInt({ message: CODE_REASON })
  code?: number;
}

/** GET /transfers */
export class TransferListQuery extends pageOf(1000) {
  @ApiPropertyOptional({ description: 'only transfers debiting or crediting this account' })
  @IsOptional()
  @Transform(toLedgerId)
  @Satisfies((value) => parseLedgerId(value) !== undefined, LEDGER_ID_REASON)
  account?: string;

  @ApiPropertyOptional({ description: 'only transfers of this asset' })
  @IsOptional()
  @Transform(toAsset)
  @Satisfies((value) => normalizeAsset(value) !== undefined, ASSET_REASON)
  asset?: string;

  @ApiPropertyOptional({ type: Number, minimum: 0, maximum: 65_535 })
  @IsOptional()
  @Transform(toInteger(5))
  @Max(65_535, { message: CODE_REASON })
  @IsInt({ message: CODE_REASON })
  code?: number;

  @ApiPropertyOptional({ format: 'date-time', description: 'from this instant (inclusive)' })
  @IsOptional()
  @Satisfies(isTime, TIME_REASON)
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'until this instant' })
  @IsOptional()
  @Satisfies(notBeforeFrom, 'must not be before from')
  @Satisfies(isTime, TIME_REASON)
  to?: string;

  @ApiPropertyOptional({ enum: TRANSFER_STATUSES })
  @IsOptional()
  @IsIn(TRANSFER_STATUSES, { message: `must be one of ${TRANSFER_STATUSES.join(', ')}` })
  status?: TransferStatus;
}

/** GET /statements */
export class StatementQuery extends pageOf(10_000) {
  @ApiProperty({ description: 'the account' })
  @Transform(toLedgerId)
  @Satisfies((value) => parseLedgerId(value) !== undefined, LEDGER_ID_REASON)
  @IsDefined({ message: 'is required' })
  account!: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'from this instant (inclusive); default: the beginning' })
  @IsOptional()
  @Satisfies(isTime, TIME_REASON)
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'until this instant; default: now' })
  @IsOptional()
  @Satisfies(notBeforeFrom, 'must not be before from')
  @Satisfies(isTime, TIME_REASON)
  to?: string;
}
