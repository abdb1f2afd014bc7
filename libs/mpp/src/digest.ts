import { createHash } from 'node:crypto';

/** RFC 9530 `Content-Digest`-style value of a request body, as a challenge's `digest` binds it: `sha-256=:<base64>:`. */
export function bodyDigest(body: Uint8Array | string): string {
  return `sha-256=:${createHash('sha256').update(body).digest('base64')}:`;
}
