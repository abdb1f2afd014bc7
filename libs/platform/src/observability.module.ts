import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import path from 'node:path';
import {
  Controller,
  type DynamicModule,
  Get,
  Header,
  Inject,
  Injectable,
  type INestApplication,
  Logger,
  Module,
  type OnApplicationShutdown,
  Res,
} from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { currentRequestId, redactQuery, requestContext } from './logger';
import { Metrics, UNMATCHED_ROUTE, type MetricsOptions } from './metrics';
import type { OpenApiOptions } from './openapi';
import { ProblemError } from './problem';
import { Readiness } from './readiness';
import { stopTracing } from './tracing';
import { METRICS_DOCS, READY_DOCS, DOCS_DOCS, OPEN_API_DOCS } from './observability.openapi';
import { ApiDoc } from './openapi';

/**
 * Observability for every app, in one global module:
 *
 *   imports: [ObservabilityModule.forRoot({ service: 'ledger' })]
 *
 * provides {@link Metrics} (the app's Prometheus registry) and {@link Readiness} (checks registered by the app), and
 * serves `GET /metrics`, `GET /ready`, `GET /docs` (Swagger UI from the installed swagger-ui-dist, assets under
 * `/docs/assets/`) and the app's generated OpenAPI document at `GET /docs/openapi.json` and `GET /openapi.json`
 * (see setupOpenApi). `configureHttpApp` installs its middleware in front of everything
 * else: request ids (`x-request-id`, also in every log line), HTTP request metrics, the access log (info) and the
 * Swagger UI assets. Traces (started by the app's entry, see tracing.ts) are flushed when the app shuts down.
 */

export interface ObservabilityOptions {
  /** The app's name, e.g. `facilitator`; shown on the docs page. */
  service: string;
  metrics?: MetricsOptions;
  /** Default timeout of one readiness check; 2000 ms. */
  readinessTimeoutMs?: number;
  /** What the app's OpenAPI document says about itself (title, version, schemas from the zod codecs); see setupOpenApi. */
  openapi?: OpenApiOptions;
  /**
   * Whether the document is also served at `GET /openapi.json`; default true. The merchant agent serves its payment
   * discovery document there instead.
   */
  openapiAtRoot?: boolean;
}

export const OBSERVABILITY_OPTIONS = Symbol('OBSERVABILITY_OPTIONS');

export const REQUEST_ID_HEADER = 'x-request-id';
const SANE_REQUEST_ID = /^[A-Za-z0-9][A-Za-z0-9._:+=@/-]{0,127}$/;

/** An incoming request id is kept if it is one token of at most 128 safe characters; otherwise we make our own. */
export function acceptRequestId(value: unknown): string | undefined {
  return typeof value === 'string' && SANE_REQUEST_ID.test(value) ? value : undefined;
}

// ----------------------------------------------------------------------------------------------------- controllers

@Controller('metrics')
export class MetricsController {
  constructor(private readonly metrics: Metrics) {}

  @ApiDoc(METRICS_DOCS.scrape)
  @Get()
  @Header('cache-control', 'no-store')
  async scrape(@Res({ passthrough: true }) res: Response): Promise<string> {
    const body = await this.metrics.scrape();
    res.setHeader('content-type', this.metrics.contentType);
    return body;
  }
}

@Controller('ready')
export class ReadyController {
  constructor(private readonly readiness: Readiness) {}

  @ApiDoc(READY_DOCS.ready)
  @Get()
  @Header('cache-control', 'no-store')
  ready() {
    return this.readiness.assertReady();
  }
}

const ASSETS_PATH = '/docs/assets';
/** The swagger-ui-dist files the docs page may load; nothing else under /docs/assets is served. */
const SWAGGER_UI_FILES = ['swagger-ui.css', 'swagger-ui.css.map', 'swagger-ui-bundle.js', 'swagger-ui-bundle.js.map', 'favicon-32x32.png', 'favicon-16x16.png'];
const DOCS_INIT = `window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({ url: '/docs/openapi.json', dom_id: '#swagger-ui', deepLinking: true, presets: [SwaggerUIBundle.presets.apis] });
});
`;

/** The app's OpenAPI document, built on first use by what setupOpenApi left here. */
@Injectable()
export class OpenApiDocument {
  build: (() => string) | undefined;
  private json: string | undefined;

  text(): string {
    if (this.json === undefined) {
      if (!this.build) throw new ProblemError('not_found', 'this app serves no OpenAPI document');
      this.json = this.build();
    }
    return this.json;
  }
}

@Controller('docs')
export class DocsController {
  constructor(
    @Inject(OBSERVABILITY_OPTIONS) private readonly options: ObservabilityOptions,
    private readonly openapi: OpenApiDocument,
  ) {}

