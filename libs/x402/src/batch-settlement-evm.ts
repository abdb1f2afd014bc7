import { encodeAbiParameters, getAddress, hashTypedData, isAddress, isHex, keccak256, type Address, type Hex } from 'viem';
import { z } from 'zod';
import { isAtomicString } from '@mp/money';
import { issuesOf, type FieldIssue } from './request';

/**
 * x402 `batch-settlement` on EVM (x402 specs/schemes/batch-settlement/scheme_batch_settlement_evm.md, @x402/evm 2.27):
 * the wire payloads, the EIP-712 types and channel ids, and the checks that need no chain. Pure functions only.
 */
export const BATCH_SETTLEMENT_SCHEME = 'batch-settlement';

/** Canonical addresses the official client, server and facilitator hard-code (no option overrides them). */
export const BATCH_SETTLEMENT_ADDRESS: Address = '0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003';
export const ERC3009_DEPOSIT_COLLECTOR_ADDRESS: Address = '0x4020806089470a89826cB9fB1f4059150b550004';
export const PERMIT2_DEPOSIT_COLLECTOR_ADDRESS: Address = '0x4020425FAf3B746C082C2f942b4E5159887B0005';

/** The contract's MIN_WITHDRAW_DELAY / MAX_WITHDRAW_DELAY, in seconds. */
export const MIN_WITHDRAW_DELAY = 900;
export const MAX_WITHDRAW_DELAY = 2_592_000;

/** ERC-3009 window the facilitator asks for: valid for at least this many more seconds. */
export const DEPOSIT_VALID_BEFORE_MARGIN_SECONDS = 6;

const P = 'invalid_batch_settlement_evm_';
/** Reason strings of @x402/evm 2.27's batch-settlement facilitator, character for character. */
export const BatchSettlementReason = {
  scheme: `${P}scheme`,
  networkMismatch: `${P}network_mismatch`,
  payloadType: `${P}payload_type`,
  channelIdMismatch: `${P}channel_id_mismatch`,
  receiverMismatch: `${P}receiver_mismatch`,
  receiverAuthorizerMismatch: `${P}receiver_authorizer_mismatch`,
  tokenMismatch: `${P}token_mismatch`,
  withdrawDelayMismatch: `${P}withdraw_delay_mismatch`,
  withdrawDelayOutOfRange: `${P}withdraw_delay_out_of_range`,
  voucherSignature: `${P}voucher_signature`,
  channelNotFound: `${P}channel_not_found`,
  cumulativeExceedsBalance: `${P}cumulative_exceeds_balance`,
  cumulativeBelowClaimed: `${P}cumulative_below_claimed`,
  insufficientBalance: `${P}insufficient_balance`,
  missingEip712Domain: `${P}missing_eip712_domain`,
  validBefore: `${P}payload_authorization_valid_before`,
  validAfter: `${P}payload_authorization_valid_after`,
  receiveAuthorizationSignature: `${P}receive_authorization_signature`,
  erc3009AuthorizationRequired: `${P}erc3009_authorization_required`,
  permit2AuthorizationRequired: `${P}permit2_authorization_required`,
  depositSimulationFailed: `${P}deposit_simulation_failed`,
  depositTransactionFailed: `${P}deposit_transaction_failed`,
  claimSimulationFailed: `${P}claim_simulation_failed`,
  claimTransactionFailed: `${P}claim_transaction_failed`,
  settleSimulationFailed: `${P}settle_simulation_failed`,
  settleTransactionFailed: `${P}settle_transaction_failed`,
  refundSimulationFailed: `${P}refund_simulation_failed`,
  refundTransactionFailed: `${P}refund_transaction_failed`,
  nothingToSettle: `${P}nothing_to_settle`,
  refundNoBalance: `${P}refund_no_balance`,
  rpcReadFailed: `${P}rpc_read_failed`,
  authorizerNotConfigured: `${P}authorizer_not_configured`,
  authorizerAddressMismatch: `${P}authorizer_address_mismatch`,
  // the resource server's (answered in corrective 402s, never by the facilitator)
  cumulativeAmountMismatch: `${P}cumulative_amount_mismatch`,
} as const;

