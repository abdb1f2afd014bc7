import { getAddress } from 'viem';
import type { HexString, TransferAuthorization } from '@mp/money';
import { deepEqual } from './canonical';
import { X402Reason } from './reasons';
import { issuesOf, zeroTimeoutProblem, type FieldIssue, type PaymentRequest } from './request';
import { exactEvmEip3009PayloadSchema } from './schemas';
import { wellFormedEip3009 } from './well-formed';

/** The x402 scheme this facilitator serves on EVM: `exact`, with an EIP-3009 authorization. */
export const EXACT_SCHEME = 'exact';

/** What the facilitator serves, as the decoding needs to know it (the names and assets are configuration). */
export interface ServedNetworks {
  /** The CAIP-2 id of a served network named by a CAIP-2 id or an x402 v1 name; undefined when not served. */
  networkId(network: string, x402Version: 1 | 2): string | undefined;
  /** The configured address of an asset accepted on a served network (CAIP-2); undefined when not accepted. */
  assetAddress(networkId: string, asset: string): HexString | undefined;
}

export type ExactEvmDecoding =
  | { ok: true; authorization: TransferAuthorization }
  /** The payload is not an EIP-3009 payload at all: a 400 naming the fields. */
  | { ok: false; kind: 'malformed'; issues: FieldIssue[] }
  /** A well-formed payment this facilitator refuses before any chain is asked, with its x402 reason. */
  | { ok: false; kind: 'invalid'; reason: string; message: string; payer?: string };

/**
 * An x402 `exact` EVM request (payload and requirements) as the EIP-3009 authorization it carries, with the checks
 * that need no chain, in the reference facilitator's order: payload shape (Permit2 is not accepted yet), scheme,
 * network, the payload's scheme, the token's EIP-712 domain in `extra`, the payload's network, the asset allowlist,
 * and that a v2 payload's `accepted` is the requirements.
 */
export function exactEvmAuthorization(request: PaymentRequest, served: ServedNetworks): ExactEvmDecoding {
  const parsed = eip3009Payload(request.payload);
  if (!parsed.success) {
    if (request.payload && typeof request.payload === 'object' && 'permit2Authorization' in request.payload) {
      return invalid(X402Reason.unsupportedPayloadType, 'Permit2 payloads are not accepted by this facilitator yet; sign an EIP-3009 authorization');
    }
    return { ok: false, kind: 'malformed', issues: issuesOf(parsed.error, 'paymentPayload.payload') };
  }
  const { authorization, signature } = parsed.data;
  const payer = getAddress(authorization.from);
  const fail = (reason: string, message: string) => invalid(reason, message, payer);

  if (request.scheme !== EXACT_SCHEME) return fail(X402Reason.unsupportedScheme, `scheme "${request.scheme}" is not supported; use "exact"`);
  const network = served.networkId(request.network, request.x402Version);
  if (!network) return fail(X402Reason.invalidNetwork, `network "${request.network}" is not served by this facilitator`);
  if (request.payloadScheme !== EXACT_SCHEME)
    return fail(X402Reason.exactEvmScheme, `the payload is for scheme "${request.payloadScheme}", the requirements for "exact"`);
  const { name, version } = request.extra;
  if (typeof name !== 'string' || typeof version !== 'string' || !name || !version) {
    return fail(X402Reason.exactEvmMissingEip712Domain, "paymentRequirements.extra must carry the token's EIP-712 domain as {name, version}");
  }
  const noTime = zeroTimeoutProblem(request);
  if (noTime) return fail(X402Reason.invalidPaymentRequirements, noTime);
  if (served.networkId(request.payloadNetwork, request.x402Version) !== network) {
    return fail(X402Reason.exactEvmNetworkMismatch, `the payload is for network "${request.payloadNetwork}", the requirements for "${request.network}"`);
  }
  const asset = served.assetAddress(network, request.asset);
  if (!asset) return fail(X402Reason.invalidPaymentRequirements, `asset ${request.asset} is not accepted on ${network}`);
  if (request.accepted) {
    const { accepted } = request;
    const requirements = {
      scheme: request.scheme,
      network: request.network,
      amount: request.amount,
      asset: request.asset,
      payTo: request.payTo,
      maxTimeoutSeconds: request.maxTimeoutSeconds,
      extra: request.extra,
    };
    // equal strings and numbers need no canonical JSON (two per member, on every request)
    const differing = (Object.keys(requirements) as (keyof typeof requirements)[]).filter(
      (k) => accepted[k] !== requirements[k] && !deepEqual(accepted[k] ?? (k === 'extra' ? {} : undefined), requirements[k]),
    );
    if (differing.length) {
      return fail(X402Reason.invalidPaymentRequirements, `paymentPayload.accepted differs from paymentRequirements in: ${differing.join(', ')}`);
    }
  }
  return {
    ok: true,
    authorization: {
      network,
      asset,
      from: payer,
      to: getAddress(authorization.to),
      value: BigInt(authorization.value),
      validAfter: BigInt(authorization.validAfter),
      validBefore: BigInt(authorization.validBefore),
      nonce: authorization.nonce.toLowerCase() as HexString,
      signature: signature as HexString,
      domain: { name, version },
      requirement: { payTo: request.payTo, amount: BigInt(request.amount) },
    },
  };
}

/** The payload checked by hand when it is the common one (well-formed.ts), by its schema otherwise. */
function eip3009Payload(payload: Record<string, unknown>): ReturnType<typeof exactEvmEip3009PayloadSchema.safeParse> {
  const data = wellFormedEip3009(payload);
  return data ? { success: true, data } : exactEvmEip3009PayloadSchema.safeParse(payload);
}

function invalid(reason: string, message: string, payer?: string): ExactEvmDecoding {
  return { ok: false, kind: 'invalid', reason, message, ...(payer ? { payer } : {}) };
}
