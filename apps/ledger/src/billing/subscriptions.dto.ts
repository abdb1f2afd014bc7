import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsIn, IsOptional, IsString, Matches, ValidateIf } from 'class-validator';
import { SUBSCRIPTION_STATES, type SubscriptionState } from '@mp/billing';
import { Satisfies } from '@mp/platform';
import { isLedgerId, isTime, LEDGER_ID_REASON, pageOf, TIME_REASON, toLedgerId } from '../http/fields';
import { CANCEL_AT, type CancelAt } from './subscription';

/** The subscription API's path, body and query DTOs, checked by the global validation pipe (a bad member is a 400 naming it; nothing changes). */

const Optional = () => ValidateIf((_object, value) => value !== undefined);

export const SUBSCRIPTION_ID_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;
const SUBSCRIPTION_ID_REASON = 'must be a subscription id: 16 to 64 base64url characters';
const SIGNATURE_PATTERN = /^0x[0-9a-fA-F]{130}$/;
const SIGNATURE_REASON = 'must be a 65-byte EIP-191 signature in 0x hex';
const DEADLINE_PATTERN = /^[1-9][0-9]{0,11}$/;
const DEADLINE_REASON = 'must be a unix time in whole seconds, in decimal';
const REASON_REASON = 'must be a string of 1 to 500 characters';
/** A payer as the ledger names it: an 0x address, or a Stripe payer (also the prepaid balances' payers). */
export const PAYER_PATTERN = /^[A-Za-z0-9_:.@-]{1,200}$/;
const PAYER_REASON = 'must be the payer as the subscription names it (an 0x address, or the Stripe payer), up to 200 characters';
const PRODUCT_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._:/-]{0,127}$/;
const PRODUCT_REASON = 'must be 1 to 128 letters, digits or . _ : / -, starting with a letter or digit';

/** /subscriptions/{id}… */
export class SubscriptionIdPath {
  @ApiProperty({ pattern: SUBSCRIPTION_ID_PATTERN.source, description: "the facilitator's subscriptionId (the MPP receipt's)" })
  @Matches(SUBSCRIPTION_ID_PATTERN, { message: SUBSCRIPTION_ID_REASON })
  @IsString({ message: SUBSCRIPTION_ID_REASON })
  id!: string;
}

/** The payer's proof: an EIP-191 signature by the subscription's payer over the route's message, valid until `deadline`. */
class PayerProof {
  @ApiPropertyOptional({ pattern: SIGNATURE_PATTERN.source, description: "the payer's EIP-191 signature (personal_sign) over the message; with `deadline`" })
  @Optional()
  @Matches(SIGNATURE_PATTERN, { message: SIGNATURE_REASON })
  @IsString({ message: SIGNATURE_REASON })
  signature?: string;

  @ApiPropertyOptional({ type: 'string', description: 'unix seconds, in the future and at most 10 minutes ahead; with `signature`' })
  @Optional()
  @Matches(DEADLINE_PATTERN, { message: DEADLINE_REASON })
  @IsString({ message: DEADLINE_REASON })
  deadline?: string;
}

/** POST /subscriptions/{id}/cancel: by the merchant (API key) or the payer (signature + deadline). */
export class CancelSubscriptionDto extends PayerProof {
  @ApiPropertyOptional({
    enum: CANCEL_AT,
    default: 'period_end',
    description: 'period_end: served to the end of the paid period; immediately: access ends now',
  })
  @Optional()
  @IsIn(CANCEL_AT, { message: `must be one of ${CANCEL_AT.join(', ')}` })
  at?: CancelAt;

  @ApiPropertyOptional({ minLength: 1, maxLength: 500, description: 'why, recorded with the cancel and sent in the webhook' })
  @Optional()
  @Matches(/^.{1,500}$/su, { message: REASON_REASON })
  @IsString({ message: REASON_REASON })
  reason?: string;
}

/** GET /subscriptions/{id}/status: the payer's proof, required. */
export class SubscriptionStatusQuery {
  @ApiProperty({ pattern: SIGNATURE_PATTERN.source, description: "the payer's EIP-191 signature over `mp-subscription:status:<id>:<deadline>`" })
  @Matches(SIGNATURE_PATTERN, { message: SIGNATURE_REASON })
  @IsString({ message: SIGNATURE_REASON })
  signature!: string;

  @ApiProperty({ type: 'string', description: 'unix seconds, in the future and at most 10 minutes ahead' })
  @Matches(DEADLINE_PATTERN, { message: DEADLINE_REASON })
  @IsString({ message: DEADLINE_REASON })
  deadline!: string;
}

/** GET /subscriptions */
export class SubscriptionListQuery extends pageOf(1000) {
  @ApiPropertyOptional({ description: 'only subscriptions of this payer (an address in any case)' })
  @IsOptional()
  @Matches(PAYER_PATTERN, { message: PAYER_REASON })
  @IsString({ message: PAYER_REASON })
  payer?: string;

  @ApiPropertyOptional({ enum: SUBSCRIPTION_STATES, description: 'only subscriptions in this state' })
  @IsOptional()
  @IsIn(SUBSCRIPTION_STATES, { message: `must be one of ${SUBSCRIPTION_STATES.join(', ')}` })
  state?: SubscriptionState;

  @ApiPropertyOptional({ description: 'only subscriptions bound to this plan' })
  @IsOptional()
  @Transform(toLedgerId)
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  plan?: string;
}

/** GET /entitlements */
export class EntitlementQuery {
  @ApiProperty({ description: 'the payer: an address (any case), or the Stripe payer' })
  @Matches(PAYER_PATTERN, { message: PAYER_REASON })
  @IsString({ message: PAYER_REASON })
  payer!: string;

  @ApiProperty({ description: "the plan's product key" })
  @Matches(PRODUCT_PATTERN, { message: PRODUCT_REASON })
  @IsString({ message: PRODUCT_REASON })
  product!: string;

  @ApiPropertyOptional({ format: 'date-time', description: "the time asked about; default now (the ledger's clock)" })
  @IsOptional()
  @Satisfies(isTime, TIME_REASON)
  at?: string;
}
