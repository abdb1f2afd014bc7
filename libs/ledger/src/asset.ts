/**
 * An asset names one ledger (TigerBeetle's `ledger`): only accounts of the same asset can transact. It is written
 * `<namespace>/<token>`: `eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913` (CAIP-2 network, token
 * contract) or `stripe/usd` (rail, currency). It starts with a lowercase letter or digit; a 0x-hex token is compared
 * case-insensitively (stored lowercase), anything else exactly as written.
 */
export const ASSET_PATTERN = /^[a-z0-9][A-Za-z0-9:._-]{0,95}\/[A-Za-z0-9:._%-]{1,128}$/;

/** The stored form of an asset, or undefined when it is not one. */
export function normalizeAsset(input: unknown): string | undefined {
  if (typeof input !== 'string' || !ASSET_PATTERN.test(input)) return undefined;
  const slash = input.indexOf('/');
  const token = input.slice(slash + 1);
  return /^0x[0-9a-fA-F]+$/.test(token) ? `${input.slice(0, slash)}/${token.toLowerCase()}` : input;
}
