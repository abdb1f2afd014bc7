import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import { isJsonContentType, parseJsonText, refuseBody } from './json-body';
import { requestContext } from './logger';
import { Metrics } from './metrics';
import { acceptRequestId, recordAnsweredRequest, REQUEST_ID_HEADER } from './observability.module';
import { PROBLEM_CONTENT_TYPE } from './problem';
import { problemFor } from './problem.filter';
import { nameServerSpan } from './tracing';

/** A request a hot route serves, as far as its handler needs it. */
export interface HotRequest {
  headers: IncomingHttpHeaders;
  /** The client's address: the socket's, which is what Express's `req.ip` is for a request without X-Forwarded-For. */
  clientAddress: string;
  /** Sets a header of the answer, error answers included (`retry-after`, `www-authenticate`). */
  setHeader(name: string, value: string): void;
  /** The merchant the request was authenticated as, for the access log. */
  merchantId?: string;
}

export interface HotRoute {
  /** Served for POST to exactly this path. */
  path: string;
  /** The 200 JSON answer; a thrown error is answered as ProblemFilter answers it. */
  handle(body: unknown, request: HotRequest): Promise<unknown>;
}

/**
 * Serves a few hot POST routes straight from node:http, below Express and Nest, with the answers the framework would
 * give: the request id (kept or made, echoed, the logging context), `http_request_duration_seconds` and the access
 * log, the JSON body with its bounds (`parseJsonText`, the same refusals), a thrown error as problem+json
 * (`problemFor`), and a 200 with the same headers as Express's `res.json`. Written by hand for speed alone: Express's
 * request and response objects, its router and our middleware chain, then Nest's guard, pipe and reply layers cost
 * about 0.4 CPU-ms of a /verify's 1.1 (bench/README.md, "Below the framework"), more than the work itself.
 *
 * A request it does not take whole goes to the framework untouched, before a byte of its body is read: another
 * method or path (a query or a trailing slash included), a client named in X-Forwarded-For (whose address only
 * Express's `trust proxy` may judge), a body that is chunked, compressed, empty, not JSON or over `bodyLimitBytes`.
 * Those get the framework's answers (415, 413, …) exactly as before. Call it after the app is configured, before it
 * listens; the handlers are the app's own (its controller, its guard), so the behaviour has one home.
 */
export function serveHotRoutes(app: INestApplication, routes: HotRoute[], options: { bodyLimitBytes: number }): void {
  const server = app.getHttpServer() as Server;
  const listeners = server.listeners('request') as ((req: IncomingMessage, res: ServerResponse) => void)[];
  if (listeners.length !== 1) throw new Error(`serveHotRoutes: expected the framework's one request listener, found ${listeners.length}`);
  const [framework] = listeners;
  const byPath = new Map(routes.map((route) => [route.path, route]));
  let metrics: Metrics | undefined;
  try {
    metrics = app.get(Metrics, { strict: false });
  } catch {
    metrics = undefined;
  }
  server.removeListener('request', framework);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const route = req.method === 'POST' ? byPath.get(req.url ?? '') : undefined;
    if (route && takenWhole(req, options.bodyLimitBytes)) serve(route, req, res, metrics);
    else framework(req, res);
  });
}

function takenWhole(req: IncomingMessage, limitBytes: number): boolean {
  const h = req.headers;
  if (h['transfer-encoding'] !== undefined || h['content-encoding'] !== undefined || h['x-forwarded-for'] !== undefined) return false;
  const length = Number(h['content-length']);
  return Number.isInteger(length) && length > 0 && length <= limitBytes && isJsonContentType(h['content-type'] ?? '');
}

function serve(route: HotRoute, req: IncomingMessage, res: ServerResponse, metrics: Metrics | undefined): void {
  const started = process.hrtime.bigint();
  const url = req.url!;
  nameServerSpan('POST', route.path);
  const requestId = acceptRequestId(req.headers[REQUEST_ID_HEADER]) ?? randomUUID();
  res.setHeader(REQUEST_ID_HEADER, requestId);
  const request: HotRequest = {
    headers: req.headers,
    clientAddress: req.socket.remoteAddress ?? 'unknown',
    setHeader: (name, value) => res.setHeader(name, value),
  };
  if (metrics) {
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const logged = { method: 'POST', url, headers: req.headers, ip: request.clientAddress, merchant: { merchantId: request.merchantId } };
      recordAnsweredRequest(metrics, logged, res, route.path, seconds, requestId);
    });
  }
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () =>
    requestContext.run({ requestId }, () => {
      const parsed = parseJsonText(Buffer.concat(chunks).toString('utf8'));
      if (!parsed.ok) return refuseBody(res, url, parsed.code, parsed.detail);
      route.handle(parsed.value, request).then(
        (answer) => reply(res, 200, 'application/json; charset=utf-8', JSON.stringify(answer)),
        (error: unknown) => {
          const problem = problemFor(error, { method: 'POST', originalUrl: url, path: url });
          reply(res, problem.status, PROBLEM_CONTENT_TYPE, JSON.stringify(problem));
        },
      );
    }),
  );
}

function reply(res: ServerResponse, status: number, contentType: string, text: string): void {
  if (res.headersSent) return;
  res.statusCode = status;
  res.setHeader('content-type', contentType);
  res.setHeader('content-length', Buffer.byteLength(text));
  res.end(text);
}
