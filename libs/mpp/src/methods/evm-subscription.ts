import { z } from 'zod';
import { encodeAbiParameters, getAddress, isAddress, keccak256, type Address, type Hex } from 'viem';
import { InvalidPeriodError, parsePeriod, periodAt, type Period } from '@mp/billing';
import type { Challenge } from '../challenge';
import { fail, ok, type Result } from '../problems';
import { evmSource } from './evm-charge';

/**
 * Method `evm`, intent `subscription`: OUR profile, EXPERIMENTAL (no official EVM profile exists; see
 * recurring-and-streaming.md §1.4 and docs/architecture.md "MPP subscriptions, EVM profile"). The payer pre-signs one
 * EIP-3009 TransferWithAuthorization per period until `subscriptionExpires`, each valid only inside its period, so the
 * token itself enforces "at most one charge per period" and a missed window expires on its own.
 */
export const SUBSCRIPTION_INTENT = 'subscription';

/** The payload type of an evm subscription credential. */
export const EVM_SUBSCRIPTION_CREDENTIAL_TYPE = 'authorizations';

/**
 * Most periods one credential may pre-authorize: 120 authorizations of ~340 bytes each keep the credential (base64url)
 * near 55 KiB, under MAX_SUBSCRIPTION_CREDENTIAL_CHARS and the facilitator's 64 KiB body limit.
 */
export const MAX_SUBSCRIPTION_AUTHORIZATIONS = 120;

/** The longest `Authorization: Payment …` value a subscription credential may have (a charge's stays at 32 KiB). */
export const MAX_SUBSCRIPTION_CREDENTIAL_CHARS = 60 * 1024;

const atomic = z.string().regex(/^(0|[1-9][0-9]{0,77})$/, 'must be a decimal string of atomic units');
const seconds = z.string().regex(/^(0|[1-9][0-9]{0,19})$/, 'must be a decimal string of unix seconds');
const address = z.string().refine((value) => isAddress(value, { strict: false }), 'must be a 0x-prefixed 20-byte address');
const bytes32 = z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x-prefixed 32 bytes');
const rfc3339 = z.iso.datetime({ offset: true });

/**
 * The canonical request of an evm subscription (§1.1 fields; methodDetails carries what the payer needs to sign:
 * the chain, the token's decimals and its EIP-712 domain). `expires` belongs in the challenge, never here.
 */
export const evmSubscriptionRequestSchema = z
  .strictObject({
    amount: atomic.refine((value) => value !== '0', 'must be positive'),
    currency: address,
    periodUnit: z.enum(['day', 'week', 'month']),
    periodCount: z.string().regex(/^[1-9][0-9]*$/, 'must be a positive integer in decimal'),
    recipient: address,
    description: z.string().max(1024).optional(),
    externalId: z.string().max(256).optional(),
    /** required by this profile: the last period authorized is the last one starting before it */
    subscriptionExpires: rfc3339,
    methodDetails: z.strictObject({
      chainId: z.number().int().positive(),
      credentialTypes: z.array(z.literal(EVM_SUBSCRIPTION_CREDENTIAL_TYPE)).min(1).optional(),
      decimals: z.number().int().min(0).max(36).optional(),
      /** the token's EIP-712 domain name and version, which every authorization is signed under */
      domain: z.strictObject({ name: z.string().min(1).max(128), version: z.string().min(1).max(32) }).optional(),
    }),
  })
  .superRefine((request, ctx) => {
    try {
      parsePeriod(request.periodUnit, request.periodCount);
    } catch (error) {
      if (!(error instanceof InvalidPeriodError)) throw error;
      ctx.addIssue({ code: 'custom', path: ['periodCount'], message: `the period cannot be represented exactly (${error.problem})` });
    }
  });

export type EvmSubscriptionRequest = z.infer<typeof evmSubscriptionRequestSchema>;

/** Why a request is not an evm subscription request, one line per problem (`expires` named: the spec forbids it here). */
export function evmSubscriptionRequestProblems(request: unknown): string[] {
  if (typeof request === 'object' && request !== null && 'expires' in request)
    return ['request.expires: expiry belongs in the challenge (`expires`), not in a subscription request'];
  const parsed = evmSubscriptionRequestSchema.safeParse(request);
  return parsed.success ? [] : parsed.error.issues.map((i) => `request.${i.path.join('.')}: ${i.message}`);
}

