import type { ClientRequest, IncomingMessage } from 'node:http';
import type { Span } from '@opentelemetry/api';
import { ExpressInstrumentation, ExpressLayerType } from '@opentelemetry/instrumentation-express';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { IORedisInstrumentation } from '@opentelemetry/instrumentation-ioredis';
import { PgInstrumentation } from '@opentelemetry/instrumentation-pg';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { redactQuery, scrubSecrets } from './logger';
import type { Tracing } from './tracing';

/** Probes and scrapes: asked every few seconds, they would bury the payments. */
const UNTRACED_PATHS = /^\/(health|ready|metrics)(\/|\?|$)/;

/**
 * The SDK with the instrumentations a payment crosses: the HTTP server and client (merchant agent → facilitator,
 * webhooks), Node's fetch (undici: chain RPC, the facilitator client), Express routes, PostgreSQL and Redis. The
 * exporter, sampler, propagators and resource come from the `OTEL_*` variables (see docs/configuration.md).
 * Only traces: metrics stay on each app's Prometheus `/metrics`, logs on stdout.
 */
export function startTracingSdk(serviceName: string | undefined): Tracing {
  const sdk = new NodeSDK({
    serviceName,
    metricReaders: [],
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (req: IncomingMessage) => UNTRACED_PATHS.test(req.url ?? ''),
        requestHook: (span, req) => {
          // a request received has its url; one sent, its path
          if (typeof (req as IncomingMessage).url === 'string') maskUrl(span, undefined, (req as IncomingMessage).url!);
          else maskUrl(span, `${(req as ClientRequest).protocol}//${(req as ClientRequest).host}`, (req as ClientRequest).path);
        },
      }),
      // a span per Express middleware would be noise: the route's handler and the request's server span say it all
      new ExpressInstrumentation({ ignoreLayersType: [ExpressLayerType.MIDDLEWARE] }),
      // these three only inside a trace: the relay's polls, recovery sweeps, chain watchers and BullMQ's waits start none
      new PgInstrumentation({ requireParentSpan: true, ignoreConnectSpans: true }),
      new IORedisInstrumentation({ requireParentSpan: true }),
      new UndiciInstrumentation({ requireParentforSpans: true, requestHook: (span, request) => maskUrl(span, request.origin, request.path) }),
    ],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown() };
}

/**
 * A span's URL attributes as the logs would show them: registered secrets masked (an RPC URL's API key in its path,
 * see registerLogSecrets) and secret-looking query parameters too (a report link's `token`). `origin` is the
 * scheme and host of a request this process sent (url.full), undefined for one it received.
 */
function maskUrl(span: Span, origin: string | undefined, pathAndQuery: string): void {
  const q = pathAndQuery.indexOf('?');
  const path = scrubSecrets(q < 0 ? pathAndQuery : pathAndQuery.slice(0, q));
  const query = q < 0 ? '' : scrubSecrets(redactQuery(pathAndQuery.slice(q + 1)));
  span.setAttribute('url.path', path);
  if (query) span.setAttribute('url.query', query);
  if (origin !== undefined) span.setAttribute('url.full', `${scrubSecrets(origin)}${path}${query ? `?${query}` : ''}`);
}
