import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { Base64UrlError, decodeBase64UrlText, encodeBase64Url } from './base64url';
import { canonicalize } from './jcs';
import { ok, type Result } from './problems';

/** mppx refuses `request` parameters longer than this (characters of base64url). */
export const MAX_REQUEST_PARAM_LENGTH = 16 * 1024;
/** mppx (and our servers) refuse HMAC secrets shorter than this many UTF-8 bytes. */
export const MIN_SECRET_BYTES = 32;
/** The only value the -02 draft allows for the `header` auth-param. */
export const PAYMENT_AUTHORIZATION_HEADER = 'Payment-Authorization';

const METHOD = /^[a-z][a-z0-9:_-]*$/;
const DIGEST = /^sha-256=/;

/**
 * A JSON object, kept as it is: a zod record would rebuild it and lose a member named "__proto__", which the
 * challenge id binds like any other.
 */
export const requestSchema = z.custom<Record<string, unknown>>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  'must be a JSON object',
);
export const opaqueMapSchema = z.record(z.string(), z.string());

/**
 * A challenge as the server issues it and the client echoes it. `request` is the decoded JSON object;
 * `opaque` stays in its wire form (base64url of JCS of a flat string map) because the binding is over
 * those exact characters; `encodeOpaque`/`decodeOpaque` convert.
 */
export const challengeSchema = z.object({
  id: z.string().min(1),
  realm: z.string(),
  method: z.string().regex(METHOD, 'method must match ^[a-z][a-z0-9:_-]*$'),
  intent: z.string().min(1),
  request: requestSchema,
  expires: z.iso.datetime({ offset: true }).optional(),
  digest: z.string().regex(DIGEST, 'digest must start with sha-256=').optional(),
  opaque: z.string().optional(),
  description: z.string().optional(),
  header: z.literal(PAYMENT_AUTHORIZATION_HEADER).optional(),
});

export type Challenge = z.infer<typeof challengeSchema>;
export type ChallengeFields = Omit<Challenge, 'id'>;

/** base64url(JCS(request)): the `request` auth-param and its slot in the id binding. */
export function serializeRequest(request: Record<string, unknown>): string {
  return encodeBase64Url(canonicalize(request));
}

export function encodeOpaque(map: Record<string, string>): string {
  return encodeBase64Url(canonicalize(map));
}

export type ChallengeError = { code: 'malformed-challenge'; detail: string };

export function decodeOpaque(opaque: string): Result<Record<string, string>, ChallengeError> {
  const decoded = decodeJson(opaque);
  if (!decoded.ok) return decoded;
  const parsed = opaqueMapSchema.safeParse(decoded.value);
  return parsed.success ? ok(parsed.data) : malformed('opaque is not a flat string-to-string map');
}

/**
 * The HMAC input: realm|method|intent|request|expires|digest[|header]|opaque, empty strings for
 * absent optional slots. The `header` slot exists only when the parameter is present and sits
 * before `opaque` (mppx/mpp-rs order, mpp-specs#362), so challenges without it bind exactly as
 * before the -02 draft.
 */
export function challengeBindingInput(fields: ChallengeFields): string {
  return [
    fields.realm,
    fields.method,
    fields.intent,
    serializeRequest(fields.request),
    fields.expires ?? '',
    fields.digest ?? '',
    ...(fields.header !== undefined ? [fields.header] : []),
    fields.opaque ?? '',
  ].join('|');
}

/** id = base64url_nopad(HMAC-SHA256(utf8(secret), utf8(binding input))). */
export function challengeId(secret: string, fields: ChallengeFields): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8'))
    .update(Buffer.from(challengeBindingInput(fields), 'utf8'))
    .digest('base64url');
}

/**
 * The key a merchant binds challenges with in its own process (issueChallenges), derived from the secret its
 * facilitator binds them with: the facilitator accepts both, so the merchant's 402 needs no round trip to it, and the
 * secret itself never leaves the facilitator. Rotating the secret rotates this key.
 */
export function issuerKey(secret: string): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update('mpp issuer key v1', 'utf8').digest('base64url');
}

export function assertSecret(secret: string): void {
  if (Buffer.byteLength(secret, 'utf8') < MIN_SECRET_BYTES) throw new Error(`the MPP challenge secret must be at least ${MIN_SECRET_BYTES} bytes`);
}

/** Issues a challenge whose id is bound to its fields. Throws on a short secret or invalid fields (programming errors). */
export function createChallenge(secret: string, fields: ChallengeFields): Challenge {
  assertSecret(secret);
  const { id: _ignored, ...checked } = challengeSchema.parse({ ...fields, id: 'x' });
  // The issued request is the one the wire carries (canonical JSON has no -0, no undefined members), so a client's
  // echo of it deep-equals what was issued.
  const request = JSON.parse(canonicalize(checked.request)) as Challenge['request'];
  return challengeSchema.parse({ id: challengeId(secret, { ...checked, request }), ...checked, request });
}

