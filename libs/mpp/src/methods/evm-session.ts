import { receiveWithAuthorizationTypes } from '@mp/money';
import { z } from 'zod';
import { encodeAbiParameters, getAddress, isAddress, keccak256, zeroAddress, type Address, type Hex } from 'viem';
import type { Challenge } from '../challenge';
import { fail, ok, type ProblemCode, type Result } from '../problems';
import { evmSource } from './evm-charge';

/**
 * Method `evm`, intent `session` (draft-evm-session-00, recurring-and-streaming.md §2): a unidirectional payment channel
 * in our escrow (contracts/EvmPaymentChannelEscrow.sol), paid with cumulative EIP-712 vouchers. Pure codecs only: the
 * request, the four credential actions, the voucher typed data, the receipt, the SSE `payment-need-voucher` event, and
 * the checks that need neither a chain nor a key.
 */
export const SESSION_INTENT = 'session';

/** The credential types this profile knows; our escrow implements `hash` (direct open/topUp) and `authorization`. */
export const SESSION_CREDENTIAL_TYPES = ['permit2', 'authorization', 'hash'] as const;
export type SessionCredentialType = (typeof SESSION_CREDENTIAL_TYPES)[number];
/** What our escrow implements, so all a challenge may advertise (Permit2 is not implemented: never advertised). */
export const IMPLEMENTED_SESSION_CREDENTIAL_TYPES: readonly SessionCredentialType[] = ['authorization', 'hash'];

export const MAX_UINT128 = (1n << 128n) - 1n;
/** The escrow's grace period between requestClose and withdraw; a server refuses an escrow under the spec's minimum. */
export const MIN_CLOSE_GRACE_PERIOD_SECONDS = 600n;

/** The voucher's EIP-712 domain name and version. */
export const VOUCHER_DOMAIN = { name: 'EVM Payment Channel', version: '1' } as const;

/** Secp256k1 half order: a signature's s above it is the malleable twin of a canonical one. */
export const SECP256K1_HALF_ORDER = 0x7fffffffffffffffffffffffffffffff5d576e7357a4501ddfe92f46681b20a0n;

const atomic = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a decimal string of atomic units');
const uint128 = atomic.refine((value) => BigInt(value) <= MAX_UINT128, 'must fit in uint128');
const seconds = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a decimal string of unix seconds');
const address = z.string().refine((value) => isAddress(value, { strict: false }), 'must be a 0x-prefixed 20-byte address');
const bytes32 = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x-prefixed 32 bytes')
  .transform((value) => value.toLowerCase() as Hex);
/** 65-byte r‖s‖v; EIP-2098 compact signatures are neither produced nor accepted. */
const signature65 = z
  .string()
  .regex(/^0x[0-9a-fA-F]{130}$/, 'must be a 65-byte r||s||v signature (0x + 130 hex)')
  .transform((value) => value.toLowerCase() as Hex);
const anySignature = z
  .string()
  .regex(/^0x([0-9a-fA-F]{2}){65,2048}$/, 'must be 0x-prefixed signature bytes')
  .transform((value) => value.toLowerCase() as Hex);

export const evmSessionRequestSchema = z.strictObject({
  /** price per unit, atomic units */
  amount: atomic.refine((value) => value !== '0', 'must be positive'),
  currency: address,
  recipient: address,
  unitType: z.string().min(1).max(64).optional(),
  suggestedDeposit: uint128.optional(),
  description: z.string().max(1024).optional(),
  externalId: z.string().max(256).optional(),
  methodDetails: z.strictObject({
    chainId: z.number().int().positive(),
    escrowContract: address,
    channelId: bytes32.optional(),
    minVoucherDelta: atomic.optional(),
    feePayer: z.boolean().optional(),
    credentialTypes: z
      .array(z.enum(SESSION_CREDENTIAL_TYPES))
      .min(1)
      .refine((types) => new Set(types).size === types.length, 'must not repeat a type')
      .optional(),
    permit2Contract: address.optional(),
  }),
});

export type EvmSessionRequest = z.infer<typeof evmSessionRequestSchema>;

