import './tracing';
import 'reflect-metadata';
import type { NextFunction, Request, Response } from 'express';
import {
  ConfigError,
  createHttpApp,
  createLogger,
  listen,
  privateKeyForms,
  PROBLEM_CONTENT_TYPE,
  problemBody,
  registerLogSecrets,
  serveHotRoutes,
  urlSecrets,
} from '@mp/platform';
import { AppModule } from './app.module';
import { loadFacilitatorConfig } from './config/facilitator.config';
import { x402HotRoutes } from './x402/x402.hot-routes';

async function main(): Promise<void> {
  const logger = createLogger('facilitator');
  const config = loadFacilitatorConfig();
  // Whatever a library puts in an error message, these never reach the log.
  registerLogSecrets([
    ...config.networks.flatMap((n) => [...n.signerKeys.flatMap(privateKeyForms), ...n.rpcUrls.flatMap(urlSecrets)]),
    ...urlSecrets(config.databaseUrl),
    ...urlSecrets(config.redisUrl),
    config.stripe?.secretKey,
    config.stripe?.webhookSecret,
    config.operatorToken,
  ]);
  const app = await createHttpApp(AppModule.forConfig(config), { bodyLimitBytes: config.bodyLimitBytes, trustProxy: config.trustProxy, logger });
  if (config.role === 'worker') app.use(operationalRoutesOnly);
  else serveHotRoutes(app, x402HotRoutes(app), { bodyLimitBytes: config.bodyLimitBytes });
  await listen(app, config.port, config.host, 'facilitator');
}

/** A worker-only process serves its health, readiness, metrics and docs, never the payment API. */
function operationalRoutesOnly(req: Request, res: Response, next: NextFunction): void {
  if (/^\/(health|ready|metrics|docs)(\/|$)/.test(req.path)) return next();
  const body = problemBody(
    'not_found',
    'this process only runs settlement workers (FACILITATOR_ROLE=worker); send API requests to an api process',
    req.originalUrl,
  );
  res.status(body.status).setHeader('content-type', PROBLEM_CONTENT_TYPE).end(JSON.stringify(body));
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else createLogger('facilitator').fatal('the facilitator stopped', error instanceof Error ? error.stack : String(error));
  process.exit(1);
});
