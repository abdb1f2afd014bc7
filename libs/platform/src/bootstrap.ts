import { type INestApplication, Logger, type LogLevel } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { jsonBody, DEFAULT_BODY_LIMIT_BYTES } from './json-body';
import { ProblemFilter } from './problem.filter';

export interface HttpAppOptions {
  bodyLimitBytes?: number;
  logLevels?: LogLevel[];
}

/** Builds a Nest app with the platform's HTTP conventions: bounded JSON bodies and problem+json errors. */
export async function createHttpApp(module: unknown, options: HttpAppOptions = {}): Promise<NestExpressApplication> {
  const app = await NestFactory.create<NestExpressApplication>(module as never, {
    bodyParser: false,
    logger: options.logLevels ?? logLevelsFromEnv(),
  });
  configureHttpApp(app, options);
  return app;
}

export function configureHttpApp(app: INestApplication, options: HttpAppOptions = {}): void {
  const express = app as NestExpressApplication;
  express.disable('x-powered-by');
  express.set('etag', false);
  express.use(jsonBody(options.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES));
  app.useGlobalFilters(new ProblemFilter());
  app.enableShutdownHooks();
}

export async function listen(app: INestApplication, port: number, host: string, name: string): Promise<void> {
  await app.listen(port, host);
  new Logger(name).log(`listening on http://${host}:${port}`);
}

export function logLevelsFromEnv(level = process.env.LOG_LEVEL ?? 'log'): LogLevel[] {
  const order: LogLevel[] = ['fatal', 'error', 'warn', 'log', 'debug', 'verbose'];
  const index = order.indexOf(level as LogLevel);
  return order.slice(0, index < 0 ? 4 : index + 1);
}