/** The request as issued: checksummed addresses and the defaults (`["hash"]`, minVoucherDelta "0") made explicit. */
export function normalizeEvmSessionRequest(request: EvmSessionRequest): EvmSessionRequest {
  const d = request.methodDetails;
  return {
    ...request,
    currency: getAddress(request.currency),
    recipient: getAddress(request.recipient),
    methodDetails: {
      ...d,
      escrowContract: getAddress(d.escrowContract),
      minVoucherDelta: d.minVoucherDelta ?? '0',
      credentialTypes: d.credentialTypes ?? ['hash'],
      ...(d.permit2Contract !== undefined && { permit2Contract: getAddress(d.permit2Contract) }),
    },
  };
}

/** Why a request is not an evm session request this facilitator can serve, one line per problem. */
export function evmSessionRequestProblems(request: unknown): string[] {
  const parsed = evmSessionRequestSchema.safeParse(request);
  if (!parsed.success) return parsed.error.issues.map((i) => `request.${i.path.join('.')}: ${i.message}`);
  const unimplemented = (parsed.data.methodDetails.credentialTypes ?? []).filter((t) => !IMPLEMENTED_SESSION_CREDENTIAL_TYPES.includes(t));
  return unimplemented.length > 0 ? [`request.methodDetails.credentialTypes: the escrow does not implement ${unimplemented.join(', ')}`] : [];
}

// ---- ids, nonces, typed data -------------------------------------------------------------------------------------

export interface ChannelTerms {
  payer: Address;
  payee: Address;
  token: Address;
  salt: Hex;
  /** zero address = the payer signs vouchers */
  authorizedSigner?: Address;
}

/** keccak256(abi.encode(payer, payee, token, salt, authorizedSigner, escrow, chainId)), as the escrow computes it. */
export function computeChannelId(terms: ChannelTerms, escrow: Address, chainId: number): Hex {
  return keccak256(
    encodeAbiParameters(
      [{ type: 'address' }, { type: 'address' }, { type: 'address' }, { type: 'bytes32' }, { type: 'address' }, { type: 'address' }, { type: 'uint256' }],
      [terms.payer, terms.payee, terms.token, terms.salt, terms.authorizedSigner ?? zeroAddress, escrow, BigInt(chainId)],
    ),
  );
}

/** The EIP-3009 nonce of a relayed open: keccak256(abi.encode(from, payee, token, salt, authorizedSigner)). */
export function openAuthorizationNonce(terms: ChannelTerms): Hex {
  return keccak256(
    encodeAbiParameters(
      [{ type: 'address' }, { type: 'address' }, { type: 'address' }, { type: 'bytes32' }, { type: 'address' }],
      [terms.payer, terms.payee, terms.token, terms.salt, terms.authorizedSigner ?? zeroAddress],
    ),
  );
}

/** The EIP-3009 nonce of a relayed top-up: keccak256(abi.encode(channelId, additionalDeposit, from, topUpSalt)). */
export function topUpAuthorizationNonce(channelId: Hex, additionalDeposit: bigint, from: Address, topUpSalt: Hex): Hex {
  return keccak256(
    encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint128' }, { type: 'address' }, { type: 'bytes32' }], [channelId, additionalDeposit, from, topUpSalt]),
  );
}

export const voucherTypes = {
  Voucher: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'cumulativeAmount', type: 'uint128' },
  ],
} as const;

/** The typed data of a voucher, for signing (client) and recovery (server): the domain is bound to one escrow. */
export function voucherTypedData(escrow: { chainId: number; escrowContract: Address }, voucher: { channelId: Hex; cumulativeAmount: bigint }) {
  if (voucher.cumulativeAmount < 0n || voucher.cumulativeAmount > MAX_UINT128) throw new RangeError('cumulativeAmount must fit in uint128');
  return {
    domain: { ...VOUCHER_DOMAIN, chainId: escrow.chainId, verifyingContract: getAddress(escrow.escrowContract) },
    types: voucherTypes,
    primaryType: 'Voucher' as const,
    message: { channelId: voucher.channelId, cumulativeAmount: voucher.cumulativeAmount },
  };
}

