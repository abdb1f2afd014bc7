import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsOptional, Max } from 'class-validator';
import { Satisfies } from '@mp/platform';
import { TRANSFER_STATUSES, type TransferStatus } from '../core/ledger.service';
import { ASSET_REASON, CODE_REASON, isAsset, isLedgerId, isTime, LEDGER_ID_REASON, pageOf, TIME_REASON, toAsset, toInteger, toLedgerId } from './fields';

/**
 * The query strings and path parameters of the ledger's REST resources, checked by the global validation pipe: a bad
 * or unknown parameter is the `validation_failed` problem naming it, with the reasons written here. Ids and assets
 * come out normalized (an id in decimal becomes its UUID, an asset its lowercase form), numbers as numbers.
 */

/** `to` of a period: not before its `from` (when both are well formed; each says so itself otherwise). */
const notBeforeFrom = (to: unknown, query: Record<string, unknown>) =>
  !isTime(query.from) || !isTime(to) || Date.parse(query.from as string) <= Date.parse(to as string);

/** GET /accounts/{id}, GET /transfers/{id} */
export class LedgerIdPath {
  @ApiProperty({ description: 'a UUID, or a 128-bit unsigned integer in decimal' })
  @Transform(toLedgerId)
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  id!: string;
}

/** GET /accounts */
export class AccountListQuery extends pageOf(1000) {
  @ApiPropertyOptional({ description: 'only accounts of this asset' })
  @IsOptional()
  @Transform(toAsset)
  @Satisfies(isAsset, ASSET_REASON)
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
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  account?: string;

  @ApiPropertyOptional({ description: 'only transfers of this asset' })
  @IsOptional()
  @Transform(toAsset)
  @Satisfies(isAsset, ASSET_REASON)
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
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
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