export type BatchSettlementReasonCode = (typeof BatchSettlementReason)[keyof typeof BatchSettlementReason];

// ------------------------------------------------------------------ EIP-712

export const batchSettlementDomain = (chainId: number) =>
  ({ name: 'x402 Batch Settlement', version: '1', chainId, verifyingContract: BATCH_SETTLEMENT_ADDRESS }) as const;

export const channelConfigTypes = {
  ChannelConfig: [
    { name: 'payer', type: 'address' },
    { name: 'payerAuthorizer', type: 'address' },
    { name: 'receiver', type: 'address' },
    { name: 'receiverAuthorizer', type: 'address' },
    { name: 'token', type: 'address' },
    { name: 'withdrawDelay', type: 'uint40' },
    { name: 'salt', type: 'bytes32' },
  ],
} as const;

export const voucherTypes = {
  Voucher: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'maxClaimableAmount', type: 'uint128' },
  ],
} as const;

export const refundTypes = {
  Refund: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'nonce', type: 'uint256' },
    { name: 'amount', type: 'uint128' },
  ],
} as const;

export const claimBatchTypes = {
  ClaimBatch: [{ name: 'claims', type: 'ClaimEntry[]' }],
  ClaimEntry: [
    { name: 'channelId', type: 'bytes32' },
    { name: 'maxClaimableAmount', type: 'uint128' },
    { name: 'totalClaimed', type: 'uint128' },
  ],
} as const;

// ------------------------------------------------------------------ wire schemas

const address = z.string().refine((v) => isAddress(v, { strict: false }), 'must be a 0x-prefixed 20-byte address');
const bytes32 = z.string().refine((v) => isHex(v, { strict: true }) && v.length === 66, 'must be 0x-prefixed 32 bytes of hex');
const atomic = z.string().refine(isAtomicString, 'must be a non-negative integer in atomic units, as a decimal string');
const UINT128_MAX = (1n << 128n) - 1n;
const uint128 = atomic.refine((v) => BigInt(v) <= UINT128_MAX, 'must fit in uint128');
const signature = z
  .string()
  .refine((v) => isHex(v, { strict: true }) && v.length >= 4 && v.length % 2 === 0 && v.length <= 16_386, 'must be 0x-prefixed hex bytes');
/** A uint256 the client may write as a decimal or 0x-hex string (the ERC-3009 salt). */
const uint256Text = z.string().refine((v) => {
  if (!/^(0x[0-9a-fA-F]{1,64}|\d{1,78})$/.test(v)) return false;
  return BigInt(v) < 1n << 256n;
}, 'must be a uint256 as a decimal or 0x-hex string');

export const channelConfigSchema = z.object({
  payer: address,
  payerAuthorizer: address,
  receiver: address,
  receiverAuthorizer: address,
  token: address,
  withdrawDelay: z.number().int('must be an integer').min(0).max(0xff_ffff_ffff, 'must fit in uint40'),
  salt: bytes32,
});

export const signedVoucherSchema = z.object({ channelId: bytes32, maxClaimableAmount: uint128, signature });

const erc3009DepositAuthorizationSchema = z.object({
  validAfter: uint256Text,
  validBefore: uint256Text,
  salt: uint256Text,
  signature,
});

export const depositPayloadSchema = z.object({
  type: z.literal('deposit'),
  channelConfig: channelConfigSchema,
  voucher: signedVoucherSchema,
  deposit: z.object({
    amount: uint128.refine((v) => BigInt(v) > 0n, 'must be positive'),
    authorization: z.object({ erc3009Authorization: erc3009DepositAuthorizationSchema.optional(), permit2Authorization: z.unknown().optional() }),
  }),
});

export const voucherPayloadSchema = z.object({ type: z.literal('voucher'), channelConfig: channelConfigSchema, voucher: signedVoucherSchema });

