import type { ServerResponse } from 'node:http';
import { brotliDecompressSync, gunzipSync, inflateSync } from 'node:zlib';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { PROBLEM_CONTENT_TYPE, problemBody, type ProblemCode } from './problem';

export const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024;

/** Deepest nesting of arrays and objects a JSON body may have; no request of ours needs more than a dozen levels. */
export const MAX_JSON_DEPTH = 64;

/**
 * After answering 413 we keep reading, and discarding, the rest of the body up to this much (or this long), then
 * close. Closing a socket with unread input makes the kernel send a reset, and a client still uploading then loses
 * the 413 it had not read yet; draining first (nginx's "lingering close") lets it read the answer.
 */
export const OVERSIZED_DRAIN_BYTES = 16 * 1024 * 1024;
export const OVERSIZED_DRAIN_MS = 10_000;

/**
 * Our own JSON body reader: bounded before it buffers, bounded in depth before it parses, and every failure is a
 * problem+json answer (Express's body-parser errors would otherwise bypass Nest's exception filters).
 */
export function jsonBody(limitBytes = DEFAULT_BODY_LIMIT_BYTES): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const declared = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (declared !== undefined && declared !== '0');
    if (!hasBody) return next();
    const type = req.headers['content-type'] ?? '';
    if (!isJsonContentType(type)) {
      return reject(req, res, 'unsupported_media_type', `send the body as application/json (got ${type ? JSON.stringify(type) : 'no content type'})`);
    }
    if (declared !== undefined && Number(declared) > limitBytes) {
      return refuseOversized(req, res, `the body is ${declared} bytes; the limit is ${limitBytes}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const collect = (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limitBytes) return void chunks.push(chunk);
      req.off('data', collect).off('end', parse);
      chunks.length = 0;
      refuseOversized(req, res, `the body exceeds the limit of ${limitBytes} bytes`);
    };
    const parse = () => {
      const raw = Buffer.concat(chunks);
      // Kept for signature checks over the exact bytes (Stripe webhooks).
      (req as Request & { rawBody?: Buffer }).rawBody = raw;
      const parsed = parseJsonText(raw.toString('utf8'));
      if (!parsed.ok) return reject(req, res, parsed.code, parsed.detail);
      req.body = parsed.value;
      next();
    };
    req.on('data', collect).on('end', parse);
    // An aborted upload has no one to answer; 'end' never comes, so nothing is parsed.
    req.on('error', () => req.off('data', collect).off('end', parse));
  };
}

/** application/json, or any `+json` type (application/problem+json, …). */
export function isJsonContentType(type: string): boolean {
  return /^application\/(?:[\w.+-]+\+)?json\b/i.test(type);
}

export type ParsedJson = { ok: true; value: unknown } | { ok: false; code: 'json_too_deep' | 'malformed_json'; detail: string };

/** A body's text as JSON, bounded in depth before it is parsed; the refusal {@link jsonBody} answers with otherwise. */
export function parseJsonText(text: string): ParsedJson {
  if (jsonNestingExceeds(text, MAX_JSON_DEPTH)) {
    return { ok: false, code: 'json_too_deep', detail: `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` };
  }
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch (error) {
    return { ok: false, code: 'malformed_json', detail: `the body is not valid JSON: ${(error as Error).message}` };
  }
}

/** express.json's default limit, which the A2A SDK's routers read their bodies with. */
export const EXPRESS_JSON_LIMIT_BYTES = 100 * 1024;

const DECODERS: Record<string, (raw: Buffer, options: { maxOutputLength: number }) => Buffer> = {
  gzip: gunzipSync,
  'x-gzip': gunzipSync,
  deflate: inflateSync,
  br: brotliDecompressSync,
};

/**
 * The platform's bounds for a router that reads its own JSON body (the A2A SDK's, with express.json, which answers
 * in its protocol's shapes): a body over `limitBytes` is the drained 413 problem, one nested too deep the 400
 * `json_too_deep` problem, and any other body is put back unread for the router, which parses it (or refuses it as
 * malformed) exactly as before. A compressed body is inflated only to be scanned (up to `limitBytes`, express.json's
 * own bound on the inflated body); one that will not inflate is left to the router to refuse.
 */
export function jsonBodyBounds(limitBytes = EXPRESS_JSON_LIMIT_BYTES): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const declared = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (declared !== undefined && declared !== '0');
    if (!hasBody || !isJsonContentType(req.headers['content-type'] ?? '')) return next();
    if (declared !== undefined && Number(declared) > limitBytes) {
      return refuseOversized(req, res, `the body is ${declared} bytes; the limit is ${limitBytes}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = () => req.off('readable', take).off('error', stop);
    // Paused-mode reads: at the end of the body, before Node emits 'end', the bytes can still be put back (unshift).
    const take = () => {
      for (let chunk: Buffer | null; (chunk = req.read() as Buffer | null) !== null;) {
        size += chunk.length;
        if (size > limitBytes) {
          stop();
          chunks.length = 0;
          return refuseOversized(req, res, `the body exceeds the limit of ${limitBytes} bytes`);
        }
        chunks.push(chunk);
      }
      if (!req.complete) return;
      stop();
      const raw = Buffer.concat(chunks);
      const text = inflatedText(raw, req.headers['content-encoding'], limitBytes);
      if (text !== undefined && jsonNestingExceeds(text, MAX_JSON_DEPTH)) {
        return reject(req, res, 'json_too_deep', `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels`);
      }
      if (raw.length > 0) req.unshift(raw);
      next();
    };
    req.on('readable', take).on('error', stop);
  };
}

