import { Inject, Injectable, type PipeTransform } from '@nestjs/common';
import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ArrayMaxSize, IsArray, IsDefined, IsIn, IsInt, IsString, Length, Max, Min, ValidateIf } from 'class-validator';
import { isAtomicString } from '@mp/money';
import {
  ACCOUNT_FLAG_NAMES,
  AccountFlag,
  encodeFlags,
  normalizeAsset,
  parseLedgerId,
  TRANSFER_FLAG_NAMES,
  TransferFlag,
  type AccountFlagName,
  type AccountInput,
  type NormalBalance,
  type TransferFlagName,
  type TransferInput,
} from '@mp/ledger';
import { Satisfies, validateArrayBody } from '@mp/platform';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { ASSET_REASON, CODE_REASON, isAsset, isLedgerId, LEDGER_ID_REASON } from './fields';

/**
 * The batch bodies of POST /accounts and /transfers: a JSON array of 1 to LEDGER_BATCH_MAX of these DTOs. Anything
 * malformed (types, formats, unknown members or flags) is a 400 naming the field (`[3].amount`), and nothing of the
 * request is applied; values that are well formed but break a ledger rule (a zero amount, an unknown account, a
 * limit) are answered per event with TigerBeetle's result codes instead.
 */

// class-validator checks a property's rules from its last decorator up, and the pipe reports only the first rule a
// field breaks: so the most basic rule (present, then the type) is written last, right above the property.

/** Absent is fine, null is not: IsOptional would let `"amount": null` through. */
const Optional = () => ValidateIf((_object, value) => value !== undefined);
const REQUIRED = { message: 'is required' };
const REFERENCE_REASON = 'must be a string of 1 to 256 characters';
const TIMEOUT_MAX = 2 ** 31 - 1;

const amountReason = (value: unknown) =>
  typeof value !== 'string'
    ? 'must be a decimal string of atomic units, e.g. "1500000"'
    : value.startsWith('-')
      ? 'must not be negative: to move money the other way, swap debitAccountId and creditAccountId'
      : 'must be a whole number of atomic units in decimal, e.g. "1500000" (no sign, decimal point or exponent; at most 2^256-1)';

const flagsReason = (names: readonly string[]) => `must be a list of flags out of ${names.join(', ')}`;

export class CreateAccountDto {
  @ApiProperty({ description: 'a UUID, or a 128-bit unsigned integer in decimal; chosen by the caller, so a retry reuses it' })
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  @IsDefined(REQUIRED)
  id!: string;

