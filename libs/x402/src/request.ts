import type { z } from 'zod';
import { canonicalJson, sha256Hex } from './canonical';
import {
  facilitatorRequestEnvelopeSchema,
  paymentIdentifierInfoSchema,
  paymentPayloadV1Schema,
  paymentPayloadV2Schema,
  paymentRequirementsV1Schema,
  paymentRequirementsV2Schema,
  type PaymentPayloadV1,
  type PaymentPayloadV2,
  type PaymentRequirementsV1,
  type PaymentRequirementsV2,
} from './schemas';
import { X402Reason } from './reasons';
import { wellFormedV1, wellFormedV2 } from './well-formed';

export const PAYMENT_IDENTIFIER = 'payment-identifier';

/** Missing members read "is required" rather than zod's "expected string, received undefined". */
const PARSE = { error: (issue: { input?: unknown }) => (issue.input === undefined ? 'is required' : undefined) };

/** One problem with one field, named by its dotted path in the request body. */
export interface FieldIssue {
  field: string;
  message: string;
}

/** A /verify or /settle request with the v1/v2 differences folded away. Networks are still as the client sent them. */
export interface PaymentRequest {
  x402Version: 1 | 2;
  /** What the requirements ask for. */
  scheme: string;
  network: string;
  amount: string;
  asset: string;
  payTo: string;
  maxTimeoutSeconds: number;
  extra: Record<string, unknown>;
  /** What the payload says it pays (v2: `accepted`; v1: the payload's own scheme and network). */
  payloadScheme: string;
  payloadNetwork: string;
  accepted?: PaymentRequirementsV2;
  /** The scheme-specific part, validated by the scheme. */
  payload: Record<string, unknown>;
  paymentIdentifier?: string;
  /** sha256 of the canonical JSON of payload and requirements: equal requests, equal hash. */
  fingerprint: string;
}

export type DecodeResult =
  | { ok: true; request: PaymentRequest }
  | { ok: false; kind: 'malformed'; issues: FieldIssue[] }
  | { ok: false; kind: 'invalid'; reason: string; message: string };

/** A request's two parts, well-formed by its version's schemas. */
type VersionParts =
  | { version: 2; payload: PaymentPayloadV2; requirements: PaymentRequirementsV2 }
  | { version: 1; payload: PaymentPayloadV1; requirements: PaymentRequirementsV1 };
/** …with the envelope's two members they came from (the fingerprint's input). */
type Parts = VersionParts & { envelope: Envelope };
type Envelope = { paymentPayload: Record<string, unknown>; paymentRequirements: Record<string, unknown> };

export function decodePaymentRequest(body: unknown): DecodeResult {
  const parts = wellFormedParts(body) ?? parsedParts(body);
  if ('ok' in parts) return parts;
  // computed when asked for (a settlement's claim), not for every /verify: canonical JSON and a hash cost as much as the
  // rest of the decoding (bench/README.md, "Pipelined statements", the verify profile)
  let fingerprint: string | undefined;
  const { paymentPayload, paymentRequirements } = parts.envelope;
  const fingerprintOf = () => (fingerprint ??= sha256Hex(canonicalJson({ paymentPayload, paymentRequirements })));

  if (parts.version === 2) {
    const { payload, requirements: r } = parts;
    const identifier = readPaymentIdentifier(payload.extensions ?? undefined);
    if (!identifier.ok) return { ok: false, kind: 'malformed', issues: [identifier.issue] };
    return {
      ok: true,
      request: {
        x402Version: 2,
        scheme: r.scheme,
        network: r.network,
        amount: r.amount,
        asset: r.asset,
        payTo: r.payTo,
        maxTimeoutSeconds: r.maxTimeoutSeconds,
        extra: r.extra ?? {},
        payloadScheme: payload.accepted.scheme,
        payloadNetwork: payload.accepted.network,
        accepted: payload.accepted,
        payload: payload.payload,
        paymentIdentifier: identifier.id,
        get fingerprint() {
          return fingerprintOf();
        },
      },
    };
  }

  const { payload, requirements: r } = parts;
  return {
    ok: true,
    request: {
      x402Version: 1,
      scheme: r.scheme,
      network: r.network,
      amount: r.maxAmountRequired,
      asset: r.asset,
      payTo: r.payTo,
      maxTimeoutSeconds: r.maxTimeoutSeconds,
      extra: r.extra ?? {},
      payloadScheme: payload.scheme,
      payloadNetwork: payload.network,
      payload: payload.payload,
      get fingerprint() {
        return fingerprintOf();
      },
    },
  };
}

