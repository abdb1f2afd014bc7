import { z } from 'zod';
import { decodeBase64UrlText, encodeBase64Url } from './base64url';
import { challengeSchema, encodeOpaque, isBound, MAX_REQUEST_PARAM_LENGTH, serializeRequest, type Challenge } from './challenge';
import { fail, ok, type Result } from './problems';

/**
 * `Authorization: Payment <base64url_nopad(JSON)>` (or `Payment-Authorization:` with the same value
 * when the challenge's `header` parameter selected it). The JSON is
 * `{ challenge: { …echoed params, request: "<base64url>" }, payload, source? }`.
 */
export interface Credential {
  challenge: Challenge;
  payload: unknown;
  source?: string;
}

/** A credential as it travels: base64url JSON of this, after `Payment ` (the challenge echoed, the method's payload). */
export const credentialWireSchema = z.object({
  challenge: z.looseObject({
    request: z.string().max(MAX_REQUEST_PARAM_LENGTH),
    // mppx still accepts the legacy object-shaped opaque and re-encodes it.
    opaque: z.union([z.string(), z.record(z.string(), z.string())]).optional(),
  }),
  payload: z.unknown().refine((value) => value !== undefined, 'payload is required'),
  source: z.string().optional(),
});

/** Reads one credential from an `Authorization` or `Payment-Authorization` field value. */
export function parseCredential(header: string): Result<Credential> {
  if (typeof header !== 'string') return fail('malformed-credential', 'no credential');
  // Several comma-separated credentials (RFC 9110 list); token68 never contains a comma.
  const payments = header
    .split(',')
    .map((part) => part.trim())
    .filter((part) => /^payment(\s|$)/i.test(part));
  if (payments.length === 0) return fail('malformed-credential', 'no Payment credential');
  if (payments.length > 1) return fail('bad-request', 'more than one Payment credential');
  const token = payments[0]!.slice('payment'.length).trim();
  if (!token) return fail('malformed-credential', 'empty Payment credential');

  let json: unknown;
  try {
    json = JSON.parse(decodeBase64UrlText(token));
  } catch {
    return fail('malformed-credential', 'credential is not base64url-encoded JSON');
  }
  const wire = credentialWireSchema.safeParse(json);
  if (!wire.success) return fail('malformed-credential', describe(wire.error));

  let request: unknown;
  try {
    request = JSON.parse(decodeBase64UrlText(wire.data.challenge.request));
  } catch {
    return fail('malformed-credential', 'challenge.request is not base64url-encoded JSON');
  }
  const { opaque, ...echo } = wire.data.challenge;
  const challenge = challengeSchema.safeParse({
    ...echo,
    request,
    ...(opaque !== undefined && { opaque: typeof opaque === 'string' ? opaque : encodeOpaque(opaque) }),
  });
  if (!challenge.success) return fail('malformed-credential', `challenge.${describe(challenge.error)}`);
  return ok({
    challenge: challenge.data,
    payload: wire.data.payload,
    ...(wire.data.source !== undefined && { source: wire.data.source }),
  });
}

function describe(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue?.path.join('.') || 'credential'}: ${issue?.message ?? 'invalid'}`;
}

/**
 * `Payment <token>` as mppx writes it: `JSON.stringify` of the wire object (challenge members in
 * mppx's order, `request` re-encoded as base64url(JCS)), then base64url without padding.
 */
export function serializeCredential(credential: Credential): string {
  const { request, opaque, id, realm, method, intent, description, digest, expires, header } = credential.challenge;
  const challenge = {
    ...(description !== undefined && { description }),
    ...(digest !== undefined && { digest }),
    ...(expires !== undefined && { expires }),
    ...(header !== undefined && { header }),
    id,
    intent,
    method,
    realm,
    ...(opaque !== undefined && { opaque }),
    request: serializeRequest(request),
  };
  const wire = { challenge, payload: credential.payload, ...(credential.source && { source: credential.source }) };
  return `Payment ${encodeBase64Url(JSON.stringify(wire))}`;
}

export interface VerifyBindingOptions {
  /** The current time; injected so callers and tests control the clock. */
  now: Date;
  /** Secrets retired by rotation, still accepted until their challenges expire. */
  previousSecrets?: string[];
  /** Which header carried the credential; a challenge with `header="Payment-Authorization"` must arrive there. */
  via?: 'Authorization' | 'Payment-Authorization';
}

/**
 * Checks that the echoed challenge was issued under `secret` (id = HMAC of the other fields,
 * constant-time compare) and has not expired. Proves issuance only: the caller still compares
 * `request` with the route's expected terms and claims the id as used.
 */
export function verifyBinding(secret: string, credential: Credential, options: VerifyBindingOptions): Result<Challenge> {
  const { challenge } = credential;
  const secrets = [secret, ...(options.previousSecrets ?? [])];
  if (!secrets.some((candidate) => isBound(candidate, challenge))) return fail('invalid-challenge', 'challenge was not issued by this server');
  if (challenge.expires !== undefined) {
    const expires = Date.parse(challenge.expires);
    if (!Number.isFinite(expires)) return fail('malformed-credential', 'challenge.expires is not a timestamp');
    if (options.now.getTime() >= expires) return fail('payment-expired', `challenge expired at ${challenge.expires}`);
  }
  if (options.via !== undefined && challenge.header !== undefined && options.via !== challenge.header) {
    return fail('malformed-credential', `credential must be sent in ${challenge.header}`);
  }
  return ok(challenge);
}