  @ApiProperty({ description: 'CAIP-19-like asset id', example: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913' })
  @Satisfies(isAsset, ASSET_REASON)
  @IsDefined(REQUIRED)
  asset!: string;

  @ApiProperty({ type: 'integer', minimum: 0, maximum: 65_535, description: "the merchant's own account code" })
  @Max(65_535, { message: CODE_REASON })
  @Min(0, { message: CODE_REASON })
  @IsInt({ message: CODE_REASON })
  @IsDefined(REQUIRED)
  code!: number;

  @ApiPropertyOptional({ enum: ACCOUNT_FLAG_NAMES, isArray: true, default: [] })
  @Optional()
  @IsIn(ACCOUNT_FLAG_NAMES, { each: true, message: flagsReason(ACCOUNT_FLAG_NAMES) })
  @ArrayMaxSize(ACCOUNT_FLAG_NAMES.length, { message: flagsReason(ACCOUNT_FLAG_NAMES) })
  @IsArray({ message: flagsReason(ACCOUNT_FLAG_NAMES) })
  flags?: AccountFlagName[];

  @ApiPropertyOptional({ enum: ['credit', 'debit'], description: 'default: debit with credits_must_not_exceed_debits, credit otherwise' })
  @Optional()
  @IsIn(['credit', 'debit'], { message: 'must be credit or debit' })
  normalBalance?: NormalBalance;

  @ApiPropertyOptional({ minLength: 1, maxLength: 256 })
  @Optional()
  @Length(1, 256, { message: REFERENCE_REASON })
  @IsString({ message: REFERENCE_REASON })
  reference?: string;
}

/** Members left out are TigerBeetle's zero values: a post or void inherits the pending transfer's accounts, asset and code. */
export class CreateTransferDto {
  @ApiProperty({ description: 'a UUID, or a 128-bit unsigned integer in decimal; chosen by the caller, so a retry reuses it' })
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  @IsDefined(REQUIRED)
  id!: string;

  @ApiPropertyOptional({ description: 'the account debited' })
  @Optional()
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  debitAccountId?: string;

  @ApiPropertyOptional({ description: 'the account credited' })
  @Optional()
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  creditAccountId?: string;

  @ApiPropertyOptional({ description: 'atomic units in decimal; a post without it posts the whole pending amount', example: '1500000' })
  @Optional()
  @Satisfies(isAtomicString, amountReason)
  amount?: string;

  @ApiPropertyOptional({ description: 'the pending transfer a post or void resolves' })
  @Optional()
  @Satisfies(isLedgerId, LEDGER_ID_REASON)
  pendingId?: string;

  @ApiPropertyOptional({ description: "the accounts' asset" })
  @Optional()
  @Satisfies(isAsset, ASSET_REASON)
  asset?: string;

  @ApiPropertyOptional({ type: 'integer', minimum: 0, maximum: 65_535 })
  @Optional()
  @Max(65_535, { message: CODE_REASON })
  @Min(0, { message: CODE_REASON })
  @IsInt({ message: CODE_REASON })
  code?: number;

  @ApiPropertyOptional({ enum: TRANSFER_FLAG_NAMES, isArray: true, default: [] })
  @Optional()
  @IsIn(TRANSFER_FLAG_NAMES, { each: true, message: flagsReason(TRANSFER_FLAG_NAMES) })
  @ArrayMaxSize(TRANSFER_FLAG_NAMES.length, { message: flagsReason(TRANSFER_FLAG_NAMES) })
  @IsArray({ message: flagsReason(TRANSFER_FLAG_NAMES) })
  flags?: TransferFlagName[];

  @ApiPropertyOptional({
    type: 'integer',
    minimum: 0,
    maximum: TIMEOUT_MAX,
    description: 'seconds a pending transfer holds its amount; 0: until posted or voided',
  })
  @Optional()
  @Max(TIMEOUT_MAX, { message: `must be an integer from 0 to ${TIMEOUT_MAX}` })
  @Min(0, { message: `must be an integer from 0 to ${TIMEOUT_MAX}` })
  @IsInt({ message: `must be an integer from 0 to ${TIMEOUT_MAX}` })
  timeout?: number;

  @ApiPropertyOptional({ minLength: 1, maxLength: 256 })
  @Optional()
  @Length(1, 256, { message: REFERENCE_REASON })
  @IsString({ message: REFERENCE_REASON })
  reference?: string;
}

// The DTOs are checked as they came (validateArrayBody): ids and assets take their stored forms here.

export function toAccountInput({ id, asset, code, flags = [], normalBalance, reference }: CreateAccountDto): AccountInput {
  return {
    id: parseLedgerId(id)!,
    asset: normalizeAsset(asset)!,
    code,
    flags: encodeFlags(flags, AccountFlag),
    ...(normalBalance !== undefined && { normalBalance }),
    ...(reference !== undefined && { reference }),
  };
}

export function toTransferInput(transfer: CreateTransferDto): TransferInput {
  const { id, debitAccountId, creditAccountId, amount, pendingId, asset, code, flags = [], timeout, reference } = transfer;
  return {
    id: parseLedgerId(id)!,
    ...(debitAccountId !== undefined && { debitAccountId: parseLedgerId(debitAccountId)! }),
    ...(creditAccountId !== undefined && { creditAccountId: parseLedgerId(creditAccountId)! }),
    ...(amount !== undefined && { amount: BigInt(amount) }),
    ...(pendingId !== undefined && { pendingId: parseLedgerId(pendingId)! }),
    ...(asset !== undefined && { asset: normalizeAsset(asset)! }),
    ...(code !== undefined && { code }),
    flags: encodeFlags(flags, TransferFlag),
    ...(timeout !== undefined && { timeout }),
    ...(reference !== undefined && { reference }),
  };
}

/** `@Body(AccountBatchPipe)`: the batch as the ledger's inputs, at most LEDGER_BATCH_MAX. */
@Injectable()
export class AccountBatchPipe implements PipeTransform<unknown, AccountInput[]> {
  constructor(@Inject(LEDGER_CONFIG) private readonly config: LedgerConfig) {}

  transform(body: unknown): AccountInput[] {
    return validateArrayBody(CreateAccountDto, body, { max: this.config.batchMax, what: 'accounts' }).map(toAccountInput);
  }
}

/** `@Body(TransferBatchPipe)`: the batch as the ledger's inputs, at most LEDGER_BATCH_MAX. */
@Injectable()
export class TransferBatchPipe implements PipeTransform<unknown, TransferInput[]> {
  constructor(@Inject(LEDGER_CONFIG) private readonly config: LedgerConfig) {}

  transform(body: unknown): TransferInput[] {
    return validateArrayBody(CreateTransferDto, body, { max: this.config.batchMax, what: 'transfers' }).map(toTransferInput);
  }
}