const payeeAuthorizationFields = [
  { name: 'channelId', type: 'bytes32' },
  { name: 'cumulativeAmount', type: 'uint128' },
  { name: 'nonce', type: 'uint256' },
  { name: 'deadline', type: 'uint256' },
] as const;

/**
 * What a payee signs so that anyone may submit its settle or close (`settleWithAuthorization` /
 * `closeWithAuthorization`): same domain as the voucher; each (payee, channelId, nonce) is usable once, until `deadline`.
 */
export function payeeAuthorizationTypedData(
  kind: 'settle' | 'close',
  escrow: { chainId: number; escrowContract: Address },
  message: { channelId: Hex; cumulativeAmount: bigint; nonce: bigint; deadline: bigint },
) {
  const primaryType = kind === 'settle' ? ('SettleAuthorization' as const) : ('CloseAuthorization' as const);
  return {
    domain: { ...VOUCHER_DOMAIN, chainId: escrow.chainId, verifyingContract: getAddress(escrow.escrowContract) },
    types: { [primaryType]: payeeAuthorizationFields } as Record<typeof primaryType, typeof payeeAuthorizationFields>,
    primaryType,
    message,
  };
}

/** ReceiveWithAuthorization (to = the escrow): what a relayed open or top-up signs, under the token's own domain. */
export function receiveWithAuthorizationTypedData(
  token: { name: string; version: string; chainId: number; address: Address },
  message: { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex },
) {
  return {
    domain: { name: token.name, version: token.version, chainId: token.chainId, verifyingContract: getAddress(token.address) },
    types: receiveWithAuthorizationTypes,
    primaryType: 'ReceiveWithAuthorization' as const,
    message,
  };
}

/** True for a 65-byte signature whose s is in the lower half order (what the escrow accepts). */
export function isLowS(signature: Hex): boolean {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return false;
  return BigInt(`0x${signature.slice(66, 130)}`) <= SECP256K1_HALF_ORDER;
}

// ---- credential payloads ------------------------------------------------------------------------------------------

export const eip3009AuthorizationSchema = z.strictObject({
  from: address,
  to: address,
  value: uint128,
  validAfter: seconds,
  validBefore: seconds,
  nonce: bytes32,
});

const openHash = z.strictObject({
  action: z.literal('open'),
  type: z.literal('hash'),
  channelId: bytes32,
  hash: bytes32,
  cumulativeAmount: uint128,
  signature: signature65,
  salt: bytes32,
  authorizedSigner: address.optional(),
});

const openAuthorization = z.strictObject({
  action: z.literal('open'),
  type: z.literal('authorization'),
  channelId: bytes32,
  authorization: eip3009AuthorizationSchema,
  /** the EIP-3009 signature (the payer may be ERC-1271, so not necessarily 65 bytes) */
  signature: anySignature,
  cumulativeAmount: uint128,
  voucherSignature: signature65,
  salt: bytes32,
  authorizedSigner: address.optional(),
});

const topUpHash = z.strictObject({
  action: z.literal('topUp'),
  type: z.literal('hash'),
  channelId: bytes32,
  hash: bytes32,
  additionalDeposit: uint128,
});

const topUpAuthorization = z.strictObject({
  action: z.literal('topUp'),
  type: z.literal('authorization'),
  channelId: bytes32,
  authorization: eip3009AuthorizationSchema,
  signature: anySignature,
  additionalDeposit: uint128,
  salt: bytes32,
});

/** A relayed deposit carried inside a voucher credential (runs first; if it fails, the whole credential fails). */
const voucherDeposit = z.discriminatedUnion('action', [
  z.strictObject({
    action: z.literal('open'),
    type: z.literal('authorization'),
    authorization: eip3009AuthorizationSchema,
    signature: anySignature,
    salt: bytes32,
    authorizedSigner: address.optional(),
  }),
  z.strictObject({
    action: z.literal('topUp'),
    type: z.literal('authorization'),
    authorization: eip3009AuthorizationSchema,
    signature: anySignature,
    salt: bytes32,
  }),
]);

const voucher = z.strictObject({
  action: z.literal('voucher'),
  channelId: bytes32,
  cumulativeAmount: uint128,
  signature: signature65,
  deposit: voucherDeposit.optional(),
});

