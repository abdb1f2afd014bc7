import { Inject, Injectable, type PipeTransform } from '@nestjs/common';
import { z } from 'zod';
import { isAtomicString } from '@mp/money';
import {
  ACCOUNT_FLAG_NAMES,
  AccountFlag,
  encodeFlags,
  normalizeAsset,
  parseLedgerId,
  TRANSFER_FLAG_NAMES,
  TransferFlag,
  type AccountInput,
  type TransferInput,
} from '@mp/ledger';
import { ProblemError } from '@mp/platform';
import { LEDGER_CONFIG, type LedgerConfig } from '../ledger.config';
import { ASSET_REASON, LEDGER_ID_REASON } from './fields';

/**
 * The batch bodies of POST /accounts and /transfers (query strings and ids are DTO classes, queries.dto.ts). Anything
 * malformed (types, formats, unknown members or flags) is a 400 naming the field (`[3].amount`), and nothing of the
 * request is applied; values that are well formed but break a ledger rule (a zero amount, an unknown account, a limit)
 * are answered per event with TigerBeetle's result codes instead.
 *
 * Hand-written with zod rather than class-validator DTOs, for speed: they are the ledger's measured write path, and
 * class-validator DTOs for the items (tried, with the items checked untransformed) cost 4 µs more ledger CPU per transfer
 * in `npm run bench:ledger`, batches of 1000: 0.043 against 0.039 ms, 15.5k against 17.5k transfers/s. The OpenAPI
 * document describes the items from these schemas (LEDGER_BATCH_SCHEMAS), so the two cannot differ.
 */

/** Missing members read "is required" rather than zod's "expected string, received undefined". */
const PARSE = { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : undefined) };

const ledgerId = z.string().transform((value, ctx) => parseLedgerId(value) ?? fail(ctx, value, LEDGER_ID_REASON));

const asset = z.string().transform((value, ctx) => normalizeAsset(value) ?? fail(ctx, value, ASSET_REASON));

const amount = z.string({ error: 'must be a decimal string of atomic units, e.g. "1500000"' }).transform((value, ctx) => {
  if (value.startsWith('-')) return fail(ctx, value, 'must not be negative: to move money the other way, swap debitAccountId and creditAccountId');
  return isAtomicString(value)
    ? BigInt(value)
    : fail(ctx, value, 'must be a whole number of atomic units in decimal, e.g. "1500000" (no sign, decimal point or exponent; at most 2^256-1)');
});

const code = z.number().int().min(0).max(65_535);
const reference = z.string().min(1).max(256);

/** An item that is not an object: the same words as the DTO bodies'. */
const ITEM = { error: (issue: { code?: string }) => (issue.code === 'invalid_type' ? 'must be a JSON object' : undefined) };

const accountSchema = z.strictObject(
  {
    id: ledgerId.describe('a UUID, or a 128-bit unsigned integer in decimal; chosen by the caller, so a retry reuses it'),
    asset: asset.describe('e.g. eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913 or stripe/usd'),
    code,
    flags: z
      .array(z.enum(ACCOUNT_FLAG_NAMES as [string, ...string[]]))
      .max(ACCOUNT_FLAG_NAMES.length)
      .default([]),
    normalBalance: z.enum(['credit', 'debit']).optional().describe('default: debit with credits_must_not_exceed_debits, credit otherwise'),
    reference: reference.optional(),
  },
  ITEM,
);

