import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { ArrayMinSize, ArrayUnique, IsArray, IsDefined, IsIn, IsOptional, IsString, Matches, MaxLength, ValidateIf } from 'class-validator';
import { ProblemError, Satisfies } from '@mp/platform';
import { ROW_KINDS, type Period } from '@mp/reconciliation';
import { isTime, pageOf, TIME_REASON } from '../http/fields';
import { RUN_SOURCES, type RowFilter, type RunPosition, type RunSource } from './run.repository';

/**
 * The reconciliation API's body, path and query DTOs, checked by the global validation pipe: a bad or unknown member
 * or parameter is the `validation_failed` problem naming it. What needs the configuration (the longest period, the
 * sources this ledger has) is checked by the controller after.
 */

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const DAY_MS = 24 * 3_600_000;
const NOT_OUR_CURSOR = 'is not a cursor this API returned';
const ROW_FILTERS = ['all', 'breaks', ...ROW_KINDS];
const lowercase = ({ value }: { value: unknown }) => (typeof value === 'string' ? value.toLowerCase() : value);

/** POST /reconciliations */
export class StartReconciliationDto {
  @ApiPropertyOptional({ format: 'uuid', description: "The merchant meant; must be the API key's (a 400 otherwise)." })
  @ValidateIf((_object, value) => value !== undefined)
  @Transform(lowercase)
  @Matches(UUID, { message: 'must be a UUID' })
  @IsString({ message: 'must be a UUID' })
  merchantId?: string;

  @ApiProperty({ format: 'date-time', example: '2026-11-30T00:00:00Z', description: 'Start of the period (inclusive), ISO 8601 with a time zone.' })
  @Satisfies(isTime, TIME_REASON)
  @IsDefined({ message: 'is required' })
  from!: string;

  @ApiProperty({
    format: 'date-time',
    example: '2026-12-01T00:00:00Z',
    description:
      'End of the period (exclusive); after `from`, at most `RECON_MAX_PERIOD_DAYS` later. It may be in the future: what has not happened yet is simply not there.',
  })
  @Satisfies(isTime, TIME_REASON)
  @IsDefined({ message: 'is required' })
  to!: string;

  @ApiPropertyOptional({
    enum: RUN_SOURCES,
    isArray: true,
    minItems: 1,
    uniqueItems: true,
    description:
      'What to reconcile the ledger against; default every source configured on the ledger (`stripe` needs STRIPE_SECRET_KEY, a 400 otherwise). With the merchant and the period, what makes two requests the same.',
  })
  @ValidateIf((_object, value) => value !== undefined)
  @ArrayUnique({ message: 'must not name a source twice' })
  @IsIn(RUN_SOURCES, { each: true, message: `must list sources out of ${RUN_SOURCES.join(', ')}` })
  @ArrayMinSize(1, { message: 'must name at least one source' })
  @IsArray({ message: `must list sources out of ${RUN_SOURCES.join(', ')}` })
  sources?: RunSource[];
}

/** The period a run request asks for: `to` after `from`, at most `maxPeriodDays` apart. */
export function periodOf({ from, to }: StartReconciliationDto, maxPeriodDays: number): Period {
  const period = { from: new Date(from), to: new Date(to) };
  if (period.from >= period.to) throw invalidTo('must be after from');
  if (period.to.getTime() - period.from.getTime() > maxPeriodDays * DAY_MS) throw invalidTo(`the period may span at most ${maxPeriodDays} days`);
  return period;
}

function invalidTo(reason: string): ProblemError {
  return new ProblemError('validation_failed', 'invalid field(s): to', { invalidParams: [{ name: 'to', reason }] });
}

/** /reconciliations/{id}… */
export class RunIdPath {
  @ApiProperty({ format: 'uuid', description: 'the reconciliation run' })
  @Transform(lowercase)
  @Matches(UUID, { message: 'must be a reconciliation id (a UUID)' })
  @IsString({ message: 'must be a reconciliation id (a UUID)' })
  id!: string;
}

/** A run, its CSV or its report, read with the merchant's key or the `token` of its signed link. */
export class RunReadQuery {
  @ApiPropertyOptional({ maxLength: 200, description: "the signed link's token, instead of an API key" })
  @IsOptional()
  @MaxLength(200, { message: 'is not a token this API issued' })
  @IsString({ message: 'is not a token this API issued' })
  token?: string;
}

/** GET /reconciliations: `limit` (1–100, default 20) and the opaque `cursor` of the previous page. */
export class RunListQuery extends pageOf(100) {}

/** GET /reconciliations/{id}/rows; its `cursor` is the last row's sequence number. */
export class RowsQuery extends pageOf(1000) {
  @Matches(/^(0|[1-9][0-9]{0,8})$/, { message: NOT_OUR_CURSOR })
  declare cursor?: string;

  @ApiPropertyOptional({ enum: ROW_FILTERS, default: 'all' })
  @IsOptional()
  @IsIn(ROW_FILTERS, { message: `must be one of ${ROW_FILTERS.join(', ')}` })
  kind?: RowFilter;

  @ApiPropertyOptional({ maxLength: 200, description: "the signed link's token, instead of an API key" })
  @IsOptional()
  @MaxLength(200, { message: 'is not a token this API issued' })
  @IsString({ message: 'is not a token this API issued' })
  token?: string;
}

/** Cursors are opaque to clients: base64url JSON of the last run's position. */
export function encodeRunCursor(position: RunPosition): string {
  return Buffer.from(JSON.stringify([position.createdMicros, position.id])).toString('base64url');
}

export function decodeRunCursor(cursor: string): RunPosition {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    // reported below
  }
  const [createdMicros, id] = Array.isArray(value) ? value : [];
  if (typeof createdMicros !== 'string' || !/^-?[0-9]{1,18}$/.test(createdMicros) || typeof id !== 'string' || !UUID.test(id)) throw invalidCursor();
  return { createdMicros, id: id.toLowerCase() };
}

function invalidCursor(): ProblemError {
  return new ProblemError('validation_failed', 'invalid query parameter(s): cursor', { invalidParams: [{ name: 'cursor', reason: NOT_OUR_CURSOR }] });
}