/** The common request, checked by hand (well-formed.ts); undefined when the schemas must decide. */
function wellFormedParts(body: unknown): Parts | undefined {
  if (!isObject(body)) return undefined;
  for (const key in body) if (key !== 'x402Version' && key !== 'paymentPayload' && key !== 'paymentRequirements') return undefined;
  const { paymentPayload, paymentRequirements } = body;
  if (!isObject(paymentPayload) || !isObject(paymentRequirements)) return undefined;
  if (body.x402Version !== undefined && body.x402Version !== paymentPayload.x402Version) return undefined;
  const envelope = { paymentPayload, paymentRequirements };
  if (paymentPayload.x402Version === 2) {
    const parts = wellFormedV2(paymentPayload, paymentRequirements);
    return parts && { version: 2, payload: parts[0], requirements: parts[1], envelope };
  }
  if (paymentPayload.x402Version === 1) {
    const parts = wellFormedV1(paymentPayload, paymentRequirements);
    return parts && { version: 1, payload: parts[0], requirements: parts[1], envelope };
  }
  return undefined;
}

/** Any request, by the schemas: its parts, or what is wrong with it. */
function parsedParts(body: unknown): Parts | Extract<DecodeResult, { ok: false }> {
  const envelope = facilitatorRequestEnvelopeSchema.safeParse(body, PARSE);
  if (!envelope.success) {
    // Name the envelope's problems and, where the parts are there, theirs too: one round trip to fix them all.
    const parts = body as { paymentPayload?: unknown; paymentRequirements?: unknown } | null;
    const inner =
      typeof parts === 'object' && parts !== null && isObject(parts.paymentPayload) && isObject(parts.paymentRequirements)
        ? innerIssues(parts.paymentPayload, parts.paymentRequirements)
        : [];
    return { ok: false, kind: 'malformed', issues: [...envelopeIssues(envelope.error), ...inner] };
  }
  const { paymentPayload, paymentRequirements } = envelope.data;
  const version = paymentPayload.x402Version;
  if (version !== 1 && version !== 2) {
    return { ok: false, kind: 'invalid', reason: X402Reason.invalidX402Version, message: `x402Version ${version} is not supported; use 1 or 2` };
  }
  if (envelope.data.x402Version !== undefined && envelope.data.x402Version !== version) {
    return {
      ok: false,
      kind: 'invalid',
      reason: X402Reason.invalidX402Version,
      message: `x402Version ${envelope.data.x402Version} differs from paymentPayload.x402Version ${version}`,
    };
  }
  const parsed = partsOf(version, paymentPayload, paymentRequirements);
  if (!parsed.ok) return { ok: false, kind: 'malformed', issues: parsed.issues };
  return { ...parsed.parts, envelope: { paymentPayload, paymentRequirements } };
}

type IdentifierResult = { ok: true; id?: string } | { ok: false; issue: FieldIssue };