/** Constant-time check that `challenge.id` is the HMAC of its other fields under `secret`. */
export function isBound(secret: string, challenge: Challenge): boolean {
  const { id, ...fields } = challenge;
  let expected: string;
  try {
    expected = challengeId(secret, fields);
  } catch {
    return false;
  }
  const a = Buffer.from(id, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  return a.length === b.length && timingSafeEqual(a, b);
}

// ---- WWW-Authenticate ----------------------------------------------------------------------

/**
 * A quoted-string the way mppx writes it: `\` and `"` backslash-escaped, characters above
 * Latin-1 written as `\uXXXX` (header values must be ByteStrings), CR/LF refused.
 */
function quote(value: string): string {
  if (/[\r\n]/.test(value)) throw new Error('an auth-param value cannot contain CR or LF');
  const escaped = value
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"')
    .replace(/[\u0100-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return `"${escaped}"`;
}

/**
 * One `WWW-Authenticate` value: `Payment id="…", realm="…", method="…", intent="…", request="…"`
 * then description, digest, expires, opaque when present (mppx's order), then header.
 */
export function serializeChallenge(challenge: Challenge): string {
  const parts: [string, string][] = [
    ['id', challenge.id],
    ['realm', challenge.realm],
    ['method', challenge.method],
    ['intent', challenge.intent],
    ['request', serializeRequest(challenge.request)],
  ];
  if (challenge.description !== undefined) parts.push(['description', challenge.description]);
  if (challenge.digest !== undefined) parts.push(['digest', challenge.digest]);
  if (challenge.expires !== undefined) parts.push(['expires', challenge.expires]);
  if (challenge.opaque !== undefined) parts.push(['opaque', challenge.opaque]);
  if (challenge.header !== undefined) parts.push(['header', challenge.header]);
  return `Payment ${parts.map(([name, value]) => `${name}=${quote(value)}`).join(', ')}`;
}

/** Several offers in one field value (what a proxy may fold several header lines into). */
export function serializeChallenges(challenges: Challenge[]): string {
  return challenges.map(serializeChallenge).join(', ');
}

const malformed = (detail: string): { ok: false; error: ChallengeError } => ({ ok: false, error: { code: 'malformed-challenge', detail } });

function decodeJson(encoded: string): Result<unknown, ChallengeError> {
  try {
    return ok(JSON.parse(decodeBase64UrlText(encoded)) as unknown);
  } catch (error) {
    return malformed(error instanceof Base64UrlError ? error.message : 'not base64url-encoded JSON');
  }
}

const isSpace = (c: string | undefined) => c === ' ' || c === '\t';
const isTokenChar = (c: string | undefined) => c !== undefined && /[!#$%&'*+.^_`|~0-9A-Za-z-]/.test(c);

type Scheme = { scheme: string; params: Map<string, string> | null; token68?: string };

/**
 * Tokenises a challenge list (RFC 9110 §11.6.1): `scheme [ token68 / #auth-param ]`, comma separated.
 * Quoted strings are unescaped, including mppx's `\uXXXX` extension.
 */
function parseChallengeList(header: string): Result<Scheme[], ChallengeError> {
  const out: Scheme[] = [];
  let i = 0;
  const skipSpace = () => {
    while (isSpace(header[i])) i++;
  };
  const readToken = () => {
    const start = i;
    while (isTokenChar(header[i])) i++;
    return header.slice(start, i);
  };
  while (i < header.length) {
    while (isSpace(header[i]) || header[i] === ',') i++;
    if (i >= header.length) break;
    const scheme = readToken();
    if (!scheme) return malformed(`unexpected character ${JSON.stringify(header[i])} at ${i}`);
    const current: Scheme = { scheme, params: null };
    out.push(current);
    if (!isSpace(header[i])) {
      if (i < header.length && header[i] !== ',') return malformed(`unexpected character after scheme ${scheme}`);
      continue;
    }
    skipSpace();
    // auth-params until the next scheme (a token not followed by '=')
    for (;;) {
      const save = i;
      while (isSpace(header[i]) || header[i] === ',') i++;
      if (i >= header.length) break;
      const nameStart = i;
      const name = readToken();
      if (!name) return malformed(`unexpected character ${JSON.stringify(header[i])} at ${i}`);
      skipSpace();
      if (header[i] !== '=') {
        i = save;
        if (current.params === null && header.slice(nameStart).match(/^[A-Za-z0-9\-._~+/]+=*\s*(,|$)/) && save === nameStart) {
          // token68 directly after the scheme
          const match = /^[A-Za-z0-9\-._~+/]+=*/.exec(header.slice(nameStart))!;
          current.token68 = match[0];
          i = nameStart + match[0].length;
          continue;
        }
        break;
      }
      if (current.params === null && save === nameStart && /^=+\s*(,|$)/.test(header.slice(i))) {
        // token68 ending in padding, e.g. "Basic dXNlcg=="
        const match = /^=+/.exec(header.slice(i))!;
        current.token68 = name + match[0];
        i += match[0].length;
        continue;
      }
      i++;
      skipSpace();
      let value: string;
      if (header[i] === '"') {
        i++;
        let text = '';
        let closed = false;
        while (i < header.length) {
          const c = header[i++];
          if (c === '"') {
            closed = true;
            break;
          }
          if (c === '\\') {
            if (i >= header.length) break;
            const next = header[i++];
            const hex = header.slice(i, i + 4);
            if (next === 'u' && /^[0-9A-Fa-f]{4}$/.test(hex)) {
              text += String.fromCharCode(Number.parseInt(hex, 16));
              i += 4;
            } else text += next;
          } else text += c;
        }
        if (!closed) return malformed(`unterminated quoted-string for ${name}`);
        value = text;
      } else {
        value = readToken();
        if (!value) return malformed(`missing value for ${name}`);
      }
      skipSpace();
      if (i < header.length && header[i] !== ',') return malformed(`unexpected character after ${name}`);
      const key = name.toLowerCase();
      current.params ??= new Map();
      if (current.params.has(key)) return malformed(`duplicate parameter ${key}`);
      current.params.set(key, value);
    }
  }
  return ok(out);
}

/** Builds a challenge from its auth-params, applying mppx's checks. */
export function challengeFromParams(params: Map<string, string> | Record<string, string>): Result<Challenge, ChallengeError> {
  const get = (name: string) => (params instanceof Map ? params.get(name) : Object.hasOwn(params, name) ? params[name] : undefined);
  const request = get('request');
  if (request === undefined) return malformed('missing request parameter');
  if (request.length > MAX_REQUEST_PARAM_LENGTH) return malformed('request parameter too large');
  const decoded = decodeJson(request);
  if (!decoded.ok) return malformed(`request: ${decoded.error.detail}`);
  const opaque = get('opaque');
  if (opaque !== undefined) {
    const map = decodeOpaque(opaque);
    if (!map.ok) return malformed(`opaque: ${map.error.detail}`);
  }
  const candidate: Record<string, unknown> = { request: decoded.value };
  for (const name of ['id', 'realm', 'method', 'intent', 'expires', 'digest', 'opaque', 'description', 'header']) {
    const value = get(name);
    if (value !== undefined) candidate[name] = value;
  }
  const parsed = challengeSchema.safeParse(candidate);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return malformed(`${issue?.path.join('.') || 'challenge'}: ${issue?.message ?? 'invalid'}`);
  }
  return ok(parsed.data);
}

/**
 * Reads every `Payment` challenge from a `WWW-Authenticate` field value (one or several offers,
 * possibly next to other schemes, which are skipped). Fails when a Payment challenge is malformed
 * or when there is none.
 */
export function parseWwwAuthenticate(header: string): Result<Challenge[], ChallengeError> {
  const list = parseChallengeList(header);
  if (!list.ok) return list;
  const challenges: Challenge[] = [];
  for (const entry of list.value) {
    if (entry.scheme.toLowerCase() !== 'payment') continue;
    if (entry.params === null) return malformed('Payment challenge without auth-params');
    const challenge = challengeFromParams(entry.params);
    if (!challenge.ok) return challenge;
    challenges.push(challenge.value);
  }
  if (challenges.length === 0) return malformed('no Payment challenge');
  return ok(challenges);
}

/** Same as `parseWwwAuthenticate` over several header lines (e.g. `Headers#getSetCookie`-style arrays). */
export function parseWwwAuthenticateLines(lines: string[]): Result<Challenge[], ChallengeError> {
  const all: Challenge[] = [];
  for (const line of lines) {
    const list = parseChallengeList(line);
    if (!list.ok) return list;
    if (!list.value.some((entry) => entry.scheme.toLowerCase() === 'payment')) continue;
    const parsed = parseWwwAuthenticate(line);
    if (!parsed.ok) return parsed;
    all.push(...parsed.value);
  }
  return all.length === 0 ? malformed('no Payment challenge') : ok(all);
}