const close = z.strictObject({
  action: z.literal('close'),
  channelId: bytes32,
  cumulativeAmount: uint128,
  signature: signature65,
});

export const evmSessionPayloadSchemas = { openHash, openAuthorization, topUpHash, topUpAuthorization, voucher, close } as const;

export type OpenHashPayload = z.infer<typeof openHash>;
export type OpenAuthorizationPayload = z.infer<typeof openAuthorization>;
export type TopUpHashPayload = z.infer<typeof topUpHash>;
export type TopUpAuthorizationPayload = z.infer<typeof topUpAuthorization>;
export type VoucherPayload = z.infer<typeof voucher>;
export type VoucherDeposit = z.infer<typeof voucherDeposit>;
export type ClosePayload = z.infer<typeof close>;
export type EvmSessionPayload = OpenHashPayload | OpenAuthorizationPayload | TopUpHashPayload | TopUpAuthorizationPayload | VoucherPayload | ClosePayload;

/** Parses a payload by its `action` (and `type`), naming the first bad field. Permit2 is refused: we do not implement it. */
export function parseEvmSessionPayload(payload: unknown): Result<EvmSessionPayload> {
  if (typeof payload !== 'object' || payload === null || Array.isArray(payload)) return fail('invalid-payload', 'payload must be a JSON object');
  const { action, type } = payload as { action?: unknown; type?: unknown };
  let schema: z.ZodType<EvmSessionPayload>;
  if (action === 'open' || action === 'topUp') {
    if (type === 'permit2') return fail('invalid-payload', `payload.type: permit2 is not implemented by this escrow`);
    if (type !== 'hash' && type !== 'authorization') return fail('invalid-payload', 'payload.type: must be "hash" or "authorization"');
    schema = action === 'open' ? (type === 'hash' ? openHash : openAuthorization) : type === 'hash' ? topUpHash : topUpAuthorization;
  } else if (action === 'voucher') schema = voucher;
  else if (action === 'close') schema = close;
  else return fail('invalid-payload', 'payload.action: must be one of open, topUp, voucher, close');
  const parsed = schema.safeParse(payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('invalid-payload', `payload.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(parsed.data);
}

// ---- stateless checks -----------------------------------------------------------------------------------------

/** A relayed deposit after its stateless checks: the escrow call's arguments, ready to submit. */
export type CheckedDeposit =
  | {
      action: 'open';
      terms: Required<ChannelTerms>;
      channelId: Hex;
      deposit: bigint;
      validAfter: bigint;
      validBefore: bigint;
      nonce: Hex;
      signature: Hex;
    }
  | {
      action: 'topUp';
      channelId: Hex;
      from: Address;
      additionalDeposit: bigint;
      topUpSalt: Hex;
      validAfter: bigint;
      validBefore: bigint;
      nonce: Hex;
      signature: Hex;
    };

export type CheckedSessionCredential =
  | { action: 'open'; type: 'hash'; channelId: Hex; hash: Hex; terms: Required<ChannelTerms>; cumulativeAmount: bigint; voucherSignature: Hex }
  | { action: 'open'; type: 'authorization'; channelId: Hex; deposit: CheckedDeposit & { action: 'open' }; cumulativeAmount: bigint; voucherSignature: Hex }
  | { action: 'topUp'; type: 'hash'; channelId: Hex; hash: Hex; additionalDeposit: bigint; payer: Address }
  | { action: 'topUp'; type: 'authorization'; channelId: Hex; deposit: CheckedDeposit & { action: 'topUp' } }
  | { action: 'voucher'; channelId: Hex; cumulativeAmount: bigint; voucherSignature: Hex; deposit?: CheckedDeposit }
  | { action: 'close'; channelId: Hex; cumulativeAmount: bigint; voucherSignature: Hex };

export interface EvmSessionCredential {
  request: EvmSessionRequest;
  payload: EvmSessionPayload;
  checked: CheckedSessionCredential;
}

const DID_PKH = /^did:pkh:eip155:(\d+):(0x[0-9a-fA-F]{40})$/;

/** The payer a `did:pkh:eip155:<chainId>:<address>` source names, on the request's chain. */
export function payerFromSource(source: string | undefined, chainId: number): Result<Address> {
  if (source === undefined) return fail('invalid-payload', 'a hash credential needs `source` (did:pkh:eip155:<chainId>:<payer>)');
  const match = DID_PKH.exec(source);
  if (!match) return fail('invalid-payload', `source ${source} is not did:pkh:eip155:<chainId>:<address>`);
  if (Number(match[1]) !== chainId) return fail('verification-failed', `source ${source} is not on chain ${chainId}`);
  return ok(getAddress(match[2]!));
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

/**
 * Everything about an evm session credential that needs neither a chain nor a key: the request and payload shapes,
 * that the credential type is one the challenge advertised, the channel id formula against the terms (payer from
 * `source` for a hash open, `authorization.from` for a relayed one), the EIP-3009 authorization's recipient (the
 * escrow), value and nonce formula, and its time window. Signatures, receipts and channel state are the server's.
 */
export function checkEvmSession(challenge: Challenge, payload: unknown, source: string | undefined, nowSeconds: bigint): Result<EvmSessionCredential> {
  const parsedRequest = evmSessionRequestSchema.safeParse(challenge.request);
  if (!parsedRequest.success) return fail('invalid-challenge', 'the challenge is not an evm session request');
  const request = parsedRequest.data;
  const parsed = parseEvmSessionPayload(payload);
  if (!parsed.ok) return parsed;
  const p = parsed.value;
  const details = request.methodDetails;
  const escrow = getAddress(details.escrowContract);
  const allowed = details.credentialTypes ?? ['hash'];
  const typeOf = (t: SessionCredentialType) =>
    allowed.includes(t) ? ok(t) : fail('verification-failed', `the challenge does not accept ${t} credentials (accepted: ${allowed.join(', ')})`);

  const checkRelayedDeposit = (
    d:
      | { action: 'open'; authorization: z.infer<typeof eip3009AuthorizationSchema>; signature: Hex; salt: Hex; authorizedSigner?: string }
      | { action: 'topUp'; authorization: z.infer<typeof eip3009AuthorizationSchema>; signature: Hex; salt: Hex },
    channelId: Hex,
  ): Result<CheckedDeposit> => {
    const allowedType = typeOf('authorization');
    if (!allowedType.ok) return allowedType;
    const a = d.authorization;
    if (!sameAddress(a.to, escrow)) return fail('verification-failed', `the authorization pays ${getAddress(a.to)}, not the escrow ${escrow}`);
    const validAfter = BigInt(a.validAfter);
    const validBefore = BigInt(a.validBefore);
    if (validAfter >= nowSeconds) return fail('verification-failed', `the authorization is valid only after ${a.validAfter}`);
    if (validBefore <= nowSeconds) return fail('payment-expired', `the authorization expired at ${a.validBefore}`);
    const from = getAddress(a.from);
    if (BigInt(a.value) === 0n) return fail('verification-failed', 'the authorization deposits nothing');
    if (d.action === 'open') {
      const terms: Required<ChannelTerms> = {
        payer: from,
        payee: getAddress(request.recipient),
        token: getAddress(request.currency),
        salt: d.salt,
        authorizedSigner: getAddress(d.authorizedSigner ?? zeroAddress),
      };
      const expectedId = computeChannelId(terms, escrow, details.chainId);
      if (expectedId !== channelId) return fail('verification-failed', `channelId ${channelId} is not the id of these terms (${expectedId})`);
      if (a.nonce !== openAuthorizationNonce(terms))
        return fail('verification-failed', 'the authorization nonce is not keccak256(abi.encode(from, payee, token, salt, authorizedSigner))');
      return ok({ action: 'open', terms, channelId, deposit: BigInt(a.value), validAfter, validBefore, nonce: a.nonce, signature: d.signature });
    }
    if (a.nonce !== topUpAuthorizationNonce(channelId, BigInt(a.value), from, d.salt))
      return fail('verification-failed', 'the authorization nonce is not keccak256(abi.encode(channelId, additionalDeposit, from, topUpSalt))');
    return ok({
      action: 'topUp',
      channelId,
      from,
      additionalDeposit: BigInt(a.value),
      topUpSalt: d.salt,
      validAfter,
      validBefore,
      nonce: a.nonce,
      signature: d.signature,
    });
  };

  let checked: CheckedSessionCredential;
  switch (p.action) {
    case 'open': {
      if (p.type === 'hash') {
        const allowedType = typeOf('hash');
        if (!allowedType.ok) return allowedType;
        const payer = payerFromSource(source, details.chainId);
        if (!payer.ok) return payer;
        const terms: Required<ChannelTerms> = {
          payer: payer.value,
          payee: getAddress(request.recipient),
          token: getAddress(request.currency),
          salt: p.salt,
          authorizedSigner: getAddress(p.authorizedSigner ?? zeroAddress),
        };
        const expectedId = computeChannelId(terms, escrow, details.chainId);
        if (expectedId !== p.channelId) return fail('verification-failed', `channelId ${p.channelId} is not the id of these terms (${expectedId})`);
        checked = {
          action: 'open',
          type: 'hash',
          channelId: p.channelId,
          hash: p.hash,
          terms,
          cumulativeAmount: BigInt(p.cumulativeAmount),
          voucherSignature: p.signature,
        };
      } else {
        const deposit = checkRelayedDeposit({ ...p, action: 'open' }, p.channelId);
        if (!deposit.ok) return deposit;
        if (source !== undefined && source !== evmSource(details.chainId, getAddress(p.authorization.from)))
          return fail('verification-failed', `source ${source} does not name the payer ${getAddress(p.authorization.from)}`);
        checked = {
          action: 'open',
          type: 'authorization',
          channelId: p.channelId,
          deposit: deposit.value as CheckedDeposit & { action: 'open' },
          cumulativeAmount: BigInt(p.cumulativeAmount),
          voucherSignature: p.voucherSignature,
        };
      }
      break;
    }
    case 'topUp': {
      if (p.type === 'hash') {
        const allowedType = typeOf('hash');
        if (!allowedType.ok) return allowedType;
        const payer = payerFromSource(source, details.chainId);
        if (!payer.ok) return payer;
        if (BigInt(p.additionalDeposit) === 0n) return fail('verification-failed', 'additionalDeposit must be positive');
        checked = { action: 'topUp', type: 'hash', channelId: p.channelId, hash: p.hash, additionalDeposit: BigInt(p.additionalDeposit), payer: payer.value };
      } else {
        if (p.additionalDeposit !== p.authorization.value)
          return fail('verification-failed', `additionalDeposit ${p.additionalDeposit} is not the authorization's value ${p.authorization.value}`);
        const deposit = checkRelayedDeposit({ ...p, action: 'topUp' }, p.channelId);
        if (!deposit.ok) return deposit;
        checked = { action: 'topUp', type: 'authorization', channelId: p.channelId, deposit: deposit.value as CheckedDeposit & { action: 'topUp' } };
      }
      break;
    }
    case 'voucher': {
      let deposit: CheckedDeposit | undefined;
      if (p.deposit) {
        const d = checkRelayedDeposit(p.deposit, p.channelId);
        if (!d.ok) return d;
        deposit = d.value;
      }
      checked = {
        action: 'voucher',
        channelId: p.channelId,
        cumulativeAmount: BigInt(p.cumulativeAmount),
        voucherSignature: p.signature,
        ...(deposit && { deposit }),
      };
      break;
    }
    case 'close':
      checked = { action: 'close', channelId: p.channelId, cumulativeAmount: BigInt(p.cumulativeAmount), voucherSignature: p.signature };
      break;
  }
  if (details.channelId !== undefined && checked.channelId !== details.channelId)
    return fail('verification-failed', `the challenge resumes channel ${details.channelId}, the credential names ${checked.channelId}`);
  return ok({ request, payload: p, checked });
}

