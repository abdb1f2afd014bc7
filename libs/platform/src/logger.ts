import { AsyncLocalStorage } from 'node:async_hooks';
import { ConsoleLogger, type LogLevel } from '@nestjs/common';
import { ConfigError } from './config';

/**
 * Logging for every app: Nest's ConsoleLogger, one JSON object per line (`LOG_FORMAT=json`, the default when
 * `NODE_ENV=production`) or Nest's pretty lines (`LOG_FORMAT=pretty`, the default otherwise), at the levels of
 * `LOG_LEVEL`. Every line written while a request is handled carries its request id. Nothing secret is written:
 * header-like keys of structured params are masked (see {@link REDACTED_KEYS}), and every value registered with
 * {@link registerLogSecrets} (signer keys, credentials in URLs) is replaced wherever it appears, stacks included.
 */

// ---------------------------------------------------------------------------------------------- request context

export interface RequestContext {
  requestId: string;
}

/** The context of the request being handled, propagated through async calls (see the request-id middleware). */
export const requestContext = new AsyncLocalStorage<RequestContext>();

export function currentRequestId(): string | undefined {
  return requestContext.getStore()?.requestId;
}

// ------------------------------------------------------------------------------------------------------- secrets

export const REDACTED = '[REDACTED]';

/** Keys masked in structured log params at any depth, compared case-insensitively. */
export const REDACTED_KEYS = [
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'cookie',
  'set-cookie',
  'payment-signature',
  'x-payment',
  'password',
  'privateKey',
  'signerKeys',
  'secret',
];

const secrets = new Set<string>();
let secretPattern: RegExp | undefined;

/**
 * Values that must never be written to a log (matched case-insensitively, anywhere in a line). Values shorter than
 * 8 characters are ignored: they would mask ordinary text.
 */
export function registerLogSecrets(values: Iterable<string | undefined>): void {
  for (const value of values) if (value && value.length >= 8) secrets.add(value);
  secretPattern = secrets.size ? new RegExp([...secrets].sort((a, b) => b.length - a.length).map(escapeRegExp).join('|'), 'gi') : undefined;
}

/** The forms a private key could be printed in: 0x-hex, bare hex and decimal (as libraries print out-of-range keys). */
export function privateKeyForms(key: string): string[] {
  const hex = key.replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]+$/.test(hex)) return [key];
  return [hex, BigInt(`0x${hex}`).toString(10)];
}

/** The secret parts of a URL: its password and, for URLs whose path or query may carry an API key, path and query. */
export function urlSecrets(url: string): string[] {
  try {
    const parsed = new URL(url);
    const pathAndQuery = `${parsed.pathname}${parsed.search}`;
    return [decodeURIComponent(parsed.password), parsed.password, pathAndQuery.length > 1 ? pathAndQuery : ''].filter((s) => s.length >= 8);
  } catch {
    return [];
  }
}

export function scrubSecrets(text: string): string {
  return secretPattern ? text.replace(secretPattern, REDACTED) : text;
}

/** A copy of HTTP headers with the credential-bearing ones masked, for logging a request. */
export function redactHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[] | undefined> {
  const masked = new Set(REDACTED_KEYS.map((k) => k.toLowerCase()));
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, masked.has(name.toLowerCase()) ? REDACTED : value]));
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}

// -------------------------------------------------------------------------------------------------------- logger

export type LogFormat = 'json' | 'pretty';

export interface AppLoggerOptions {
  /** The app's name, written as `service` on every JSON line and as the prefix of pretty lines. */
  service?: string;
  format?: LogFormat;
  levels?: LogLevel[];
  /** Where JSON lines go instead of stdout/stderr (tests, embedding). */
  write?: (line: string, stream: 'stdout' | 'stderr') => void;
}

interface JsonLogOptions {
  context: string;
  logLevel: LogLevel;
  writeStreamType?: 'stdout' | 'stderr';
  errorStack?: unknown;
  params?: Record<string, any>;
  error?: Error;
}

export class AppLogger extends ConsoleLogger {
  private readonly service?: string;
  private readonly write?: (line: string, stream: 'stdout' | 'stderr') => void;

  constructor(options: AppLoggerOptions = {}) {
    const format = options.format ?? logFormatFromEnv();
    super({
      json: format === 'json',
      logLevels: options.levels ?? logLevelsFromEnv(),
      prefix: options.service ?? 'Nest',
      redact: REDACTED_KEYS,
    });
    this.service = options.service;
    this.write = options.write;
  }

  protected override getJsonLogObject(message: unknown, options: JsonLogOptions) {
    const record = super.getJsonLogObject(message, options);
    const requestId = currentRequestId();
    return { ...record, ...(this.service ? { service: this.service } : {}), ...(requestId ? { requestId } : {}) };
  }

  protected override printAsJson(message: unknown, options: JsonLogOptions): void {
    const line = scrubSecrets(this.stringifyJsonLogObject(this.getJsonLogObject(message, options)));
    const stream = options.writeStreamType ?? 'stdout';
    if (this.write) this.write(line, stream);
    else process[stream].write(`${line}\n`);
  }

  protected override formatMessage(
    logLevel: LogLevel,
    message: unknown,
    pidMessage: string,
    formattedLogLevel: string,
    contextMessage: string,
    timestampDiff: string,
    params?: Record<string, any>,
  ): string {
    const requestId = currentRequestId();
    const context = requestId ? `${contextMessage}[${requestId}] ` : contextMessage;
    return scrubSecrets(super.formatMessage(logLevel, message, pidMessage, formattedLogLevel, context, timestampDiff, params));
  }

  protected override printStackTrace(stack: string): void {
    super.printStackTrace(stack ? scrubSecrets(stack) : stack);
  }
}

/** The logger of an app, configured from `LOG_FORMAT`, `NODE_ENV` and `LOG_LEVEL` unless told otherwise. */
export function createLogger(service?: string, options: Omit<AppLoggerOptions, 'service'> = {}): AppLogger {
  return new AppLogger({ service, ...options });
}

/** `LOG_FORMAT` (`json` or `pretty`); unset: `json` when `NODE_ENV=production`, else `pretty`. */
export function logFormatFromEnv(env: NodeJS.ProcessEnv = process.env): LogFormat {
  const format = env.LOG_FORMAT;
  if (format === undefined || format === '') return env.NODE_ENV === 'production' ? 'json' : 'pretty';
  if (format === 'json' || format === 'pretty') return format;
  throw new ConfigError([`LOG_FORMAT: must be json or pretty (got ${JSON.stringify(format.slice(0, 20))})`]);
}

/** `LOG_LEVEL`: the most verbose level printed, with every level before it; unknown means `log`. */
export function logLevelsFromEnv(level = process.env.LOG_LEVEL ?? 'log'): LogLevel[] {
  const order: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
  const index = order.indexOf(level as LogLevel);
  return order.slice(0, index < 0 ? 4 : index + 1);
}
