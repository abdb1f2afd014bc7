import { getAddress, isAddressEqual, toHex } from 'viem';
import type { HexString } from '@mp/money';
import { deepEqual } from './canonical';
import type { ServedNetworks } from './exact-evm';
import { X402Reason } from './reasons';
import { issuesOf, zeroTimeoutProblem, type FieldIssue, type PaymentRequest } from './request';
import { uptoEvmPermit2PayloadSchema } from './schemas';

/** The x402 scheme that charges any amount up to a signed maximum, through Permit2 (scheme_upto_evm.md). */
export const UPTO_SCHEME = 'upto';
/** Permit2's canonical address: the verifying contract of every upto signature. */
export const UPTO_PERMIT2_ADDRESS: HexString = '0x000000000022D473030F116dDEE9F6B43aC78BA3';
/** x402's upto Permit2 proxy (CREATE2, the same on every chain): the permit's spender, and the contract we call. */
export const UPTO_PERMIT2_PROXY_ADDRESS: HexString = '0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002';
/** The reference's margin: a permit must outlive `now` by this much to be worth verifying. */
const DEADLINE_MARGIN_SECONDS = 6n;

/** A payer's Permit2 witness transfer for the upto proxy, as this facilitator reads it (addresses checksummed). */
export interface UptoPermit {
  /** The CAIP-2 id of the network, as this facilitator configures it. */
  network: string;
  /** The token, as this facilitator configures it (equal to permitted.token). */
  asset: HexString;
  owner: HexString;
  /** The signed maximum (permitted.amount). */
  maxAmount: bigint;
  spender: HexString;
  nonce: bigint;
  deadline: bigint;
  witness: { to: HexString; facilitator: HexString; validAfter: bigint };
  signature: HexString;
}

/** What the facilitator knows when it reads a request: the time, and its own signers on the request's network. */
export interface UptoContext {
  /** Unix seconds. */
  now: bigint;
  /** The addresses that may appear as witness.facilitator: our signers on the network. */
  facilitators: readonly string[];
  /**
   * verify: the requirements' amount is the maximum, and must equal the permit's. settle: it is the amount to charge,
   * which may be anything from 0 to the maximum (checked by the caller, after the permit itself is verified).
   */
  phase: 'verify' | 'settle';
}

export type UptoEvmDecoding =
  | { ok: true; permit: UptoPermit; /** what the requirements ask to charge now (the maximum at verify) */ amount: bigint }
  /** The payload is not an upto Permit2 payload at all: a 400 naming the fields. */
  | { ok: false; kind: 'malformed'; issues: FieldIssue[] }
  /** A well-formed payment refused before any chain is asked, with its x402 reason. */
  | { ok: false; kind: 'invalid'; reason: string; message: string; payer?: string };

/**
 * An x402 `upto` EVM request as the Permit2 witness transfer it carries, with every check that needs no chain, in
 * the reference facilitator's order (@x402/evm 2.27 verifyUptoPermit2): scheme, network, spender = the upto proxy,
 * witness.to = payTo, witness.facilitator = one of ours, deadline at least 6 s away, validAfter passed, permitted
 * amount = the requirements' amount (verify only), token = the asset; then (ours) the asset allowlist, and that a v2
 * payload's `accepted` is the requirements (at settle, but for the amount, which the server lowers to the charge).
 */
