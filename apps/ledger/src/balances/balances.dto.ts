import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsInt, IsString, Matches, Max, Min, ValidateIf } from 'class-validator';
import { isAtomicString } from '@mp/money';
import { Satisfies } from '@mp/platform';
import { normalizePayer } from '../billing/subscription-lifecycle.service';
import { PAYER_PATTERN } from '../billing/subscriptions.dto';
import { ASSET_REASON, isAsset, toAsset } from '../http/fields';

/** The prepaid-balance API's DTOs, checked by the global validation pipe: a bad or unknown member is a 400 naming it, and nothing is written. */

const Optional = () => ValidateIf((_object, value) => value !== undefined);
const REQUIRED = { message: 'is required' };

const PAYER_REASON = 'must be the payer: an 0x address, or the Stripe payer, up to 200 letters, digits or _ : . @ -';
/** Addresses compare by their bytes: one balance per payer whatever the case it is written in. */
const toPayer = ({ value }: { value: unknown }) => (typeof value === 'string' ? normalizePayer(value) : value);
const KEY_PATTERN = /^[A-Za-z0-9_:.-]{1,128}$/;
const KEY_REASON = 'must be 1 to 128 letters, digits or _ : . -';
const REFERENCE_PATTERN = /^[A-Za-z0-9_:.-]{1,200}$/;
const REFERENCE_REASON = "must be the funding payment's reference (a transaction hash, a Stripe pi_…), up to 200 letters, digits or _ : . -";
const MAX_HOLD_SECONDS = 86_400;

const isPositiveAtomic = (value: unknown) => isAtomicString(value) && value !== '0';
const POSITIVE_REASON = 'must be a decimal string of atomic units greater than 0, e.g. "1500000"';
const ATOMIC_REASON = 'must be a decimal string of atomic units, e.g. "1500000" (0 releases the hold)';

class PayerAndAsset {
  @ApiProperty({
    description: 'the payer: an 0x address (compared case-insensitively) or the Stripe payer',
    example: '0x2b5ad5c4795c026514f8317c7a215e218dccd6cf',
  })
  @Transform(toPayer)
  @Matches(PAYER_PATTERN, { message: PAYER_REASON })
  @IsString({ message: PAYER_REASON })
  @IsDefined(REQUIRED)
  payer!: string;

  @ApiProperty({ description: 'the ledger asset of the balance', example: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913' })
  @Transform(toAsset)
  @Satisfies(isAsset, ASSET_REASON)
  @IsDefined(REQUIRED)
  asset!: string;
}

/** GET /balances/{payer}?asset= */
export class BalancePath {
  @ApiProperty({ description: 'the payer', example: '0x2b5ad5c4795c026514f8317c7a215e218dccd6cf' })
  @Transform(toPayer)
  @Matches(PAYER_PATTERN, { message: PAYER_REASON })
  @IsString({ message: PAYER_REASON })
  payer!: string;
}

export class BalanceQuery {
  @ApiProperty({ description: 'the ledger asset', example: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913' })
  @Transform(toAsset)
  @Satisfies(isAsset, ASSET_REASON)
  @IsDefined(REQUIRED)
  asset!: string;
}

/** POST /balances/top-ups */
export class TopUpDto extends PayerAndAsset {
  @ApiProperty({ description: 'atomic units the payment added, > 0', example: '5000000' })
  @Satisfies(isPositiveAtomic, POSITIVE_REASON)
  @IsDefined(REQUIRED)
  amount!: string;

  @ApiProperty({
    description: 'the settled payment that funds it: its transaction hash (x402, MPP on chain) or Stripe PaymentIntent. One payment funds one top-up.',
    example: '0x5f1d0c7d3b1e6a4f2c8b9e0d7a6c5b4a3f2e1d0c9b8a7f6e5d4c3b2a1f0e9d8c',
  })
  @Matches(REFERENCE_PATTERN, { message: REFERENCE_REASON })
  @IsString({ message: REFERENCE_REASON })
  @IsDefined(REQUIRED)
  paymentReference!: string;
}

/** POST /balances/charges */
export class ChargeDto extends PayerAndAsset {
  @ApiProperty({ pattern: KEY_PATTERN.source, description: "the merchant's id for this call: the same id again is the same charge", example: 'call-7f3a' })
  @Matches(KEY_PATTERN, { message: KEY_REASON })
  @IsString({ message: KEY_REASON })
  @IsDefined(REQUIRED)
  id!: string;

  @ApiProperty({ description: 'atomic units the call costs, > 0', example: '1000' })
  @Satisfies(isPositiveAtomic, POSITIVE_REASON)
  @IsDefined(REQUIRED)
  amount!: string;
}

/** POST /balances/holds */
export class HoldDto extends ChargeDto {
  @ApiPropertyOptional({
    type: 'integer',
    minimum: 1,
    maximum: MAX_HOLD_SECONDS,
    default: 300,
    description: 'seconds before an uncaptured hold lapses and is released',
  })
  @Optional()
  @Max(MAX_HOLD_SECONDS, { message: `must be at most ${MAX_HOLD_SECONDS}` })
  @Min(1, { message: 'must be at least 1' })
  @IsInt({ message: 'must be a whole number of seconds' })
  timeoutSeconds?: number;
}

/** /balances/holds/{id}/… */
export class HoldPath {
  @ApiProperty({ pattern: KEY_PATTERN.source, description: "the hold's id, as the merchant chose it" })
  @Matches(KEY_PATTERN, { message: KEY_REASON })
  @IsString({ message: KEY_REASON })
  id!: string;
}

/** POST /balances/holds/{id}/capture */
export class CaptureDto {
  @ApiProperty({ description: 'atomic units the call did cost, at most the hold; the rest is released (0 releases it all)', example: '740' })
  @Satisfies(isAtomicString, ATOMIC_REASON)
  @IsDefined(REQUIRED)
  amount!: string;
}