/** The request as issued: checksummed addresses, and the defaults made explicit. */
export function normalizeEvmSubscriptionRequest(
  request: EvmSubscriptionRequest,
  token: { decimals: number; name: string; version: string },
): EvmSubscriptionRequest {
  return {
    ...request,
    currency: getAddress(request.currency),
    recipient: getAddress(request.recipient),
    subscriptionExpires: new Date(request.subscriptionExpires).toISOString().replace('.000Z', 'Z'),
    methodDetails: {
      chainId: request.methodDetails.chainId,
      credentialTypes: request.methodDetails.credentialTypes ?? [EVM_SUBSCRIPTION_CREDENTIAL_TYPE],
      decimals: request.methodDetails.decimals ?? token.decimals,
      domain: request.methodDetails.domain ?? { name: token.name, version: token.version },
    },
  };
}

export function subscriptionPeriod(request: Pick<EvmSubscriptionRequest, 'periodUnit' | 'periodCount'>): Period {
  return parsePeriod(request.periodUnit, request.periodCount);
}

/** One period's authorization as the payer signs it (the payer, `from`, is the payload's). */
export const evmPeriodAuthorizationSchema = z.strictObject({
  to: address,
  value: atomic,
  validAfter: seconds,
  validBefore: seconds,
  nonce: bytes32,
  signature: z.string().regex(/^0x([0-9a-fA-F]{2})+$/, 'must be 0x-prefixed hex bytes'),
});

export const evmSubscriptionPayloadSchema = z.strictObject({
  type: z.literal(EVM_SUBSCRIPTION_CREDENTIAL_TYPE),
  from: address,
  authorizations: z.array(evmPeriodAuthorizationSchema).min(1).max(MAX_SUBSCRIPTION_AUTHORIZATIONS),
});

export type EvmPeriodAuthorization = z.infer<typeof evmPeriodAuthorizationSchema>;
export type EvmSubscriptionPayload = z.infer<typeof evmSubscriptionPayloadSchema>;

/**
 * The EIP-3009 nonce of period n: keccak256(abi.encode(string challengeId, string realm, uint256 n)). Deterministic,
 * so the verifier recomputes every one, and distinct per challenge and period, so no two grants share one.
 */
export function evmSubscriptionNonce(challenge: Pick<Challenge, 'id' | 'realm'>, periodIndex: number): Hex {
  return keccak256(encodeAbiParameters([{ type: 'string' }, { type: 'string' }, { type: 'uint256' }], [challenge.id, challenge.realm, BigInt(periodIndex)]));
}

/** One period's window as its authorization must carry it: validAfter = start − 1 (EIP-3009 is strict), validBefore = end. */
export interface PeriodWindow {
  index: number;
  start: Date;
  end: Date;
  validAfter: bigint;
  validBefore: bigint;
}

/**
 * Every period from the anchor that starts before `expires`: the periods a credential must authorize, in order.
 * Undefined when there would be more than `max` (the caller names the cap).
 */
export function subscriptionWindows(anchorSeconds: bigint, period: Period, expires: Date, max = MAX_SUBSCRIPTION_AUTHORIZATIONS): PeriodWindow[] | undefined {
  const anchor = new Date(Number(anchorSeconds) * 1000);
  const windows: PeriodWindow[] = [];
  for (let n = 0; ; n += 1) {
    const { start, end } = periodAt(anchor, period, n);
    if (start.getTime() >= expires.getTime()) return windows;
    if (windows.length === max) return undefined;
    windows.push({ index: n, start, end, validAfter: BigInt(start.getTime() / 1000) - 1n, validBefore: BigInt(end.getTime() / 1000) });
  }
}

/** The EIP-712 typed data of one TransferWithAuthorization, for signing (client) and recovery (verifier). */
export function transferWithAuthorizationTypedData(
  domain: { name: string; version: string; chainId: number; verifyingContract: Address },
  message: { from: Address; to: Address; value: bigint; validAfter: bigint; validBefore: bigint; nonce: Hex },
) {
  return {
    domain,
    types: {
      TransferWithAuthorization: [
        { name: 'from', type: 'address' },
        { name: 'to', type: 'address' },
        { name: 'value', type: 'uint256' },
        { name: 'validAfter', type: 'uint256' },
        { name: 'validBefore', type: 'uint256' },
        { name: 'nonce', type: 'bytes32' },
      ],
    },
    primaryType: 'TransferWithAuthorization' as const,
    message,
  };
}

export interface CheckedPeriodAuthorization extends PeriodWindow {
  nonce: Hex;
  signature: Hex;
}