function readPaymentIdentifier(extensions: Record<string, unknown> | undefined): IdentifierResult {
  const extension = extensions?.[PAYMENT_IDENTIFIER];
  if (extension === undefined || extension === null) return { ok: true };
  const field = `paymentPayload.extensions.${PAYMENT_IDENTIFIER}.info`;
  if (typeof extension !== 'object' || Array.isArray(extension))
    return { ok: false, issue: { field: field.replace(/\.info$/, ''), message: 'must be an object' } };
  const info = paymentIdentifierInfoSchema.safeParse((extension as { info?: unknown }).info);
  if (!info.success) {
    const [first] = issuesOf(info.error, field);
    return { ok: false, issue: first ?? { field, message: 'is invalid' } };
  }
  if (info.data.required === true && info.data.id === undefined) {
    return { ok: false, issue: { field: `${field}.id`, message: 'is required by the resource server but missing' } };
  }
  return { ok: true, id: info.data.id };
}

export function issuesOf(error: z.ZodError | undefined, prefix: string): FieldIssue[] {
  if (!error) return [];
  return error.issues.map((issue) => {
    const path = [prefix, ...issue.path.map(String)];
    if (issue.code === 'unrecognized_keys') {
      return { field: path.join('.'), message: `unknown field(s): ${issue.keys.join(', ')}` };
    }
    return { field: path.join('.'), message: issue.message };
  });
}

function envelopeIssues(error: z.ZodError): FieldIssue[] {
  return issuesOf(error, 'body').map((i) => ({ ...i, field: i.field.replace(/^body\.?/, '') || 'body' }));
}

function innerIssues(paymentPayload: Record<string, unknown>, paymentRequirements: Record<string, unknown>): FieldIssue[] {
  const version = paymentPayload.x402Version;
  if (version !== 1 && version !== 2) return [];
  const parsed = partsOf(version, paymentPayload, paymentRequirements);
  return parsed.ok ? [] : parsed.issues;
}

/** Both parts by their version's schemas: their data, or the issues of both. */
function partsOf(
  version: 1 | 2,
  paymentPayload: unknown,
  paymentRequirements: unknown,
): { ok: true; parts: VersionParts } | { ok: false; issues: FieldIssue[] } {
  if (version === 2) {
    const parsed = parseParts(paymentPayloadV2Schema, paymentRequirementsV2Schema, paymentPayload, paymentRequirements);
    return parsed.ok ? { ok: true, parts: { version, payload: parsed.payload, requirements: parsed.requirements } } : parsed;
  }
  const parsed = parseParts(paymentPayloadV1Schema, paymentRequirementsV1Schema, paymentPayload, paymentRequirements);
  return parsed.ok ? { ok: true, parts: { version, payload: parsed.payload, requirements: parsed.requirements } } : parsed;
}

/** Both parts by their version's schemas, each parsed once: their data, or the issues of both. */
function parseParts<P extends z.ZodType, R extends z.ZodType>(
  payloadSchema: P,
  requirementsSchema: R,
  paymentPayload: unknown,
  paymentRequirements: unknown,
): { ok: true; payload: z.output<P>; requirements: z.output<R> } | { ok: false; issues: FieldIssue[] } {
  const [payload, requirements] = [payloadSchema.safeParse(paymentPayload, PARSE), requirementsSchema.safeParse(paymentRequirements, PARSE)];
  if (payload.success && requirements.success) return { ok: true, payload: payload.data, requirements: requirements.data };
  return { ok: false, issues: [...issuesOf(payload.error, 'paymentPayload'), ...issuesOf(requirements.error, 'paymentRequirements')] };
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Why requirements with `maxTimeoutSeconds` 0 pay for nothing: a payer given no time cannot authorize a payment (an
 * EIP-3009 or Permit2 window closing as it opens), and x402's own PaymentRequirements schema wants it positive. The
 * wire accepts 0 only for what a resource server sends on its own behalf: @x402/evm's batch-settlement channel
 * manager claims, settles and refunds with it. Undefined when the timeout is positive.
 */
export function zeroTimeoutProblem(request: Pick<PaymentRequest, 'maxTimeoutSeconds'>): string | undefined {
  return request.maxTimeoutSeconds === 0
    ? 'paymentRequirements.maxTimeoutSeconds is 0: a payment needs a positive number of seconds to be authorized and settled'
    : undefined;
}