export const claimRowSchema = z.object({
  voucher: z.object({ channel: channelConfigSchema, maxClaimableAmount: uint128 }),
  signature,
  totalClaimed: uint128,
});

export const refundPayloadSchema = z.object({
  type: z.literal('refund'),
  channelConfig: channelConfigSchema,
  voucher: signedVoucherSchema,
  amount: uint128.optional(),
  /** Present once the resource server enriched the refund for /settle. */
  refundNonce: uint256Text.optional(),
  claims: z.array(claimRowSchema).max(100).optional(),
  refundAuthorizerSignature: signature.optional(),
  claimAuthorizerSignature: signature.optional(),
});

export const claimPayloadSchema = z.object({
  type: z.literal('claim'),
  claims: z.array(claimRowSchema).min(1, 'must hold at least one claim').max(100),
  claimAuthorizerSignature: signature.optional(),
});

export const settlePayloadSchema = z.object({ type: z.literal('settle'), receiver: address, token: address });

export type ChannelConfigWire = z.infer<typeof channelConfigSchema>;
export type SignedVoucher = z.infer<typeof signedVoucherSchema>;
export type DepositPayload = z.infer<typeof depositPayloadSchema>;
export type VoucherPayload = z.infer<typeof voucherPayloadSchema>;
export type RefundPayload = z.infer<typeof refundPayloadSchema>;
export type ClaimPayload = z.infer<typeof claimPayloadSchema>;
export type ClaimRow = z.infer<typeof claimRowSchema>;
export type SettlePayload = z.infer<typeof settlePayloadSchema>;
export type BatchSettlementPayload = DepositPayload | VoucherPayload | RefundPayload | ClaimPayload | SettlePayload;

const schemaByType = {
  deposit: depositPayloadSchema,
  voucher: voucherPayloadSchema,
  refund: refundPayloadSchema,
  claim: claimPayloadSchema,
  settle: settlePayloadSchema,
} as const;

export type BatchSettlementDecoding =
  | { ok: true; payload: BatchSettlementPayload }
  /** An unknown `type`: the protocol's own invalid answer. */
  | { ok: false; kind: 'invalid'; reason: string; message: string }
  /** A known type with bad fields: a 400 naming them. */
  | { ok: false; kind: 'malformed'; issues: FieldIssue[] };

/** Decode a batch-settlement payload by its `type`; `path` prefixes the field names in issues. */
export function decodeBatchSettlementPayload(raw: unknown, path = 'paymentPayload.payload'): BatchSettlementDecoding {
  const type = typeof raw === 'object' && raw !== null ? (raw as { type?: unknown }).type : undefined;
  if (typeof type !== 'string' || !(type in schemaByType)) {
    return {
      ok: false,
      kind: 'invalid',
      reason: BatchSettlementReason.payloadType,
      message: `payload.type must be one of ${Object.keys(schemaByType).join(', ')}; got ${JSON.stringify(type ?? null)}`,
    };
  }
  const parsed = schemaByType[type as keyof typeof schemaByType].safeParse(raw);
  if (!parsed.success) return { ok: false, kind: 'malformed', issues: issuesOf(parsed.error, path) };
  return { ok: true, payload: parsed.data as BatchSettlementPayload };
}

// ------------------------------------------------------------------ channel ids and digests

/** The config as the contract takes it (checksummed addresses, bigint-free). */
export function contractChannelConfig(config: ChannelConfigWire) {
  return {
    payer: getAddress(config.payer),
    payerAuthorizer: getAddress(config.payerAuthorizer),
    receiver: getAddress(config.receiver),
    receiverAuthorizer: getAddress(config.receiverAuthorizer),
    token: getAddress(config.token),
    withdrawDelay: config.withdrawDelay,
    salt: config.salt as Hex,
  };
}