export interface EvmSubscriptionCredential {
  request: EvmSubscriptionRequest;
  period: Period;
  payer: Address;
  /** the start of period 0: authorizations[0].validAfter + 1 */
  anchor: Date;
  expiresAt: Date;
  authorizations: CheckedPeriodAuthorization[];
}

export interface SubscriptionCheckOptions {
  nowSeconds: bigint;
  /**
   * The longest a challenge can live (the facilitator's MAX_CHALLENGE_TTL_SECONDS). The anchor rule: the anchor must lie
   * in [challenge.expires − maxLifetime, min(now, challenge.expires)], so a payer cannot move its periods to a time
   * of its choosing, and period 0 is already open when the credential is settled.
   */
  maxChallengeLifetimeSeconds: number;
}

/**
 * Everything about an evm subscription credential that needs neither a chain nor a key: the payload's shape, the
 * anchor rule, one authorization per period until subscriptionExpires (no more, no fewer, in order), each paying
 * exactly `amount` to `recipient` inside its period's window under its derived nonce, period 0 not yet expired,
 * and `source` naming the payer. The signatures and the chain's state are the facilitator's to check.
 */
export function checkEvmSubscription(
  challenge: Challenge,
  payload: unknown,
  source: string | undefined,
  { nowSeconds, maxChallengeLifetimeSeconds }: SubscriptionCheckOptions,
): Result<EvmSubscriptionCredential> {
  const request = evmSubscriptionRequestSchema.safeParse(challenge.request);
  if (!request.success) return fail('invalid-challenge', 'the challenge is not an evm subscription request');
  const parsed = evmSubscriptionPayloadSchema.safeParse(payload);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return fail('invalid-payload', `payload.${issue?.path.join('.') ?? ''}: ${issue?.message ?? 'invalid'}`);
  }
  const r = request.data;
  const p = parsed.data;
  if (r.methodDetails.credentialTypes && !r.methodDetails.credentialTypes.includes(EVM_SUBSCRIPTION_CREDENTIAL_TYPE))
    return fail('verification-failed', 'the challenge does not accept authorizations credentials');
  const period = subscriptionPeriod(r);
  const expiresAt = new Date(r.subscriptionExpires);

  const anchorSeconds = BigInt(p.authorizations[0]!.validAfter) + 1n;
  const challengeEnd = challenge.expires === undefined ? nowSeconds : BigInt(Math.floor(Date.parse(challenge.expires) / 1000));
  const earliest = challengeEnd - BigInt(maxChallengeLifetimeSeconds);
  const latest = nowSeconds < challengeEnd ? nowSeconds : challengeEnd;
  if (anchorSeconds < earliest || anchorSeconds > latest)
    return fail(
      'verification-failed',
      `the anchor (authorizations[0].validAfter + 1 = ${anchorSeconds}) must lie within the challenge's lifetime and not after now: [${earliest}, ${latest}]`,
    );
  if (anchorSeconds * 1000n >= BigInt(expiresAt.getTime()))
    return fail('verification-failed', `subscriptionExpires ${r.subscriptionExpires} is not after the anchor`);

  const windows = subscriptionWindows(anchorSeconds, period, expiresAt);
  if (!windows) return fail('verification-failed', `more than ${MAX_SUBSCRIPTION_AUTHORIZATIONS} periods start before subscriptionExpires`);
  if (windows.length !== p.authorizations.length)
    return fail('verification-failed', `${windows.length} periods start before subscriptionExpires, the credential authorizes ${p.authorizations.length}`);

  const recipient = getAddress(r.recipient);
  const authorizations: CheckedPeriodAuthorization[] = [];
  for (const window of windows) {
    const a = p.authorizations[window.index]!;
    const at = `authorizations[${window.index}]`;
    if (getAddress(a.to) !== recipient) return fail('verification-failed', `${at} pays ${getAddress(a.to)}, the challenge asks for ${recipient}`);
    if (a.value !== r.amount) {
      return BigInt(a.value) < BigInt(r.amount)
        ? fail('payment-insufficient', `${at} is for ${a.value}, the challenge asks for ${r.amount} per period`)
        : fail('verification-failed', `${at} is for ${a.value}, the challenge asks for exactly ${r.amount} per period`);
    }
    if (BigInt(a.validAfter) !== window.validAfter || BigInt(a.validBefore) !== window.validBefore)
      return fail(
        'verification-failed',
        `${at} is valid (${a.validAfter}, ${a.validBefore}), period ${window.index} needs (${window.validAfter}, ${window.validBefore}) (start − 1, end)`,
      );
    if (a.nonce.toLowerCase() !== evmSubscriptionNonce(challenge, window.index))
      return fail('verification-failed', `${at}: the nonce is not keccak256(abi.encode(challengeId, realm, ${window.index}))`);
    authorizations.push({ ...window, nonce: a.nonce.toLowerCase() as Hex, signature: a.signature as Hex });
  }
  if (authorizations[0]!.validBefore <= nowSeconds) return fail('payment-expired', `period 0 ended at ${authorizations[0]!.validBefore}`);

  const payer = getAddress(p.from);
  if (source !== undefined && source !== evmSource(r.methodDetails.chainId, payer))
    return fail('verification-failed', `source ${source} does not name the payer ${payer}`);
  return ok({ request: r, period, payer, anchor: new Date(Number(anchorSeconds) * 1000), expiresAt, authorizations });
}

