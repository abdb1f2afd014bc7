import { invalidRequest, missingParam, unknownParam } from './errors';
import type { FormObject, FormValue } from './form';

/**
 * Readers for decoded form parameters. Each takes the raw value and its parameter name as Stripe spells it in errors
 * (`usage_limits[max_amount]`). An empty string counts as "not given", as it does for Stripe's optional params.
 */

/** Refuses any parameter not in `allowed` (Stripe answers `parameter_unknown`); `expand` is always allowed. */
export function onlyParams(params: FormObject, allowed: readonly string[], prefix?: string): void {
  for (const key of Object.keys(params)) {
    if (key === 'expand' && !prefix) continue;
    if (!allowed.includes(key)) throw unknownParam(prefix ? `${prefix}[${key}]` : key);
  }
}

export function readString(value: FormValue | undefined, param: string): string | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'string') throw invalidRequest(`Invalid string: ${param} must be a string, not an object or array.`, { param });
  return value;
}

export function readInteger(value: FormValue | undefined, param: string, bounds: { min?: number; max?: number } = {}): number | undefined {
  const text = readString(value, param);
  if (text === undefined) return undefined;
  if (!/^-?\d{1,15}$/.test(text)) throw invalidRequest(`Invalid integer: ${text}`, { code: 'parameter_invalid_integer', param });
  const number = Number(text);
  if (bounds.min !== undefined && number < bounds.min)
    throw invalidRequest(`This value must be greater than or equal to ${bounds.min}.`, { code: 'parameter_invalid_integer', param });
  if (bounds.max !== undefined && number > bounds.max)
    throw invalidRequest(`This value must be less than or equal to ${bounds.max}.`, { code: 'parameter_invalid_integer', param });
  return number;
}

export function readBoolean(value: FormValue | undefined, param: string): boolean | undefined {
  const text = readString(value, param);
  if (text === undefined) return undefined;
  if (text !== 'true' && text !== 'false') throw invalidRequest(`Invalid boolean: ${text}`, { param });
  return text === 'true';
}

export function readEnum<T extends string>(value: FormValue | undefined, param: string, allowed: readonly T[]): T | undefined {
  const text = readString(value, param);
  if (text === undefined || (allowed as readonly string[]).includes(text)) return text as T | undefined;
  throw invalidRequest(`Invalid ${param}: must be one of ${allowed.join(', ')}`, { param });
}

export function readObject(value: FormValue | undefined, param: string): FormObject | undefined {
  if (value === undefined || value === '') return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalidRequest(`Invalid object: ${param} must be a hash (${param}[key]=value).`, { param });
  return value;
}

export function readStringList(value: FormValue | undefined, param: string): string[] | undefined {
  if (value === undefined || value === '') return undefined;
  if (!Array.isArray(value) || value.some((item) => typeof item !== 'string'))
    throw invalidRequest(`Invalid array: ${param} must be a list (${param}[0]=value).`, { param });
  return value as string[];
}

/** Three-letter ISO code. Stripe accepts any case and answers in lowercase. */
export function readCurrency(value: FormValue | undefined, param: string): string | undefined {
  const text = readString(value, param);
  if (text === undefined) return undefined;
  if (!/^[a-zA-Z]{3}$/.test(text)) throw invalidRequest(`Invalid currency: ${text.slice(0, 20)}. Stripe currencies are three-letter ISO codes.`, { param });
  return text.toLowerCase();
}

export function required<T>(value: T | undefined, param: string): T {
  if (value === undefined) throw missingParam(param);
  return value;
}

/** Stripe's metadata rules: at most 50 keys, keys up to 40 characters, values up to 500 (plain strings). */
export function readMetadata(value: FormValue | undefined): Record<string, string> {
  if (value === undefined || value === '') return {};
  // `metadata[0]=x` decodes to an array; for metadata the index is just a key.
  const object = Array.isArray(value) ? Object.fromEntries(value.map((item, index) => [String(index), item])) : readObject(value, 'metadata')!;
  const entries = Object.entries(object);
  if (entries.length > 50) throw invalidRequest('Invalid metadata: metadata can have at most 50 keys.', { param: 'metadata' });
  const metadata: Record<string, string> = {};
  for (const [key, item] of entries) {
    const param = `metadata[${key}]`;
    if (key.length > 40) throw invalidRequest(`Invalid metadata: keys can be at most 40 characters (${key.slice(0, 40)}…).`, { param });
    const text = readString(item, param);
    if (text === undefined) continue; // an empty value unsets the key
    if (text.length > 500) throw invalidRequest('Invalid metadata: values can be at most 500 characters.', { param });
    Object.defineProperty(metadata, key, { value: text, enumerable: true, writable: true, configurable: true });
  }
  return metadata;
}

/** An update's `metadata`: keys given are set, keys given an empty value are removed, the rest stay (Stripe's merge). */
export function mergeMetadata(existing: Record<string, string>, value: FormValue | undefined): Record<string, string> {
  if (value === undefined) return existing;
  if (value === '') return {};
  const merged = { ...existing, ...readMetadata(value) };
  const given = Array.isArray(value) ? {} : readObject(value, 'metadata')!;
  for (const [key, item] of Object.entries(given)) if (item === '') delete merged[key];
  return merged;
}