// ---- receipt, SSE ---------------------------------------------------------------------------------------------------

export const evmSessionReceiptSchema = z.looseObject({
  method: z.literal('evm'),
  intent: z.literal(SESSION_INTENT),
  status: z.literal('success'),
  timestamp: z.iso.datetime({ offset: true }),
  reference: bytes32,
  challengeId: z.string().min(1),
  channelId: bytes32,
  acceptedCumulative: uint128,
  spent: uint128,
  chainId: z.number().int().positive(),
  units: atomic.optional(),
  txHash: bytes32.optional(),
  confirmations: z.number().int().min(0).optional(),
});

export type EvmSessionReceipt = z.infer<typeof evmSessionReceiptSchema>;

/** The receipt of every paid success on a session (reference = channelId; txHash after a settle or close). */
export function evmSessionReceipt(fields: {
  challengeId: string;
  channelId: Hex;
  acceptedCumulative: bigint;
  spent: bigint;
  chainId: number;
  timestamp: Date;
  units?: bigint;
  txHash?: Hex;
  confirmations?: number;
}): EvmSessionReceipt {
  return {
    method: 'evm',
    intent: SESSION_INTENT,
    status: 'success',
    timestamp: fields.timestamp.toISOString(),
    reference: fields.channelId,
    challengeId: fields.challengeId,
    channelId: fields.channelId,
    acceptedCumulative: fields.acceptedCumulative.toString(),
    spent: fields.spent.toString(),
    chainId: fields.chainId,
    ...(fields.units !== undefined && { units: fields.units.toString() }),
    ...(fields.txHash !== undefined && { txHash: fields.txHash }),
    ...(fields.confirmations !== undefined && { confirmations: fields.confirmations }),
  };
}

