import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { normalizeAsset, parseLedgerId } from '@mp/ledger';

/** The ledger's field rules shared by its query, path and body DTOs (and the reconciliation's): reasons, normalizations, pages. */

export const LEDGER_ID_REASON = 'must be a UUID or a 128-bit unsigned integer in decimal';
export const ASSET_REASON = 'must be an asset such as "eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" or "stripe/usd"';
export const CODE_REASON = 'must be an integer from 0 to 65535';

export const isLedgerId = (value: unknown) => parseLedgerId(value) !== undefined;
export const isAsset = (value: unknown) => normalizeAsset(value) !== undefined;
/** @Transform: the canonical id or asset; a value that is neither stays as it came and fails its rule. */
export const toLedgerId = ({ value }: { value: unknown }) => parseLedgerId(value) ?? value;
export const toAsset = ({ value }: { value: unknown }) => normalizeAsset(value) ?? value;

export const TIME_REASON = 'must be an ISO 8601 date-time, e.g. 2026-12-01T00:00:00Z';
/** What z.iso.datetime({ offset: true }) accepts: a date, a time (seconds and fraction optional), Z or an offset. */
const ISO_DATE_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:\d{2})$/;

/** Digits become a number (up to `digits` of them); anything else stays as it came and fails @IsInt. */
export const toInteger =
  (digits: number) =>
  ({ value }: { value: unknown }) =>
    typeof value === 'string' && new RegExp(`^[0-9]{1,${digits}}$`).test(value) ? Number(value) : value;
export const isTime = (value: unknown) => typeof value === 'string' && ISO_DATE_TIME.test(value) && !Number.isNaN(Date.parse(value));

/** A page of at most `max` items, `default` when absent; `cursor` is the previous page's `nextCursor`. */
export function pageOf(max: number) {
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
