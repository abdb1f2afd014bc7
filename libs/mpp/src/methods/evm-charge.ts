import { z } from 'zod';
import { getAddress, isAddress, keccak256, stringToBytes, type Address, type Hex } from 'viem';
import type { Challenge } from '../challenge';
import { fail, ok, type Result } from '../problems';

/** Method `evm`, intent `charge`, as mppx 0.11 writes it (`mppx/evm`): an EIP-3009 `authorization` credential. */
export const EVM_METHOD = 'evm';

const atomic = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a decimal string of atomic units');
const address = z.string().refine((value) => isAddress(value, { strict: false }), 'must be a 0x-prefixed 20-byte address');
const bytes32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x-prefixed 32 bytes');

/** The canonical request of an evm charge (amounts already in atomic units, as on the wire). */
export const evmChargeRequestSchema = z.strictObject({
  amount: atomic.refine((value) => value !== '0', 'must be positive'),
  currency: address,
  recipient: address,
  description: z.string().max(1024).optional(),
  externalId: z.string().max(256).optional(),
  methodDetails: z.strictObject({
    chainId: z.number().int().positive(),
    credentialTypes: z.array(z.literal('authorization')).min(1).optional(),
    decimals: z.number().int().min(0).max(36).optional(),
  }),
});

export type EvmChargeRequest = z.infer<typeof evmChargeRequestSchema>;

export const evmAuthorizationPayloadSchema = z.strictObject({
  type: z.literal('authorization'),
  from: address,
  to: address,
  value: atomic,
  validAfter: atomic,
  validBefore: atomic,
  nonce: bytes32,
  signature: z.string().regex(/^0x([0-9a-fA-F]{2})+$/, 'must be 0x-prefixed hex bytes'),
});

export type EvmAuthorizationPayload = z.infer<typeof evmAuthorizationPayloadSchema>;

/** The request as issued: checksummed addresses, and the defaults mppx fills in made explicit. */
export function normalizeEvmChargeRequest(request: EvmChargeRequest, decimals: number): EvmChargeRequest {
  return {
    ...request,
    currency: getAddress(request.currency),
    recipient: getAddress(request.recipient),
    methodDetails: {
      chainId: request.methodDetails.chainId,
      credentialTypes: request.methodDetails.credentialTypes ?? ['authorization'],
      decimals: request.methodDetails.decimals ?? decimals,
    },
  };
}

/** The EIP-3009 nonce an evm charge credential must use: keccak256(utf8(challenge.id + challenge.realm)). */
export function evmChallengeNonce(challenge: Pick<Challenge, 'id' | 'realm'>): Hex {
  return keccak256(stringToBytes(`${challenge.id}${challenge.realm}`));
}

/** `did:pkh:eip155:<chainId>:<address>`, the source mppx sends with an evm credential. */
export function evmSource(chainId: number, payer: Address): string {
  return `did:pkh:eip155:${chainId}:${getAddress(payer)}`;
}

export interface EvmChargeCredential {
  request: EvmChargeRequest;
  payload: EvmAuthorizationPayload;
  payer: Address;
}

/**
 * The checks of an evm charge credential that need neither a chain nor a key: the payload's shape, that it pays
 * exactly the challenge's amount to its recipient, that its nonce is the challenge's, its time window, and that
 * `source` names the payer. The signature and the payer's funds are the settlement engine's to check.
 */
export function checkEvmCharge(challenge: Challenge, payload: unknown, source: string | undefined, nowSeconds: bigint): Result<EvmChargeCredential> {
  const request = evmChargeRequestSchema.safeParse(challenge.request);
  if (!request.success) return fail('invalid-challenge', 'the challenge is not an evm charge request');
  const parsed = evmAuthorizationPayloadSchema.safeParse(payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('invalid-payload', `payload.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  const p = parsed.data;
  const r = request.data;
  if (r.methodDetails.credentialTypes && !r.methodDetails.credentialTypes.includes('authorization')) {
    return fail('verification-failed', 'the challenge does not accept authorization credentials');
  }
  if (getAddress(p.to) !== getAddress(r.recipient))
    return fail('verification-failed', `the authorization pays ${getAddress(p.to)}, the challenge asks for ${getAddress(r.recipient)}`);
  if (p.value !== r.amount) {
    return BigInt(p.value) < BigInt(r.amount)
      ? fail('payment-insufficient', `the authorization is for ${p.value}, the challenge asks for ${r.amount}`)
      : fail('verification-failed', `the authorization is for ${p.value}, the challenge asks for exactly ${r.amount}`);
  }
  if (p.nonce.toLowerCase() !== evmChallengeNonce(challenge))
    return fail('verification-failed', 'the authorization nonce is not bound to this challenge (keccak256(id + realm))');
  if (BigInt(p.validAfter) > nowSeconds) return fail('verification-failed', `the authorization is valid only after ${p.validAfter}`);
  if (BigInt(p.validBefore) <= nowSeconds) return fail('payment-expired', `the authorization expired at ${p.validBefore}`);
  const payer = getAddress(p.from);
  if (source !== undefined && source !== evmSource(r.methodDetails.chainId, payer))
    return fail('verification-failed', `source ${source} does not name the payer ${payer}`);
  return ok({ request: r, payload: p, payer });
}
