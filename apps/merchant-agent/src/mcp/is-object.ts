/** A JSON object (not null, not an array): what `_meta`, `params` and a credential must be. */
export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
