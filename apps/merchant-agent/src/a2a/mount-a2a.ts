import type { INestApplication } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { A2ARequestHandler } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, restHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { jsonBodyBounds, observabilityMiddleware, PROBLEM_CONTENT_TYPE, problemBody } from '@mp/platform';
import { A2A_REQUEST_HANDLER } from './a2a.module';
import { A2A_CARD_PATH, A2A_JSONRPC_PATH, A2A_REST_PATH } from './a2a-paths';

/**
 * Mounts the SDK's Express routers: the agent card, JSON-RPC and HTTP+JSON, each with the v0.3 compat layer on.
 * Call it before configureHttpApp: the routers read their own bodies, so a malformed JSON-RPC body is answered
 * -32700 rather than by the platform's problem+json reader. Only a body over 100 KiB (413) or nested deeper than
 * MAX_JSON_DEPTH (400 json_too_deep) is answered by the platform, as problem+json, before the routers see it.
 */
export function mountA2a(app: INestApplication): void {
  const requestHandler = app.get<A2ARequestHandler>(A2A_REQUEST_HANDLER);
  const userBuilder = UserBuilder.noAuthentication;
  const legacyCompat = { enabled: true };
  const observed = observabilityMiddleware(app)?.beforeBody ?? [];
  const routers: [string, RequestHandler][] = [
    [A2A_CARD_PATH, agentCardHandler({ agentCardProvider: requestHandler, legacyCompat })],
    [A2A_JSONRPC_PATH, jsonRpcHandler({ requestHandler, userBuilder, legacyCompat })],
    [A2A_REST_PATH, restHandler({ requestHandler, userBuilder, legacyCompat })],
  ];
  // The platform's bounds (size, nesting depth) come first; within them the routers read the body themselves.
  for (const [path, router] of routers) app.use(path, routeLabel(path), ...observed, jsonBodyBounds(), router, notFound);
}

/** Metrics name the binding, not each task id in a REST path. */
function routeLabel(path: string): RequestHandler {
  return (_req: Request, res: Response, next: NextFunction) => {
    res.locals.metricsRoute = path;
    next();
  };
}

/** What the SDK's routers do not serve ends here, not in the platform's middleware a second time. */
function notFound(req: Request, res: Response): void {
  res
    .status(404)
    .setHeader('content-type', PROBLEM_CONTENT_TYPE)
    .end(JSON.stringify(problemBody('not_found', `${req.method} ${req.originalUrl} is not an A2A endpoint of this agent`, req.originalUrl)));
}