export function parseEvmSessionReceipt(receipt: unknown): Result<EvmSessionReceipt> {
  const parsed = evmSessionReceiptSchema.safeParse(receipt);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('bad-request', `receipt ${issue?.path.join('.') || ''}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(parsed.data);
}

export const PAYMENT_NEED_VOUCHER_EVENT = 'payment-need-voucher';
export const PAYMENT_RECEIPT_EVENT = 'payment-receipt';

export const needVoucherSchema = z.strictObject({
  channelId: bytes32,
  requiredCumulative: uint128,
  acceptedCumulative: uint128,
  deposit: uint128,
});

export type NeedVoucher = z.infer<typeof needVoucherSchema>;

/** `event: payment-need-voucher` with its JSON data, one SSE frame (blank-line terminated). */
export function encodeNeedVoucherEvent(need: { channelId: Hex; requiredCumulative: bigint; acceptedCumulative: bigint; deposit: bigint }): string {
  const data = {
    channelId: need.channelId,
    requiredCumulative: need.requiredCumulative.toString(),
    acceptedCumulative: need.acceptedCumulative.toString(),
    deposit: need.deposit.toString(),
  };
  return `event: ${PAYMENT_NEED_VOUCHER_EVENT}\ndata: ${JSON.stringify(data)}\n\n`;
}

/** The final `event: payment-receipt` frame: the receipt as JSON (the same object the Payment-Receipt header encodes). */
export function encodeReceiptEvent(receipt: EvmSessionReceipt): string {
  return `event: ${PAYMENT_RECEIPT_EVENT}\ndata: ${JSON.stringify(receipt)}\n\n`;
}

export function parseNeedVoucher(data: string): Result<NeedVoucher> {
  let json: unknown;
  try {
    json = JSON.parse(data);
  } catch {
    return fail('bad-request', 'payment-need-voucher data is not JSON');
  }
  const parsed = needVoucherSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('bad-request', `payment-need-voucher ${issue?.path.join('.') || ''}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(parsed.data);
}

// ---- problems -------------------------------------------------------------------------------------------------------

/**
 * The problem type for an escrow revert (by its custom error name), never the raw selector: a failed token pull is
 * `insufficient-balance`, the channel errors map to their own types, anything else is `transaction-reverted`.
 */
export function sessionProblemForRevert(errorName: string | undefined): ProblemCode {
  switch (errorName) {
    case 'InvalidSignature':
      return 'session/invalid-signature';
    case 'AmountExceedsDeposit':
      return 'session/amount-exceeds-deposit';
    case 'ChannelNotFound':
      return 'session/channel-not-found';
    case 'ChannelFinalized':
      return 'session/channel-finalized';
    case 'ERC20InsufficientBalance':
    case 'ERC20InsufficientAllowance':
    case 'SafeERC20FailedOperation':
      return 'session/insufficient-balance';
    default:
      return 'session/transaction-reverted';
  }
}
