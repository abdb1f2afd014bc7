import { type ArgumentsHost, Catch, type ExceptionFilter, HttpException, Logger } from '@nestjs/common';
import type { Request, Response } from 'express';
import { redactUrl } from './logger';
import { isUnavailableError, PROBLEM_CONTENT_TYPE, problemBody, ProblemError, type ProblemCode, type ProblemDetails } from './problem';

const STATUS_CODES: Record<number, ProblemCode> = {
  400: 'validation_failed',
  401: 'unauthorized',
  404: 'not_found',
  405: 'method_not_allowed',
  409: 'payment_identifier_conflict',
  413: 'payload_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limited',
  503: 'upstream_unavailable',
};

/** The one place where thrown errors become HTTP answers. Unknown errors are logged and never leak a stack. */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const req = http.getRequest<Request>();
    const res = http.getResponse<Response>();
    const body = problemFor(exception, req);
    if (res.headersSent) return;
    res.status(body.status).setHeader('content-type', PROBLEM_CONTENT_TYPE).send(JSON.stringify(body));
  }
}

/** What a request's answer says about it: enough to name it in a problem and in the log. */
export interface ProblemRequest {
  method: string;
  /** The URL as requested, query included. */
  originalUrl: string;
  /** The URL's path. */
  path: string;
}

const logger = new Logger('ProblemFilter');

/** The problem+json answer to a thrown error, as {@link ProblemFilter} sends it (also for routes served below Nest). */
export function problemFor(exception: unknown, req: ProblemRequest): ProblemDetails {
  const instance = req.originalUrl;
  if (exception instanceof ProblemError) return problemBody(exception.code, exception.message, instance, exception.extensions);
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    const code = STATUS_CODES[status];
    if (code) {
      const detail = status === 404 ? `no route for ${req.method} ${req.path}` : exception.message;
      return problemBody(code, detail, instance);
    }
  }
  if (isUnavailableError(exception)) {
    logger.warn(`${req.method} ${redactUrl(req.originalUrl)}: a backing service is unavailable: ${(exception as Error).message?.split('\n').at(-1)}`);
    return problemBody('upstream_unavailable', 'a backing service (database or queue) is unavailable; retry shortly', instance);
  }
  logger.error(`unhandled error on ${req.method} ${redactUrl(req.originalUrl)}`, exception instanceof Error ? exception.stack : String(exception));
  return problemBody('internal_error', 'an unexpected error occurred; it has been logged', instance);
}
