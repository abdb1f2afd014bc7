import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsIn, IsString, Matches, ValidateIf } from 'class-validator';
import { Satisfies } from '@mp/platform';
import { isTime, TIME_REASON } from '../http/fields';
import { storable } from './usage-event';
import {
  AGGREGATIONS,
  GROUP_NAME_PATTERN,
  isJsonPath,
  MAX_GROUP_BY,
  METER_KEY_PATTERN,
  WINDOW_SIZES,
  type Aggregation,
  type MeterDefinition,
  type WindowSize,
} from './meter';

/** The meters API's body and query DTOs, checked by the global validation pipe (events are parsed by usage-event.ts). */

const Optional = () => ValidateIf((_object, value) => value !== undefined);
const REQUIRED = { message: 'is required' };
const KEY_REASON = 'must be 1 to 64 letters, digits or . _ : -, starting with a letter or digit';
const EVENT_TYPE_REASON = 'must be a string of 1 to 256 characters';
const TEXT_REASON = 'must not contain the NUL character or an unpaired surrogate';
const isStorable = (value: unknown) => typeof value !== 'string' || storable(value);
/** PostgreSQL's timestamps start at year 1 (an ISO year 0000 is out of its range). */
const EARLIEST_MS = Date.parse('0001-01-01T00:00:00Z');
const RANGE_REASON = 'must be at or after 0001-01-01T00:00:00Z';
const inRange = (value: unknown) => typeof value !== 'string' || !isTime(value) || Date.parse(value) >= EARLIEST_MS;
const PATH_REASON = 'must be a JSON path into the event data such as "$.tokens" or "$.usage.input_tokens" (1 to 8 names of letters, digits, _ or -)';
const GROUP_BY_REASON = `must be an object of at most ${MAX_GROUP_BY} dimensions, each a name (letters, digits, _) mapped to a JSON path such as "$.model"`;

const isGroupBy = (value: unknown) =>
  value !== null &&
  typeof value === 'object' &&
  !Array.isArray(value) &&
  Object.keys(value).length <= MAX_GROUP_BY &&
  Object.entries(value).every(([name, path]) => GROUP_NAME_PATTERN.test(name) && isJsonPath(path));

/** POST /usage/meters */
export class CreateMeterDto {
  @ApiProperty({ pattern: METER_KEY_PATTERN.source, example: 'llm-tokens', description: "the meter's key, chosen by the merchant; unique per merchant" })
  @Matches(METER_KEY_PATTERN, { message: KEY_REASON })
  @IsString({ message: KEY_REASON })
  @IsDefined(REQUIRED)
  id!: string;

  @ApiProperty({ example: 'llm.completion', description: 'the `type` of the events the meter totals' })
  @Satisfies(isStorable, TEXT_REASON)
  @Matches(/^.{1,256}$/su, { message: EVENT_TYPE_REASON })
  @IsString({ message: EVENT_TYPE_REASON })
  @IsDefined(REQUIRED)
  eventType!: string;

  @ApiProperty({ enum: AGGREGATIONS, description: 'how the values of a window are totalled' })
  @IsIn(AGGREGATIONS, { message: `must be one of ${AGGREGATIONS.join(', ')}` })
  @IsDefined(REQUIRED)
  aggregation!: Aggregation;

  @ApiPropertyOptional({
    example: '$.tokens',
    description: 'JSON path of the value in the event data; required unless aggregation is count (where it must be absent)',
  })
  @ValidateIf((object: CreateMeterDto, value) => value !== undefined || object.aggregation !== 'count')
  @Satisfies(
    (value, object) => (object.aggregation === 'count' ? value === undefined : isJsonPath(value)),
    (value) => (value === undefined ? 'is required unless aggregation is count' : isJsonPath(value) ? 'must be absent when aggregation is count' : PATH_REASON),
  )
  valueProperty?: string;

  @ApiPropertyOptional({
    type: 'object',
    additionalProperties: { type: 'string' },
    example: { model: '$.model' },
    description: 'dimensions a summary is split by: name → JSON path into the event data',
  })
  @Optional()
  @Satisfies(isGroupBy, GROUP_BY_REASON)
  groupBy?: Record<string, string>;
}

export function meterOf(body: CreateMeterDto): MeterDefinition {
  return {
    key: body.id,
    eventType: body.eventType,
    aggregation: body.aggregation,
    valueProperty: body.valueProperty ?? null,
    groupBy: body.groupBy ?? {},
  };
}

/** GET /usage/meters/{key}/summary */
export class MeterSummaryQuery {
  @ApiPropertyOptional({ description: "only this subject's events (a customer or payer key); default: every subject's" })
  @Optional()
  @Satisfies(isStorable, TEXT_REASON)
  @Matches(/^.{1,256}$/su, { message: 'must be a string of 1 to 256 characters' })
  @IsString({ message: 'must be a string of 1 to 256 characters' })
  subject?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'events at or after this time' })
  @Optional()
  @Satisfies(inRange, RANGE_REASON)
  @Satisfies(isTime, TIME_REASON)
  from?: string;

  @ApiPropertyOptional({ format: 'date-time', description: 'events before this time' })
  @Optional()
  @Satisfies(inRange, RANGE_REASON)
  @Satisfies(isTime, TIME_REASON)
  @Satisfies(
    (value, object) => object.from === undefined || !isTime(object.from) || !isTime(value) || Date.parse(value as string) > Date.parse(object.from as string),
    'must be after from',
  )
  to?: string;

  @ApiPropertyOptional({ enum: WINDOW_SIZES, default: 'none', description: 'UTC calendar windows; none: one total for [from, to)' })
  @Optional()
  @IsIn(WINDOW_SIZES, { message: `must be one of ${WINDOW_SIZES.join(', ')}` })
  windowSize?: WindowSize;
}

/** `{key}` in the meters' paths. */
export class MeterKeyPath {
  @ApiProperty({ pattern: METER_KEY_PATTERN.source })
  @Matches(METER_KEY_PATTERN, { message: KEY_REASON })
  @IsString({ message: KEY_REASON })
  key!: string;
}