  @ApiDoc(DOCS_DOCS.page)
  @Get()
  @Header('content-type', 'text/html; charset=utf-8')
  @Header('content-security-policy', "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'")
  page(): string {
    const title = `${escapeHtml(this.options.service)} API`;
    return `<!DOCTYPE html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>${title}</title>
  <link rel="stylesheet" href="${ASSETS_PATH}/swagger-ui.css">
  <link rel="icon" type="image/png" href="${ASSETS_PATH}/favicon-32x32.png" sizes="32x32">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="${ASSETS_PATH}/swagger-ui-bundle.js"></script>
  <script src="${ASSETS_PATH}/init.js"></script>
</body>
</html>
`;
  }

  @ApiDoc(DOCS_DOCS.document)
  @Get('openapi.json')
  @Header('content-type', 'application/json; charset=utf-8')
  document(): string {
    return this.openapi.text();
  }
}

/** The same document at the root, where OpenAPI tools look first. */
@Controller()
export class OpenApiController {
  constructor(private readonly openapi: OpenApiDocument) {}

  @ApiDoc(OPEN_API_DOCS.document)
  @Get('openapi.json')
  @Header('content-type', 'application/json; charset=utf-8')
  document(): string {
    return this.openapi.text();
  }
}

// ---------------------------------------------------------------------------------------------------------- module

/** Last in the shutdown path, once workers and queues are closed: exports the spans they ended (see tracing.ts). */
@Injectable()
export class TracingShutdown implements OnApplicationShutdown {
  onApplicationShutdown(): Promise<void> {
    return stopTracing();
  }
}

@Module({})
export class ObservabilityModule {
  static forRoot(options: ObservabilityOptions): DynamicModule {
    return {
      module: ObservabilityModule,
      global: true,
      controllers: [MetricsController, ReadyController, DocsController, ...(options.openapiAtRoot === false ? [] : [OpenApiController])],
      providers: [
        { provide: OBSERVABILITY_OPTIONS, useValue: options },
        OpenApiDocument,
        { provide: Metrics, useFactory: () => new Metrics(options.metrics) },
        { provide: Readiness, useFactory: () => new Readiness(options.readinessTimeoutMs) },
        TracingShutdown,
      ],
      exports: [OBSERVABILITY_OPTIONS, Metrics, Readiness, OpenApiDocument],
    };
  }
}

// ------------------------------------------------------------------------------------------------------ middleware

export interface ObservabilityMiddleware {
  /** Before the body reader: request id and context, HTTP metrics and access log, docs assets. */
  beforeBody: RequestHandler[];
  /** After the body reader, which resumes in the socket's async context: re-enters the request's context. */
  afterBody: RequestHandler[];
}

/** The middleware of an app that imports {@link ObservabilityModule}, or undefined if it does not. */
export function observabilityMiddleware(app: INestApplication): ObservabilityMiddleware | undefined {
  let metrics: Metrics;
  try {
    metrics = app.get(Metrics, { strict: false });
  } catch {
    return undefined;
  }
  const routes = new RouteTemplates(app);
  return {
    beforeBody: [requestIdMiddleware(), httpMetricsMiddleware(metrics, (req, res) => routes.of(req, res)), docsAssetsMiddleware()],
    afterBody: [reenterRequestContext()],
  };
}

/** Takes a sane `x-request-id` or makes one, echoes it, and runs the rest of the request in its context. */
export function requestIdMiddleware(): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const requestId = acceptRequestId(req.headers[REQUEST_ID_HEADER]) ?? randomUUID();
    res.locals.requestId = requestId;
    res.setHeader(REQUEST_ID_HEADER, requestId);
    requestContext.run({ requestId }, next);
  };
}

function reenterRequestContext(): RequestHandler {
  return (_req: Request, res: Response, next: NextFunction) => {
    const requestId = res.locals.requestId as string | undefined;
    if (requestId && currentRequestId() !== requestId) requestContext.run({ requestId }, next);
    else next();
  };
}

/**
 * Observes `http_request_duration_seconds` when the response is written, and writes the request's access log line
 * (at info: `log`), see {@link accessLogParams}.
 */
export function httpMetricsMiddleware(metrics: Metrics, routeOf: (req: Request, res: Response) => string): RequestHandler {
  return (req: Request, res: Response, next: NextFunction) => {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      recordAnsweredRequest(metrics, req, res, routeOf(req, res), seconds, res.locals.requestId as string | undefined);
    });
    next();
  };
}

const accessLogger = new Logger('HTTP');