/** What a payer's wallet must provide to sign: EIP-712 typed data in, a signature out (a viem account's signTypedData). */
export type SignTypedData = (typedData: ReturnType<typeof transferWithAuthorizationTypedData>) => Promise<Hex>;

/** How far before its own clock the client helper anchors by default: room for clock skew between payer and verifier. */
export const DEFAULT_ANCHOR_LEAD_SECONDS = 5n;

/**
 * The client side: the payload that subscribes `from` to an evm subscription challenge, one signed authorization per
 * period from `anchorSeconds` until subscriptionExpires. The anchor must lie within the challenge's lifetime and not
 * after the verifier's now; by default it is the client's now − DEFAULT_ANCHOR_LEAD_SECONDS.
 */
export async function signEvmSubscription(
  challenge: Pick<Challenge, 'id' | 'realm' | 'request'>,
  {
    from,
    signTypedData,
    anchorSeconds,
    domain,
  }: { from: Address; signTypedData: SignTypedData; anchorSeconds?: bigint; domain?: { name: string; version: string } },
): Promise<EvmSubscriptionPayload> {
  const request = evmSubscriptionRequestSchema.parse(challenge.request);
  const tokenDomain = domain ?? request.methodDetails.domain;
  if (!tokenDomain) throw new Error("the challenge names no EIP-712 domain for the token: pass the token's name and version");
  const anchor = anchorSeconds ?? BigInt(Math.floor(Date.now() / 1000)) - DEFAULT_ANCHOR_LEAD_SECONDS;
  const windows = subscriptionWindows(anchor, subscriptionPeriod(request), new Date(request.subscriptionExpires));
  if (!windows) throw new Error(`more than ${MAX_SUBSCRIPTION_AUTHORIZATIONS} periods start before subscriptionExpires`);
  const fullDomain = { ...tokenDomain, chainId: request.methodDetails.chainId, verifyingContract: getAddress(request.currency) };
  const authorizations = await Promise.all(
    windows.map(async (window) => {
      const message = {
        from: getAddress(from),
        to: getAddress(request.recipient),
        value: BigInt(request.amount),
        validAfter: window.validAfter,
        validBefore: window.validBefore,
        nonce: evmSubscriptionNonce(challenge, window.index),
      };
      const signature = await signTypedData(transferWithAuthorizationTypedData(fullDomain, message));
      return {
        to: message.to,
        value: request.amount,
        validAfter: message.validAfter.toString(),
        validBefore: message.validBefore.toString(),
        nonce: message.nonce,
        signature,
      };
    }),
  );
  return { type: EVM_SUBSCRIPTION_CREDENTIAL_TYPE, from: getAddress(from), authorizations };
}

/** The MPP receipt of an evm subscription charge (§1.4): the settlement's tx hash, the same subscriptionId every time. */
export function evmSubscriptionReceipt(fields: {
  reference: Hex | string;
  subscriptionId: string;
  timestamp: Date;
  challengeId?: string;
  externalId?: string;
}) {
  return {
    status: 'success' as const,
    method: 'evm',
    reference: fields.reference,
    subscriptionId: fields.subscriptionId,
    timestamp: fields.timestamp.toISOString(),
    ...(fields.challengeId !== undefined && { challengeId: fields.challengeId }),
    ...(fields.externalId !== undefined && { externalId: fields.externalId }),
  };
}

/** `subscriptionId`: base64url without padding of 16 random bytes (22 characters), unique per facilitator. */
export const SUBSCRIPTION_ID_PATTERN = /^[A-Za-z0-9_-]{16,64}$/;
