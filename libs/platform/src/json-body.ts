import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { PROBLEM_CONTENT_TYPE, problemBody, type ProblemCode } from './problem';

export const DEFAULT_BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Our own JSON body reader: bounded before it buffers, and every failure is a problem+json answer
 * (Express's body-parser errors would otherwise bypass Nest's exception filters).
 */
export function jsonBody(limitBytes = DEFAULT_BODY_LIMIT_BYTES): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const declared = req.headers['content-length'];
    const hasBody = req.headers['transfer-encoding'] !== undefined || (declared !== undefined && declared !== '0');
    if (!hasBody) return next();
    const type = req.headers['content-type'] ?? '';
    if (!/^application\/(?:[\w.+-]+\+)?json\b/i.test(type)) {
      return reject(req, res, 'unsupported_media_type', `send the body as application/json (got ${type ? JSON.stringify(type) : 'no content type'})`);
    }
    if (declared !== undefined && Number(declared) > limitBytes) {
      return reject(req, res, 'payload_too_large', `the body is ${declared} bytes; the limit is ${limitBytes}`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limitBytes) {
        done = true;
        reject(req, res, 'payload_too_large', `the body exceeds the limit of ${limitBytes} bytes`);
        req.resume();
        return;
      }
      chunks.push(chunk);
    });
    req.on('error', () => {
      done = true;
    });
    req.on('end', () => {
      if (done) return;
      done = true;
      const raw = Buffer.concat(chunks);
      // Kept for signature checks over the exact bytes (Stripe webhooks).
      (req as Request & { rawBody?: Buffer }).rawBody = raw;
      const text = raw.toString('utf8');
      try {
        req.body = JSON.parse(text);
      } catch (error) {
        return reject(req, res, 'malformed_json', `the body is not valid JSON: ${(error as Error).message}`);
      }
      next();
    });
  };
}

function reject(req: Request, res: Response, code: ProblemCode, detail: string): void {
  if (res.headersSent) return;
  const body = problemBody(code, detail, req.originalUrl);
  res.status(body.status).setHeader('content-type', PROBLEM_CONTENT_TYPE);
  res.setHeader('connection', 'close');
  res.end(JSON.stringify(body));
}