export function uptoEvmPermit(request: PaymentRequest, served: ServedNetworks, context: UptoContext): UptoEvmDecoding {
  const parsed = uptoEvmPermit2PayloadSchema.safeParse(request.payload);
  if (!parsed.success) return { ok: false, kind: 'malformed', issues: issuesOf(parsed.error, 'paymentPayload.payload') };
  const { permit2Authorization: p, signature } = parsed.data;
  const payer = getAddress(p.from);
  const fail = (reason: string, message: string): UptoEvmDecoding => ({ ok: false, kind: 'invalid', reason, message, payer });

  if (request.scheme !== UPTO_SCHEME || request.payloadScheme !== UPTO_SCHEME) {
    return fail(
      X402Reason.uptoEvmScheme,
      `the payload is for scheme "${request.payloadScheme}", the requirements for "${request.scheme}"; both must be "upto"`,
    );
  }
  const network = served.networkId(request.network, request.x402Version);
  if (!network) return fail(X402Reason.invalidNetwork, `network "${request.network}" is not served by this facilitator`);
  if (served.networkId(request.payloadNetwork, request.x402Version) !== network) {
    return fail(X402Reason.uptoEvmNetworkMismatch, `the payload is for network "${request.payloadNetwork}", the requirements for "${request.network}"`);
  }
  if (!isAddressEqual(p.spender, UPTO_PERMIT2_PROXY_ADDRESS)) {
    return fail(X402Reason.permit2Spender, `the permit's spender must be the x402 upto proxy ${UPTO_PERMIT2_PROXY_ADDRESS}, not ${p.spender}`);
  }
  if (!isAddressLike(request.payTo) || !isAddressEqual(p.witness.to, request.payTo)) {
    return fail(X402Reason.permit2RecipientMismatch, `the permit pays ${p.witness.to}, the requirements ask for ${request.payTo}`);
  }
  if (!context.facilitators.some((f) => isAddressEqual(f as HexString, p.witness.facilitator))) {
    return fail(
      X402Reason.uptoFacilitatorMismatch,
      `the permit names facilitator ${p.witness.facilitator}, which is not one of this facilitator's signers on ${network} (see extra.facilitatorAddress in /supported)`,
    );
  }
  const deadline = BigInt(p.deadline);
  if (deadline < context.now + DEADLINE_MARGIN_SECONDS) {
    return fail(X402Reason.permit2DeadlineExpired, `the permit's deadline ${deadline} has passed or is less than ${DEADLINE_MARGIN_SECONDS} s away`);
  }
  const validAfter = BigInt(p.witness.validAfter);
  if (validAfter > context.now) return fail(X402Reason.permit2NotYetValid, `the permit is valid only after ${validAfter}`);
  const maxAmount = BigInt(p.permitted.amount);
  const amount = BigInt(request.amount);
  if (context.phase === 'verify' && maxAmount !== amount) {
    return fail(X402Reason.permit2AmountMismatch, `the permit allows up to ${maxAmount}, the requirements' maximum is ${amount}`);
  }
  if (!isAddressLike(request.asset) || !isAddressEqual(p.permitted.token, request.asset)) {
    return fail(X402Reason.permit2TokenMismatch, `the permit is for token ${p.permitted.token}, the requirements for ${request.asset}`);
  }
  const asset = served.assetAddress(network, request.asset);
  if (!asset) return fail(X402Reason.invalidPaymentRequirements, `asset ${request.asset} is not accepted on ${network}`);
  const noTime = zeroTimeoutProblem(request);
  if (noTime) return fail(X402Reason.invalidPaymentRequirements, noTime);
  if (request.accepted) {
    const differing = acceptedDifferences(request, context.phase);
    if (differing.length) {
      return fail(X402Reason.invalidPaymentRequirements, `paymentPayload.accepted differs from paymentRequirements in: ${differing.join(', ')}`);
    }
    if (context.phase === 'settle' && BigInt(request.accepted.amount) !== maxAmount) {
      return fail(X402Reason.permit2AmountMismatch, `the permit allows up to ${maxAmount}, the accepted requirements' maximum is ${request.accepted.amount}`);
    }
  }
  return {
    ok: true,
    amount,
    permit: {
      network,
      asset,
      owner: payer,
      maxAmount,
      spender: getAddress(p.spender),
      nonce: BigInt(p.nonce),
      deadline,
      witness: { to: getAddress(p.witness.to), facilitator: getAddress(p.witness.facilitator), validAfter },
      signature: signature as HexString,
    },
  };
}

/** The permit's nonce as a 32-byte hex word: how payment records key a Permit2 nonce beside EIP-3009's bytes32 ones. */
export function permitNonceKey(nonce: bigint): HexString {
  return toHex(nonce, { size: 32 });
}

/** The upto proxy's `settle` arguments for charging `amount` under the permit (the ABI lives in @mp/chain). */
export function uptoSettleArgs(permit: UptoPermit, amount: bigint) {
  return [
    { permitted: { token: permit.asset, amount: permit.maxAmount }, nonce: permit.nonce, deadline: permit.deadline },
    amount,
    permit.owner,
    { to: permit.witness.to, facilitator: permit.witness.facilitator, validAfter: permit.witness.validAfter },
    permit.signature,
  ] as const;
}

/** The EIP-712 message the payer signed (types: uptoPermit2Types in @mp/chain; domain: ("Permit2", chainId, UPTO_PERMIT2_ADDRESS)). */
export function uptoTypedMessage(permit: UptoPermit) {
  return {
    permitted: { token: permit.asset, amount: permit.maxAmount },
    spender: permit.spender,
    nonce: permit.nonce,
    deadline: permit.deadline,
    witness: permit.witness,
  };
}

function acceptedDifferences(request: PaymentRequest, phase: UptoContext['phase']): string[] {
  const accepted = request.accepted!;
  const requirements = {
    scheme: request.scheme,
    network: request.network,
    amount: request.amount,
    asset: request.asset,
    payTo: request.payTo,
    maxTimeoutSeconds: request.maxTimeoutSeconds,
    extra: request.extra,
  };
  return (Object.keys(requirements) as (keyof typeof requirements)[]).filter(
    (k) => !(phase === 'settle' && k === 'amount') && !deepEqual(accepted[k] ?? (k === 'extra' ? {} : undefined), requirements[k]),
  );
}

function isAddressLike(value: string): value is HexString {
  return /^0x[0-9a-fA-F]{40}$/.test(value);
}
