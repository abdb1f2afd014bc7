import { AsyncLocalStorage } from 'node:async_hooks';
import { ConsoleLogger, type LogLevel } from '@nestjs/common';
import { ConfigError } from './config';

/**
 * Logging for every app: Nest's ConsoleLogger, one JSON object per line (`LOG_FORMAT=json`, the default when
 * `NODE_ENV=production`) or Nest's pretty lines (`LOG_FORMAT=pretty`, the default otherwise), at the levels of
 * `LOG_LEVEL`. JSON lines name their level as log shippers expect ({@link STANDARD_LEVEL_NAMES}: `info`, not `log`).
 * Every line written while a request is handled carries its request id. Nothing secret is written:
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
  secretPattern = secrets.size
    ? new RegExp(
        [...secrets]
          .sort((a, b) => b.length - a.length)
          .map(escapeRegExp)
          .join('|'),
        'gi',
      )
    : undefined;
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

/** Headers masked when a request's headers are logged: {@link REDACTED_KEYS} and MPP's `Payment` credential header. */
const REDACTED_HEADERS = new Set([...REDACTED_KEYS, 'payment'].map((k) => k.toLowerCase()));

/** A copy of HTTP headers with the credential-bearing ones masked, for logging a request. */
export function redactHeaders(headers: Record<string, string | string[] | undefined>): Record<string, string | string[] | undefined> {
  return Object.fromEntries(Object.entries(headers).map(([name, value]) => [name, REDACTED_HEADERS.has(name.toLowerCase()) ? REDACTED : value]));
}

/** Query parameters whose values are never logged: report link tokens, API keys, secrets, signatures, passwords. */
const SECRET_QUERY_PARAM = /token|key|secret|sig|passw|auth|credential/i;

/**
 * A query string (without its `?`) with the value of every secret-looking parameter masked, e.g.
 * `format=csv&token=[REDACTED]`. A parameter name that cannot be decoded is masked too.
 */
export function redactQuery(query: string): string {
  return query
    .split('&')
    .map((part) => {
      const eq = part.indexOf('=');
      const rawName = eq < 0 ? part : part.slice(0, eq);
      let name: string | undefined;
      try {
        name = decodeURIComponent(rawName.replace(/\+/g, ' '));
      } catch {
        name = undefined;
      }
      if (name !== undefined && !SECRET_QUERY_PARAM.test(name)) return part;
      return eq < 0 && name !== undefined ? part : `${name === undefined ? REDACTED : rawName}=${REDACTED}`;
    })
    .join('&');
}

/** A request URL (path and query) for a log line: the query's secret-looking parameters masked ({@link redactQuery}). */
export function redactUrl(url: string): string {
  const q = url.indexOf('?');
  return q < 0 || q === url.length - 1 ? url : `${url.slice(0, q)}?${redactQuery(url.slice(q + 1))}`;
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
    const record = { ...this.getJsonLogObject(message, options), level: STANDARD_LEVEL_NAMES[options.logLevel] ?? options.logLevel };
    const line = scrubSecrets(this.stringifyJsonLogObject(record));
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

/**
 * The level names JSON lines carry: the standard ones log shippers map to severities (pino's, bunyan's, the
 * OpenTelemetry severity texts), instead of Nest's own `log` and `verbose`.
 */
export const STANDARD_LEVEL_NAMES: Record<LogLevel, string> = {
  fatal: 'fatal',
  error: 'error',
  warn: 'warn',
  log: 'info',
  debug: 'debug',
  verbose: 'trace',
};

const NEST_LEVEL_ORDER: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
/** `LOG_LEVEL` values: Nest's names and the standard ones (`info` = `log`, `trace` = `verbose`). */
const LEVEL_ALIASES: Record<string, LogLevel> = { info: 'log', trace: 'verbose', warning: 'warn' };

/**
 * `LOG_LEVEL`: the most verbose level printed, with every level before it, as Nest's name (`log`, `verbose`) or
 * the standard one (`info`, `trace`), in any case; unknown means `info`.
 */
export function logLevelsFromEnv(level = process.env.LOG_LEVEL ?? 'info'): LogLevel[] {
  const name = level.trim().toLowerCase();
  const index = NEST_LEVEL_ORDER.indexOf(LEVEL_ALIASES[name] ?? (name as LogLevel));
  return NEST_LEVEL_ORDER.slice(0, index < 0 ? 4 : index + 1);
}