function inflatedText(raw: Buffer, encoding: string | undefined, limitBytes: number): string | undefined {
  const name = (encoding ?? 'identity').trim().toLowerCase();
  if (name === 'identity') return raw.toString('utf8');
  try {
    return DECODERS[name]?.(raw, { maxOutputLength: limitBytes }).toString('utf8');
  } catch {
    return undefined;
  }
}

/**
 * Whether JSON text nests arrays and objects deeper than `maxDepth`, by one pass over the characters that counts
 * brackets outside strings. Hand-written because JSON.parse has no depth bound: it accepts 20,000 nested arrays, and
 * what walks the value afterwards (schemas, canonical JSON, logging) recurses and overflows the stack, a 500. The scan
 * only needs to be right for valid JSON (invalid text is JSON.parse's to refuse); it stops at the first level too deep.
 */
export function jsonNestingExceeds(text: string, maxDepth: number): boolean {
  // Nothing can nest deeper than the text has opening brackets, counted by indexOf (native, far faster than the
  // loop below): a payment request has about ten, and skips the loop.
  let openers = 0;
  for (const bracket of ['{', '[']) for (let i = text.indexOf(bracket); i !== -1 && openers <= maxDepth; i = text.indexOf(bracket, i + 1)) openers++;
  if (openers <= maxDepth) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */)
        i++; // the escaped character cannot end the string
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/**
 * 413 for a body over the limit. The answer goes out at once (a client reading while it uploads can stop), the
 * rest of the body is read and dropped up to OVERSIZED_DRAIN_BYTES / OVERSIZED_DRAIN_MS, and only then is the
 * response ended, which closes the connection (`connection: close`).
 */
function refuseOversized(req: Request, res: Response, detail: string): void {
  if (res.headersSent) return;
  const text = JSON.stringify(problemBody('payload_too_large', detail, req.originalUrl));
  res.status(413).setHeader('content-type', PROBLEM_CONTENT_TYPE);
  res.setHeader('content-length', Buffer.byteLength(text));
  res.setHeader('connection', 'close');
  res.write(text);

  let drained = 0;
  const close = () => {
    clearTimeout(timer);
    req.off('data', count).off('end', close).off('close', close);
    if (!res.writableEnded) res.end();
  };
  const count = (chunk: Buffer) => {
    drained += chunk.length;
    if (drained > OVERSIZED_DRAIN_BYTES) close();
  };
  const timer = setTimeout(close, OVERSIZED_DRAIN_MS);
  timer.unref();
  req.on('data', count).once('end', close).once('close', close);
  req.resume();
}

function reject(req: Request, res: Response, code: ProblemCode, detail: string): void {
  refuseBody(res, req.originalUrl, code, detail);
}

/** The problem answer to a body refused as it is read (`instance`: the URL as requested); the connection closes after it. */
export function refuseBody(res: ServerResponse, instance: string, code: ProblemCode, detail: string): void {
  if (res.headersSent) return;
  const body = problemBody(code, detail, instance);
  res.statusCode = body.status;
  res.setHeader('content-type', PROBLEM_CONTENT_TYPE);
  res.setHeader('connection', 'close');
  res.end(JSON.stringify(body));
}