/** channelId: the full EIP-712 digest of the ChannelConfig in the batch-settlement domain of `chainId`. */
export function channelIdOf(config: ChannelConfigWire, chainId: number): Hex {
  return hashTypedData({
    domain: batchSettlementDomain(chainId),
    types: channelConfigTypes,
    primaryType: 'ChannelConfig',
    message: contractChannelConfig(config),
  });
}

export function voucherTypedData(channelId: Hex, maxClaimableAmount: bigint, chainId: number) {
  return {
    domain: batchSettlementDomain(chainId),
    types: voucherTypes,
    primaryType: 'Voucher' as const,
    message: { channelId, maxClaimableAmount },
  };
}

export function refundTypedData(channelId: Hex, nonce: bigint, amount: bigint, chainId: number) {
  return {
    domain: batchSettlementDomain(chainId),
    types: refundTypes,
    primaryType: 'Refund' as const,
    message: { channelId, nonce, amount },
  };
}

export function claimBatchTypedData(claims: readonly ClaimRow[], chainId: number) {
  return {
    domain: batchSettlementDomain(chainId),
    types: claimBatchTypes,
    primaryType: 'ClaimBatch' as const,
    message: {
      claims: claims.map((row) => ({
        channelId: channelIdOf(row.voucher.channel, chainId),
        maxClaimableAmount: BigInt(row.voucher.maxClaimableAmount),
        totalClaimed: BigInt(row.totalClaimed),
      })),
    },
  };
}

/** The ERC-3009 nonce the collector expects: keccak256(abi.encode(channelId, salt)). */
export function erc3009DepositNonce(channelId: Hex, salt: string): Hex {
  return keccak256(encodeAbiParameters([{ type: 'bytes32' }, { type: 'uint256' }], [channelId, BigInt(salt)]));
}

/** The ERC-3009 collector's collectorData: abi.encode(validAfter, validBefore, salt, signature). */
export function erc3009CollectorData(auth: { validAfter: string; validBefore: string; salt: string; signature: string }): Hex {
  return encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'bytes' }],
    [BigInt(auth.validAfter), BigInt(auth.validBefore), BigInt(auth.salt), auth.signature as Hex],
  );
}

/** Claim rows as the contract's VoucherClaim[] argument. */
export function contractClaimRows(claims: readonly ClaimRow[]) {
  return claims.map((row) => ({
    voucher: { channel: contractChannelConfig(row.voucher.channel), maxClaimableAmount: BigInt(row.voucher.maxClaimableAmount) },
    signature: row.signature as Hex,
    totalClaimed: BigInt(row.totalClaimed),
  }));
}

// ------------------------------------------------------------------ checks that need no chain

/** What the requirements pin down about a channel (payTo, asset and the batch-settlement `extra`). */
export interface ChannelRequirements {
  payTo: string;
  asset: string;
  extra: Record<string, unknown>;
}

/**
 * Verify steps 2–6 of the spec, in its order: the config hashes to `channelId`, the receiver is payTo, the
 * receiverAuthorizer is the one the requirements name (non-zero), the token is the asset, the withdraw delay is
 * the requirements' and within the contract's range. Returns the first failing reason, or undefined.
 */
