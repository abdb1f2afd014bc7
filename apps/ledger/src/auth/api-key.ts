/**
 * The API key a request presents: `Authorization: Bearer <key>`, else `X-API-Key: <key>` (the facilitator's
 * rule). Anything longer than a key could be, or with characters no key has, is not passed on.
 */
export function presentedApiKey(headers: Record<string, string | string[] | undefined>): string | undefined {
  const authorization = headers.authorization;
  const bearer = typeof authorization === 'string' ? /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(authorization)?.[1] : undefined;
  const apiKey = headers['x-api-key'];
  const key = bearer ?? (typeof apiKey === 'string' ? apiKey.trim() : undefined);
  return key && /^[\x21-\x7e]{1,256}$/.test(key) ? key : undefined;
}
