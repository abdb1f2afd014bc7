import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * Merchant API keys: `mpk_<prefix>_<secret>`, both parts lowercase base32 (a–z, 2–7); the 8-character prefix
 * (40 bits) finds the key and names it in listings, the 32-character secret carries 160 random bits. Only the
 * sha256 of the whole key is stored. A salted slow hash is unnecessary: the key is random, not a password, so
 * there is nothing to guess from a leaked hash. scripts/merchants.mjs makes keys the same way.
 */
export const API_KEY_PATTERN = /^mpk_([a-z2-7]{8})_[a-z2-7]{32}$/;

const ALPHABET = 'abcdefghijklmnopqrstuvwxyz234567';

function base32(length: number): string {
  // 256 is a multiple of 32, so masking a random byte to 5 bits is uniform.
  return [...randomBytes(length)].map((b) => ALPHABET[b & 31]).join('');
}

export function generateApiKey(): { key: string; prefix: string; hash: string } {
  const prefix = base32(8);
  const key = `mpk_${prefix}_${base32(32)}`;
  return { key, prefix, hash: hashApiKey(key) };
}

/** The lookup prefix of a well-formed key; undefined for anything else (which is then never looked up). */
export function apiKeyPrefix(key: string): string | undefined {
  return API_KEY_PATTERN.exec(key)?.[1];
}

export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

/** Constant-time comparison of two sha256 hex digests. */
export function sameHash(a: string, b: string): boolean {
  const x = Buffer.from(a, 'hex');
  const y = Buffer.from(b, 'hex');
  return x.length === 32 && y.length === 32 && timingSafeEqual(x, y);
}

/** The key a request presents: `Authorization: Bearer <key>`, else `X-API-Key: <key>`. */
export function presentedApiKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const authorization = headers.authorization;
  if (typeof authorization === 'string') {
    const match = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization);
    if (match) return match[1];
  }
  const apiKey = headers['x-api-key'];
  if (typeof apiKey === 'string' && apiKey.trim()) return apiKey.trim();
  return typeof authorization === 'string' && authorization.trim() ? authorization.trim() : undefined;
}