/** What an answered request leaves behind: its `http_request_duration_seconds` sample and, at info, its access log line. */
export function recordAnsweredRequest(
  metrics: Metrics,
  req: AccessLogRequest,
  res: { statusCode: number },
  route: string,
  seconds: number,
  requestId: string | undefined,
): void {
  metrics.observeHttpRequest(req.method, route, res.statusCode, seconds);
  // Below info (LOG_LEVEL=warn, as the benchmarks run) the line is not even built.
  if (!Logger.isLevelEnabled('log')) return;
  const params = accessLogParams(req, res, route, seconds);
  const log = () =>
    accessLogger.log(`${params.method} ${params.path}${params.query ? `?${params.query}` : ''} ${params.status} ${params.durationMs} ms`, params);
  if (requestId) requestContext.run({ requestId }, log);
  else log();
}

/** What the access log reads of a request: an Express request, or a node:http one with its client's address. */
export interface AccessLogRequest {
  method: string;
  url: string;
  originalUrl?: string;
  headers: IncomingHttpHeaders;
  ip?: string;
  merchant?: { merchantId?: unknown };
}

export interface AccessLogParams {
  method: string;
  /** The URL path, without the query. */
  path: string;
  /** The query string with secret-looking parameters masked (`token=[REDACTED]`); absent without a query. */
  query?: string;
  route: string;
  status: number;
  durationMs: number;
  /** The client's address as Express sees it (`trust proxy` decides whether X-Forwarded-For counts). */
  client?: string;
  /** The merchant whose API key authenticated the request, once a guard has resolved it. */
  merchantId?: string;
  userAgent?: string;
}

/**
 * What the access log line says about a request. No header is copied but the user agent, so credentials
 * (`Authorization`, `X-API-Key`, `Payment`, `PAYMENT-SIGNATURE`, `X-PAYMENT`) never reach it; secret-looking query
 * parameters (a report link's `token`) are masked.
 */
export function accessLogParams(req: AccessLogRequest, res: { statusCode: number }, route: string, seconds: number): AccessLogParams {
  const url = req.originalUrl ?? req.url;
  const q = url.indexOf('?');
  const merchantId = req.merchant?.merchantId;
  const userAgent = req.headers['user-agent'];
  return {
    method: req.method,
    path: q < 0 ? url : url.slice(0, q),
    ...(q >= 0 && q < url.length - 1 ? { query: redactQuery(url.slice(q + 1)) } : {}),
    route,
    status: res.statusCode,
    durationMs: Math.round(seconds * 1e4) / 10,
    ...(req.ip ? { client: req.ip } : {}),
    ...(typeof merchantId === 'string' ? { merchantId } : {}),
    ...(userAgent ? { userAgent: userAgent.slice(0, 256) } : {}),
  };
}

/** Serves the allowlisted swagger-ui-dist files and the page's init script under /docs/assets/. */
function docsAssetsMiddleware(): RequestHandler {
  let root: string | undefined;
  return (req: Request, res: Response, next: NextFunction) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !req.path.startsWith(`${ASSETS_PATH}/`)) return next();
    const file = req.path.slice(ASSETS_PATH.length + 1);
    res.locals.metricsRoute = ASSETS_PATH;
    if (file === 'init.js') {
      res.setHeader('content-type', 'text/javascript; charset=utf-8');
      res.setHeader('cache-control', 'public, max-age=3600');
      res.end(req.method === 'HEAD' ? undefined : DOCS_INIT);
      return;
    }
    if (!SWAGGER_UI_FILES.includes(file)) return next();
    root ??= path.dirname(require.resolve('swagger-ui-dist/package.json'));
    res.sendFile(path.join(root, file), { maxAge: 86_400_000 }, (error) => {
      if (error && !res.headersSent) next(error);
    });
  };
}

/**
 * The route template of a request for the `route` label: the Express route that answered it, or the first route
 * whose pattern matches (a request answered before routing: a refused body, a paywall's 402), else `unmatched`.
 */
class RouteTemplates {
  constructor(private readonly app: INestApplication) {}

  of(req: Request, res: Response): string {
    const explicit = res.locals.metricsRoute as string | undefined;
    if (explicit) return explicit;
    if (req.route?.path && typeof req.route.path === 'string') return `${req.baseUrl}${req.route.path}`;
    return this.match(req.method, req.path) ?? UNMATCHED_ROUTE;
  }

  private match(method: string, requestPath: string): string | undefined {
    try {
      const stack = (this.app.getHttpAdapter().getInstance() as { router?: { stack?: RouterLayer[] } }).router?.stack ?? [];
      for (const layer of stack) {
        if (!layer.route || typeof layer.match !== 'function') continue;
        if (!layer.route._handlesMethod?.(method)) continue;
        const matched = layer.match(requestPath);
        if (matched && typeof layer.route.path === 'string') return layer.route.path;
      }
    } catch {
      // an Express without these internals: the request is unmatched
    }
    return undefined;
  }
}

interface RouterLayer {
  route?: { path: unknown; _handlesMethod?(method: string): boolean };
  match?(path: string): unknown;
}

function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}
