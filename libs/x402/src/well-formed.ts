import { isAddress } from 'viem';
import { isAtomicString } from '@mp/money';
import { isCaip2 } from './networks';
import type { ExactEvmEip3009Payload, PaymentPayloadV1, PaymentPayloadV2, PaymentRequirementsV1, PaymentRequirementsV2 } from './schemas';

/**
 * Hand-written twins of the wire schemas (schemas.ts) for the requests every /verify and /settle carries: each answers
 * the input itself, typed, when the schema would accept it and give it back unchanged, and undefined otherwise, when
 * the schema decides (and names the problems). Never an answer the schema would not give: well-formed.spec.ts holds
 * each against its schema over generated inputs and their mutations.
 *
 * Hand-written for speed alone: zod's parse of a request and its EIP-3009 payload was 13 % of a /verify's busy time in
 * bench/x402-facilitator.mjs; with these checks a /verify costs 8–12 % less CPU (bench/README.md, "The request checked
 * by hand").
 */
export function wellFormedV2(payload: Record<string, unknown>, requirements: Record<string, unknown>): [PaymentPayloadV2, PaymentRequirementsV2] | undefined {
  if (!isPlainObject(payload) || !hasOnly(payload, PAYLOAD_V2_KEYS) || payload.x402Version !== 2) return undefined;
  if (!nullish(payload.resource, isResourceInfo) || !nullish(payload.extensions, isRecord)) return undefined;
  if (!isRequirementsV2(payload.accepted) || !isRecord(payload.payload) || !isRequirementsV2(requirements)) return undefined;
  return [payload as PaymentPayloadV2, requirements];
}

export function wellFormedV1(payload: Record<string, unknown>, requirements: Record<string, unknown>): [PaymentPayloadV1, PaymentRequirementsV1] | undefined {
  if (!isPlainObject(payload) || !isPlainObject(requirements) || !hasOnly(payload, PAYLOAD_V1_KEYS) || payload.x402Version !== 1) return undefined;
  if (!isNonEmpty(payload.scheme) || !isNonEmpty(payload.network) || !isRecord(payload.payload)) return undefined;
  const r = requirements;
  if (!hasOnly(r, REQUIREMENTS_V1_KEYS) || !isNonEmpty(r.scheme) || !isNonEmpty(r.network) || !isAtomicString(r.maxAmountRequired)) return undefined;
  if (!isNonEmpty(r.resource) || !isText(r.description, 4096) || !nullish(r.mimeType, (v) => isText(v, 256))) return undefined;
  if (!nullish(r.outputSchema, isRecord) || !isNonEmpty(r.payTo) || !isTimeout(r.maxTimeoutSeconds) || !isNonEmpty(r.asset)) return undefined;
  if (!nullish(r.extra, isRecord)) return undefined;
  return [payload as PaymentPayloadV1, r as PaymentRequirementsV1];
}

export function wellFormedEip3009(payload: Record<string, unknown>): ExactEvmEip3009Payload | undefined {
  if (!isPlainObject(payload) || !hasOnly(payload, EIP3009_KEYS) || !isSignatureHex(payload.signature)) return undefined;
  const a = payload.authorization;
  if (!isPlainObject(a) || !hasOnly(a, AUTHORIZATION_KEYS) || !isAtomicString(a.value) || !isAtomicString(a.validAfter)) return undefined;
  if (!isAtomicString(a.validBefore) || !isBytes32(a.nonce) || !isStrictAddress(a.from) || !isStrictAddress(a.to)) return undefined;
  return payload as ExactEvmEip3009Payload;
}

/** Exactly these members, each defined (the schemas are strict; an undefined member is left to them). */
function hasOnly(value: Record<string, unknown>, keys: ReadonlySet<string>): boolean {
  for (const key in value) if (!keys.has(key) || value[key] === undefined) return false;
  return true;
}

const PAYLOAD_V2_KEYS = new Set(['x402Version', 'resource', 'accepted', 'payload', 'extensions']);
const REQUIREMENTS_V2_KEYS = new Set(['scheme', 'network', 'amount', 'asset', 'payTo', 'maxTimeoutSeconds', 'extra']);
const RESOURCE_KEYS = new Set(['url', 'description', 'mimeType', 'serviceName', 'tags', 'iconUrl']);
const PAYLOAD_V1_KEYS = new Set(['x402Version', 'scheme', 'network', 'payload']);
const REQUIREMENTS_V1_KEYS = new Set([
  'scheme',
  'network',
  'maxAmountRequired',
  'resource',
  'description',
  'mimeType',
  'outputSchema',
  'payTo',
  'maxTimeoutSeconds',
  'asset',
  'extra',
]);
const EIP3009_KEYS = new Set(['signature', 'authorization']);
const AUTHORIZATION_KEYS = new Set(['from', 'to', 'value', 'validAfter', 'validBefore', 'nonce']);

function isRequirementsV2(r: unknown): r is PaymentRequirementsV2 {
  return (
    isPlainObject(r) &&
    hasOnly(r, REQUIREMENTS_V2_KEYS) &&
    isNonEmpty(r.scheme) &&
    isNonEmpty(r.network) &&
    isCaip2(r.network) &&
    isAtomicString(r.amount) &&
    isNonEmpty(r.asset) &&
    isNonEmpty(r.payTo) &&
    isTimeout(r.maxTimeoutSeconds) &&
    nullish(r.extra, isRecord)
  );
}

function isResourceInfo(r: unknown): boolean {
  return (
    isPlainObject(r) &&
    hasOnly(r, RESOURCE_KEYS) &&
    isNonEmpty(r.url) &&
    nullish(r.description, (v) => isText(v, 4096)) &&
    nullish(r.mimeType, (v) => isText(v, 256)) &&
    nullish(r.serviceName, (v) => isText(v, 32)) &&
    nullish(r.tags, isTags) &&
    nullish(r.iconUrl, (v) => isText(v, 2048))
  );
}

/** An array with no holes and nothing beside its elements, which the schema's copy would drop. */
function isTags(value: unknown): boolean {
  if (!Array.isArray(value) || Object.getPrototypeOf(value) !== Array.prototype || value.length > 5 || Object.keys(value).length !== value.length) return false;
  for (let i = 0; i < value.length; i++) if (!isText(value[i], 32)) return false;
  return true;
}

/** Absent or null (members that are there are defined: hasOnly), or as `check` says. */
function nullish(value: unknown, check: (value: unknown) => boolean): boolean {
  return value === undefined || value === null || check(value);
}

/** An object as JSON.parse makes them: the schemas answer copies with Object's prototype, whatever they were given. */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype;
}

/** An open object (`extra`, `payload`, `extensions`): one the schema copies member for member, so not one with `__proto__`. */
function isRecord(value: unknown): value is Record<string, unknown> {
  return isPlainObject(value) && !Object.prototype.hasOwnProperty.call(value, '__proto__');
}

function isText(value: unknown, max: number): value is string {
  return typeof value === 'string' && value.length <= max;
}

function isNonEmpty(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 1 && value.length <= 2048;
}

function isTimeout(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= 31_536_000;
}

const HEX = /^0x[0-9a-fA-F]*$/;

function isSignatureHex(value: unknown): value is string {
  return typeof value === 'string' && value.length >= 4 && value.length % 2 === 0 && value.length <= 16_386 && HEX.test(value);
}

function isBytes32(value: unknown): value is string {
  return typeof value === 'string' && value.length === 66 && HEX.test(value);
}

function isStrictAddress(value: unknown): value is string {
  return typeof value === 'string' && isAddress(value, { strict: true });
}
