/**
 * base64url helpers for the Payment scheme.
 *
 * Output: RFC 4648 §5 alphabet, never padded (the spec's `base64url_nopad`).
 * Input (matching mppx, whose decoder is ox's `Base64.toBytes`): either alphabet (`-_` or `+/`),
 * with or without trailing `=` padding. Anything else (other characters, whitespace, a length
 * that no byte string encodes, padding in the middle) is rejected rather than skipped, unlike
 * Node's lenient `Buffer.from(s, 'base64url')`.
 */
export class Base64UrlError extends Error {
  override readonly name = 'Base64UrlError';
}

const ACCEPTED = /^[A-Za-z0-9\-_+/]*={0,2}$/;

export function encodeBase64Url(input: Uint8Array | string): string {
  const bytes = typeof input === 'string' ? Buffer.from(input, 'utf8') : Buffer.from(input.buffer, input.byteOffset, input.byteLength);
  return bytes.toString('base64url');
}

export function decodeBase64Url(input: string): Uint8Array {
  if (!ACCEPTED.test(input)) throw new Base64UrlError('not base64url: unexpected character');
  const body = input.replace(/=+$/, '');
  if (input.length !== body.length && input.length % 4 !== 0) throw new Base64UrlError('not base64url: bad padding');
  if (body.length % 4 === 1) throw new Base64UrlError('not base64url: impossible length');
  const normalized = body.replace(/\+/g, '-').replace(/\//g, '_');
  return new Uint8Array(Buffer.from(normalized, 'base64url'));
}

/** Decodes base64url and then UTF-8 (rejecting invalid UTF-8). */
export function decodeBase64UrlText(input: string): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(decodeBase64Url(input));
  } catch (error) {
    if (error instanceof Base64UrlError) throw error;
    throw new Base64UrlError('not base64url: payload is not UTF-8');
  }
}
