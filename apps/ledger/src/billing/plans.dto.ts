import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform, Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsDefined, IsIn, IsInt, IsOptional, IsString, Matches, Max, Min, ValidateIf, ValidateNested } from 'class-validator';
import { MAX_PERIOD_COUNT, MAX_TRIAL_DAYS, PERIOD_UNITS, periodProblem, type PeriodUnit } from '@mp/billing';
import { isAtomicString } from '@mp/money';
import { Satisfies } from '@mp/platform';
import { ASSET_REASON, isAsset, isLedgerId, isTime, LEDGER_ID_REASON, pageOf, TIME_REASON, toAsset, toLedgerId } from '../http/fields';
import { METER_KEY_PATTERN } from '../usage/meter';
import { canonicalDecimal, CANCEL_REFUNDS, DUNNING_OUTCOMES, type CancelRefund, type DunningOutcome, type PlanInput } from './plan';

/**
 * The plans API's body and query DTOs, checked by the global validation pipe: a bad or unknown member is the
 * `validation_failed` problem naming it, and nothing is written. The rules that make a plan billable (a period that
 * is exactly representable, an amount above zero) are checked here, before anything is stored.
 */

// the pipe reports the first rule a field breaks, checked from the last decorator up: presence and type go last

/** Absent is fine, null is not: IsOptional would let `"trialDays": null` through. */
const Optional = () => ValidateIf((_object, value) => value !== undefined);
const REQUIRED = { message: 'is required' };

const NAME_REASON = 'must be a string of 1 to 200 characters';
const PRODUCT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const PRODUCT_REASON = 'must be 1 to 128 letters, digits or . _ : / -, starting with a letter or digit';
const UNIT_REASON = `must be one of ${PERIOD_UNITS.join(', ')}`;
const COUNT_REASON = `must be a whole number of periods, at most ten years of them: ${PERIOD_UNITS.map((u) => `${MAX_PERIOD_COUNT[u]} ${u}s`).join(', ')}`;
const TRIAL_REASON = `must be a whole number of days from 0 to ${MAX_TRIAL_DAYS}`;

const amountReason = (value: unknown) =>
  typeof value !== 'string'
    ? 'must be a decimal string of atomic units, e.g. "1500000"'
    : value.startsWith('-')
      ? 'must be greater than 0'
      : value === '0'
        ? 'must be greater than 0: a plan charges something each period'
        : 'must be a whole number of atomic units in decimal, e.g. "1500000" (no sign, decimal point or exponent; at most 2^256-1)';
const isPositiveAtomic = (value: unknown) => isAtomicString(value) && value !== '0';

/** The count is judged with its unit (`@mp/billing`'s periodProblem); a bad unit is periodUnit's own error. */
const isRepresentableCount = (count: unknown, plan: Record<string, unknown>) =>
  !PERIOD_UNITS.includes(plan.periodUnit as PeriodUnit) || periodProblem({ unit: plan.periodUnit as PeriodUnit, count: count as number }) === undefined;

/** Most usage components one plan carries. */
export const MAX_USAGE_COMPONENTS = 20;
const COMPONENT_KEY_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/;
const COMPONENT_KEY_REASON = 'must be 1 to 64 letters, digits or . _ : -, starting with a letter or digit';
const METER_KEY_REASON = "must be the key of one of the merchant's meters";
/** At most 60 integer digits and 18 decimals: what NUMERIC(78, 18) holds exactly. */
const UNIT_AMOUNT_PATTERN = /^(0|[1-9][0-9]{0,59})(\.[0-9]{1,18})?$/;
const isUnitAmount = (value: unknown) => typeof value === 'string' && UNIT_AMOUNT_PATTERN.test(value) && /[1-9]/.test(value);
const unitAmountReason = (value: unknown) =>
  typeof value === 'string' && UNIT_AMOUNT_PATTERN.test(value)
    ? 'must be greater than 0'
    : 'must be a decimal string of atomic units per unit of the meter\'s aggregate, e.g. "0.25" (at most 60 digits before the point and 18 after; no sign or exponent)';
const DESCRIPTION_REASON = 'must be a string of 1 to 500 characters';

/** One usage-priced component of POST /plans. */
export class UsageComponentDto {
  @ApiProperty({ pattern: COMPONENT_KEY_PATTERN.source, example: 'tokens', description: "the component's key, unique in the plan" })
  @Matches(COMPONENT_KEY_PATTERN, { message: COMPONENT_KEY_REASON })
  @IsString({ message: COMPONENT_KEY_REASON })
  @IsDefined(REQUIRED)
  key!: string;

  @ApiProperty({
    pattern: METER_KEY_PATTERN.source,
    example: 'llm-tokens',
    description: "the merchant's meter (POST /usage/meters) whose aggregate is billed each period",
  })
  @Matches(METER_KEY_PATTERN, { message: METER_KEY_REASON })
  @IsString({ message: METER_KEY_REASON })
  @IsDefined(REQUIRED)
  meterKey!: string;

  @ApiProperty({
    example: '0.25',
    description:
      "atomic units of the plan's asset per unit of the meter's aggregate, > 0, up to 18 decimals; a period's charge is ceil(aggregate × unitAmount)",
  })
  @Satisfies(isUnitAmount, unitAmountReason)
  @IsDefined(REQUIRED)
  unitAmount!: string;

  @ApiPropertyOptional({ minLength: 1, maxLength: 500, example: 'LLM tokens, per token' })
  @Optional()
  @Matches(/^.{1,500}$/su, { message: DESCRIPTION_REASON })
  @IsString({ message: DESCRIPTION_REASON })
  description?: string;
}