const transferSchema = z.strictObject(
  {
    id: ledgerId.describe('a UUID, or a 128-bit unsigned integer in decimal; chosen by the caller, so a retry reuses it'),
    debitAccountId: ledgerId.optional().describe('the account debited'),
    creditAccountId: ledgerId.optional().describe('the account credited'),
    amount: amount.optional().describe('atomic units in decimal, e.g. "1500000"; a post without it posts the whole pending amount'),
    pendingId: ledgerId.optional().describe('the pending transfer a post or void resolves'),
    asset: asset.optional(),
    code: code.optional(),
    flags: z
      .array(z.enum(TRANSFER_FLAG_NAMES as [string, ...string[]]))
      .max(TRANSFER_FLAG_NAMES.length)
      .default([]),
    timeout: z
      .number()
      .int()
      .min(0)
      .max(2 ** 31 - 1)
      .optional()
      .describe('seconds a pending transfer holds its amount; 0: until posted or voided'),
    reference: reference.optional(),
  },
  ITEM,
);

/** The items of the two batches, for the OpenAPI document (`zodComponentSchemas`). */
export const LEDGER_BATCH_SCHEMAS = {
  CreateAccount: { schema: accountSchema, description: 'One account of a POST /accounts batch (TigerBeetle create_accounts).' },
  CreateTransfer: {
    schema: transferSchema,
    description:
      "One transfer of a POST /transfers batch (TigerBeetle create_transfers). Members left out are TigerBeetle's zero values: a post or void inherits the pending transfer's accounts, asset and code; a post without amount posts the whole pending amount.",
  },
};

export function parseAccounts(body: unknown, max: number): AccountInput[] {
  return parse(batch(accountSchema, max, 'accounts'), body).map((a) => ({
    ...a,
    flags: encodeFlags(a.flags as (keyof typeof AccountFlag)[], AccountFlag),
  }));
}

export function parseTransfers(body: unknown, max: number): TransferInput[] {
  return wellFormedTransfers(body, max) ?? parseTransfersBySchema(body, max);
}

/** The batch by its schema: what every batch would get without the hand-written check. */
export function parseTransfersBySchema(body: unknown, max: number): TransferInput[] {
  return parse(batch(transferSchema, max, 'transfers'), body).map((t) => ({
    ...t,
    flags: encodeFlags(t.flags as (keyof typeof TransferFlag)[], TransferFlag),
  }));
}

/**
 * The batch checked by hand, with the schema's own conversions: the inputs the schema would give, or undefined when
 * the schema must decide (and name what is wrong). Hand-written for speed alone: the schema's parse cost 7.8 µs per
 * transfer, about a sixth of the ledger's CPU per transfer in batches of 100, this 0.7 µs (bench/README.md, "The batch
 * checked by hand"); requests.spec.ts holds the two equal over generated batches and their mutations.
 */
export function wellFormedTransfers(body: unknown, max: number): TransferInput[] | undefined {
  if (!isPlainArray(body) || body.length < 1 || body.length > max) return undefined;
  const inputs: TransferInput[] = [];
  for (let i = 0; i < body.length; i++) {
    const input = wellFormedTransfer(body[i]);
    if (!input) return undefined;
    inputs.push(input);
  }
  return inputs;
}

const TRANSFER_KEYS = new Set(['id', 'debitAccountId', 'creditAccountId', 'amount', 'pendingId', 'asset', 'code', 'flags', 'timeout', 'reference']);
const TRANSFER_FLAGS: ReadonlySet<string> = new Set(TRANSFER_FLAG_NAMES);