export function channelConfigProblem(
  config: ChannelConfigWire,
  channelId: string,
  requirements: ChannelRequirements,
  chainId: number,
): { reason: BatchSettlementReasonCode; message: string } | undefined {
  const same = (a: string, b: unknown) => typeof b === 'string' && isAddress(b, { strict: false }) && getAddress(a) === getAddress(b);
  const computed = channelIdOf(config, chainId);
  if (computed.toLowerCase() !== channelId.toLowerCase()) {
    return { reason: BatchSettlementReason.channelIdMismatch, message: `channelConfig hashes to ${computed}, not ${channelId}` };
  }
  if (!same(config.receiver, requirements.payTo)) {
    return { reason: BatchSettlementReason.receiverMismatch, message: `channel receiver ${config.receiver} is not payTo ${requirements.payTo}` };
  }
  const authorizer = requirements.extra.receiverAuthorizer;
  if (!same(config.receiverAuthorizer, authorizer) || /^0x0{40}$/i.test(String(authorizer))) {
    return {
      reason: BatchSettlementReason.receiverAuthorizerMismatch,
      message: `channel receiverAuthorizer ${config.receiverAuthorizer} is not the non-zero extra.receiverAuthorizer ${String(authorizer)}`,
    };
  }
  if (!same(config.token, requirements.asset)) {
    return { reason: BatchSettlementReason.tokenMismatch, message: `channel token ${config.token} is not the asset ${requirements.asset}` };
  }
  const delay = requirements.extra.withdrawDelay;
  if (delay !== undefined && config.withdrawDelay !== Number(delay)) {
    return {
      reason: BatchSettlementReason.withdrawDelayMismatch,
      message: `channel withdrawDelay ${config.withdrawDelay} is not extra.withdrawDelay ${String(delay)}`,
    };
  }
  if (config.withdrawDelay < MIN_WITHDRAW_DELAY || config.withdrawDelay > MAX_WITHDRAW_DELAY) {
    return {
      reason: BatchSettlementReason.withdrawDelayOutOfRange,
      message: `withdrawDelay ${config.withdrawDelay} is outside ${MIN_WITHDRAW_DELAY}..${MAX_WITHDRAW_DELAY} seconds`,
    };
  }
  return undefined;
}

/** The ERC-3009 deposit window check: valid for at least 6 more seconds and already valid now. */
export function erc3009WindowProblem(
  auth: { validAfter: string; validBefore: string },
  nowSeconds: number,
): { reason: BatchSettlementReasonCode; message: string } | undefined {
  if (BigInt(auth.validBefore) < BigInt(nowSeconds + DEPOSIT_VALID_BEFORE_MARGIN_SECONDS)) {
    return { reason: BatchSettlementReason.validBefore, message: `the deposit authorization expires at ${auth.validBefore}, too soon to settle` };
  }
  if (BigInt(auth.validAfter) > BigInt(nowSeconds)) {
    return { reason: BatchSettlementReason.validAfter, message: `the deposit authorization is not valid before ${auth.validAfter}` };
  }
  return undefined;
}

/** The channel's on-chain state as /verify reports it in `extra`. */
export interface ChannelState {
  balance: bigint;
  totalClaimed: bigint;
  withdrawRequestedAt: number;
  refundNonce: bigint;
}

/** Voucher-vs-state checks (steps 9–10): a live channel, a ceiling within the escrow and above what is claimed. */
export function voucherStateProblem(
  kind: 'deposit' | 'voucher' | 'refund',
  maxClaimableAmount: bigint,
  state: ChannelState,
  depositAmount = 0n,
): { reason: BatchSettlementReasonCode; message: string } | undefined {
  if (kind !== 'deposit' && state.balance === 0n) {
    return { reason: BatchSettlementReason.channelNotFound, message: 'the channel holds no escrow: deposit first' };
  }
  const escrow = state.balance + depositAmount;
  if (maxClaimableAmount > escrow) {
    return { reason: BatchSettlementReason.cumulativeExceedsBalance, message: `the voucher's ${maxClaimableAmount} exceeds the escrow of ${escrow}` };
  }
  const below = kind === 'refund' ? maxClaimableAmount < state.totalClaimed : maxClaimableAmount <= state.totalClaimed;
  if (below) {
    return {
      reason: BatchSettlementReason.cumulativeBelowClaimed,
      message: `the voucher's ${maxClaimableAmount} is not above the ${state.totalClaimed} already claimed`,
    };
  }
  return undefined;
}

/** The `extra` of a valid /verify answer: decimal strings, withdrawRequestedAt in seconds (0 when none). */
export function channelStateExtra(channelId: string, state: ChannelState) {
  return {
    channelId,
    balance: state.balance.toString(),
    totalClaimed: state.totalClaimed.toString(),
    withdrawRequestedAt: state.withdrawRequestedAt,
    refundNonce: state.refundNonce.toString(),
  };
}