/** POST /plans */
export class CreatePlanDto {
  @ApiProperty({ description: 'a UUID (a decimal 128-bit integer is accepted too); chosen by the caller, so a retry reuses it' })
  @Transform(toLedgerId)
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  @IsDefined(REQUIRED)
  id!: string;

  @ApiProperty({ minLength: 1, maxLength: 200, example: 'Pro monthly' })
  @Matches(/^.{1,200}$/su, { message: NAME_REASON })
  @IsString({ message: NAME_REASON })
  @IsDefined(REQUIRED)
  name!: string;

  @ApiProperty({ pattern: PRODUCT_PATTERN.source, example: 'pro', description: 'the product key entitlements are about; the merchant chooses it' })
  @Matches(PRODUCT_PATTERN, { message: PRODUCT_REASON })
  @IsString({ message: PRODUCT_REASON })
  @IsDefined(REQUIRED)
  product!: string;

  @ApiProperty({ description: 'atomic units of the asset charged each period, > 0, in decimal', example: '10000000' })
  @Satisfies(isPositiveAtomic, amountReason)
  @IsDefined(REQUIRED)
  amount!: string;

  @ApiProperty({ description: 'the ledger asset the plan is priced in', example: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913' })
  @Transform(toAsset)
  @Satisfies(isAsset, ASSET_REASON)
  @IsDefined(REQUIRED)
  asset!: string;

  @ApiProperty({ enum: PERIOD_UNITS, description: 'months are counted from the anchor and clamped to the month end (Jan 31 → Feb 28 → Mar 31)' })
  @IsIn(PERIOD_UNITS, { message: UNIT_REASON })
  @IsDefined(REQUIRED)
  periodUnit!: PeriodUnit;

  @ApiProperty({
    type: 'integer',
    minimum: 1,
    description: `at most ${MAX_PERIOD_COUNT.day} days, ${MAX_PERIOD_COUNT.week} weeks or ${MAX_PERIOD_COUNT.month} months`,
  })
  @Satisfies(isRepresentableCount, COUNT_REASON)
  @Min(1, { message: COUNT_REASON })
  @IsInt({ message: COUNT_REASON })
  @IsDefined(REQUIRED)
  periodCount!: number;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: MAX_TRIAL_DAYS, default: 0, description: 'free days before the first charged period' })
  @Optional()
  @Max(MAX_TRIAL_DAYS, { message: TRIAL_REASON })
  @Min(0, { message: TRIAL_REASON })
  @IsInt({ message: TRIAL_REASON })
  trialDays?: number;

  @ApiPropertyOptional({ format: 'date-time', description: 'no period starting at or after it is charged; one that started before it is served to its end' })
  @Optional()
  @Satisfies(isTime, TIME_REASON)
  endsAt?: string;

  @ApiPropertyOptional({ enum: DUNNING_OUTCOMES, default: 'canceled', description: 'where a subscription goes when the retries of a failed renewal run out' })
  @Optional()
  @IsIn(DUNNING_OUTCOMES, { message: `must be one of ${DUNNING_OUTCOMES.join(', ')}` })
  onDunningExhausted?: DunningOutcome;

  @ApiPropertyOptional({
    enum: CANCEL_REFUNDS,
    default: 'none',
    description: 'what an immediate cancel refunds: nothing, or the unused part of the paid period',
  })
  @Optional()
  @IsIn(CANCEL_REFUNDS, { message: `must be one of ${CANCEL_REFUNDS.join(', ')}` })
  cancelRefund?: CancelRefund;

  @ApiPropertyOptional({
    type: [UsageComponentDto],
    maxItems: MAX_USAGE_COMPONENTS,
    description:
      "usage-priced components, billed at each period's end from the payer's prepaid balance (EVM plans only: a stripe/… asset is refused). Usage events count for a subscription when their `subject` is its id.",
  })
  @Optional()
  @Type(() => UsageComponentDto)
  @ValidateNested({ each: true, message: 'must be an object { key, meterKey, unitAmount, description? }' })
  @ArrayMaxSize(MAX_USAGE_COMPONENTS, { message: `a plan carries at most ${MAX_USAGE_COMPONENTS} usage components` })
  @IsArray({ message: 'must be an array of { key, meterKey, unitAmount, description? }' })
  usage?: UsageComponentDto[];
}

/** The plan a checked body asks for, defaults filled in. */
export function planInputOf(body: CreatePlanDto): PlanInput {
  return {
    id: body.id,
    name: body.name,
    product: body.product,
    amount: BigInt(body.amount),
    asset: body.asset,
    periodUnit: body.periodUnit,
    periodCount: body.periodCount,
    trialDays: body.trialDays ?? 0,
    endsAt: body.endsAt === undefined ? null : new Date(body.endsAt),
    onDunningExhausted: body.onDunningExhausted ?? 'canceled',
    cancelRefund: body.cancelRefund ?? 'none',
    usage: (body.usage ?? []).map((c) => ({
      key: c.key,
      meterKey: c.meterKey,
      unitAmount: canonicalDecimal(c.unitAmount),
      description: c.description ?? null,
    })),
  };
}

const ARCHIVED_REASON = 'must be true or false';

/** GET /plans */
export class PlanListQuery extends pageOf(1000) {
  @ApiPropertyOptional({ description: 'only plans of this product' })
  @IsOptional()
  @Matches(PRODUCT_PATTERN, { message: PRODUCT_REASON })
  @IsString({ message: PRODUCT_REASON })
  product?: string;

  @ApiPropertyOptional({ enum: ['true', 'false'], description: 'only archived plans (true) or only those open to new subscriptions (false); default both' })
  @IsOptional()
  @Transform(({ value }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsIn([true, false], { message: ARCHIVED_REASON })
  archived?: boolean;
}