function wellFormedTransfer(item: unknown): TransferInput | undefined {
  if (typeof item !== 'object' || item === null || Object.getPrototypeOf(item) !== Object.prototype) return undefined;
  const t = item as Record<string, unknown>;
  for (const key in t) if (!TRANSFER_KEYS.has(key) || t[key] === undefined) return undefined;
  const out: Record<string, unknown> = {};
  for (const key of ['id', 'debitAccountId', 'creditAccountId', 'pendingId'] as const) {
    if (key !== 'id' && !(key in t)) continue;
    const id = parseLedgerId(t[key]);
    if (id === undefined) return undefined;
    out[key] = id;
  }
  if ('amount' in t) {
    if (!isAtomicString(t.amount)) return undefined;
    out.amount = BigInt(t.amount);
  }
  if ('asset' in t) {
    const normalized = normalizeAsset(t.asset);
    if (normalized === undefined) return undefined;
    out.asset = normalized;
  }
  if ('code' in t) {
    if (!isIntegerIn(t.code, 0, 65_535)) return undefined;
    out.code = t.code;
  }
  let flags = 0;
  if ('flags' in t) {
    const names = t.flags;
    if (!isPlainArray(names) || names.length > TRANSFER_FLAG_NAMES.length) return undefined;
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      if (typeof name !== 'string' || !TRANSFER_FLAGS.has(name)) return undefined;
      flags |= TransferFlag[name as keyof typeof TransferFlag];
    }
  }
  out.flags = flags;
  if ('timeout' in t) {
    if (!isIntegerIn(t.timeout, 0, 2 ** 31 - 1)) return undefined;
    out.timeout = t.timeout;
  }
  if ('reference' in t) {
    if (typeof t.reference !== 'string' || t.reference.length < 1 || t.reference.length > 256) return undefined;
    out.reference = t.reference;
  }
  return out as unknown as TransferInput;
}

/** An array with no holes and nothing beside its elements (the schema's copy would read a hole, drop the rest). */
function isPlainArray(value: unknown): value is unknown[] {
  return Array.isArray(value) && Object.getPrototypeOf(value) === Array.prototype && Object.keys(value).length === value.length;
}

function isIntegerIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}

const batches = new Map<string, z.ZodType>();

/** An array of 1 to `max` items; built once per size (building a zod schema costs more than using it). */
function batch<S extends z.ZodType>(item: S, max: number, what: string): z.ZodArray<S> {
  const key = `${what}/${max}`;
  let schema = batches.get(key);
  if (!schema) {
    schema = z
      .array(item, { error: `must be a JSON array of ${what}` })
      .min(1, `must hold 1 to ${max} ${what}`)
      .max(max, `must hold 1 to ${max} ${what}`);
    batches.set(key, schema);
  }
  return schema as z.ZodArray<S>;
}

function parse<S extends z.ZodType>(schema: S, body: unknown): z.infer<S> {
  const parsed = schema.safeParse(body, PARSE);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.slice(0, 50).map((i) => ({
    name:
      (i.code === 'unrecognized_keys' ? [...i.path, i.keys.join(', ')] : i.path)
        .map((p, k) => (typeof p === 'number' ? `[${p}]` : k ? `.${String(p)}` : String(p)))
        .join('') || '(body)',
    reason: i.code === 'unrecognized_keys' ? 'unknown member' : i.message,
  }));
  throw invalid(issues, 'field');
}

function invalid(invalidParams: { name: string; reason: string }[], what: string): ProblemError {
  return new ProblemError('validation_failed', `invalid ${what}(s): ${invalidParams.map((p) => p.name).join(', ')}`, { invalidParams });
}

function fail(ctx: z.RefinementCtx, input: unknown, message: string): never {
  ctx.addIssue({ code: 'custom', message, input });
  return z.NEVER as never;
}

/** `@Body(AccountBatchPipe)`: the batch as the ledger's inputs, at most LEDGER_BATCH_MAX. */
@Injectable()
export class AccountBatchPipe implements PipeTransform<unknown, AccountInput[]> {
  constructor(@Inject(LEDGER_CONFIG) private readonly config: LedgerConfig) {}

  transform(body: unknown): AccountInput[] {
    return parseAccounts(body, this.config.batchMax);
  }
}

/** `@Body(TransferBatchPipe)`: the batch as the ledger's inputs, at most LEDGER_BATCH_MAX. */
@Injectable()
export class TransferBatchPipe implements PipeTransform<unknown, TransferInput[]> {
  constructor(@Inject(LEDGER_CONFIG) private readonly config: LedgerConfig) {}

  transform(body: unknown): TransferInput[] {
    return parseTransfers(body, this.config.batchMax);
  }
}
