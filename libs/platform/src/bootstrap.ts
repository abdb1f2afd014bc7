import { type INestApplication, Logger, type LoggerService, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { jsonBody, DEFAULT_BODY_LIMIT_BYTES } from './json-body';
import { createLogger } from './logger';
import { OBSERVABILITY_OPTIONS, observabilityMiddleware, type ObservabilityOptions } from './observability.module';
import { setupOpenApi } from './openapi';
import { ProblemFilter } from './problem.filter';
import { problemValidationPipe } from './validation.pipe';

export interface HttpAppOptions {
  bodyLimitBytes?: number;
  /** The app's logger; default: {@link createLogger} (LOG_FORMAT, LOG_LEVEL), or Nest's plain logger at these levels. */
  logger?: LoggerService;
  logLevels?: LogLevel[];
  /**
   * Express's `trust proxy`: which peers may name the client's address in X-Forwarded-For (`request.ip`, what
   * per-address limits count). Default `loopback`: a proxy or a sibling service on the same host.
   */
  trustProxy?: TrustProxy;
}

/** false: never; a number: that many hops; otherwise addresses, CIDRs or `loopback`/`linklocal`/`uniquelocal`, comma-separated. */
export type TrustProxy = boolean | number | string;

/** Builds a Nest app with the platform's HTTP conventions: bounded JSON bodies and problem+json errors. */
export async function createHttpApp(module: unknown, options: HttpAppOptions = {}): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(module as never, {
    bodyParser: false,
    logger: options.logger ?? options.logLevels ?? createLogger(),
  });
  configureHttpApp(app, options);
  return app;
}

/**
 * The platform's HTTP conventions on a created app: bounded JSON bodies, problem+json errors, DTO validation. With the
 * ObservabilityModule imported, request ids, HTTP metrics and the docs assets come first, so even a body refused by
 * the reader has a request id and is measured, and the app's OpenAPI document (ObservabilityModule's `openapi`) is
 * served at /docs.
 */
export function configureHttpApp(app: INestApplication, options: HttpAppOptions = {}): void {
  const express = app as NestExpressApplication;
  express.disable('x-powered-by');
  express.set('etag', false);
  express.set('trust proxy', options.trustProxy ?? 'loopback');
  const observability = observabilityMiddleware(app);
  if (observability) express.use(...observability.beforeBody);
  express.use(jsonBody(options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES));
  if (observability) express.use(...observability.afterBody);
  app.useGlobalFilters(new ProblemFilter());
  // DTO parameters of REST resources; protocol bodies (declared `unknown`) pass through to their zod codecs
  app.useGlobalPipes(problemValidationPipe());
  app.enableShutdownHooks();
  if (observability) {
    const { service, openapi } = app.get<ObservabilityOptions>(OBSERVABILITY_OPTIONS, { strict: false });
    setupOpenApi(app, openapi ?? { title: service, version: '0.1.0' });
  }
}

export async function listen(app: INestApplication, port: number, host: string, name: string): Promise<void> {
  await app.listen(port, host);
  new Logger(name).log(`listening on http://${host}:${port}`);
}
