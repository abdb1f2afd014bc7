import { context, type Context, createTraceState, isSpanContextValid, ROOT_CONTEXT, SpanKind, trace, TraceFlags } from '@opentelemetry/api';
import type { Span as QueueSpan, Telemetry } from 'bullmq';
import { BullMQOtel } from 'bullmq-otel';

/**
 * OpenTelemetry traces, configured the standard way (`OTEL_*` environment variables) and off unless an exporter is
 * configured. Each app's entry imports its `tracing.ts` first, which calls {@link startTracing}: the instrumentations
 * patch express, pg and ioredis as they are loaded, so nothing may load them before. Everything else here is cheap
 * and does nothing while tracing is off.
 *
 * A payment is followed across processes by the W3C trace context: HTTP requests carry `traceparent` (fetch and
 * the http server are instrumented), BullMQ jobs carry it in their options ({@link queueTelemetry}), and the
 * facilitator's outbox stores it with each event ({@link currentTraceContext}) for the job that takes the event to
 * the ledger ({@link jobTraceOptions}).
 */

/** The W3C trace context of a span, as stored with an outbox event. */
export interface TraceContext {
  traceparent: string;
  tracestate?: string;
}

export interface Tracing {
  /** Flushes the spans not exported yet and stops the SDK. */
  shutdown(): Promise<void>;
}

let running: Tracing | undefined;
let telemetry: Telemetry<Context> | undefined;

/**
 * Whether the environment asks for traces: not with `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`; yes
 * with an `OTEL_TRACES_EXPORTER` (otlp, console, zipkin) or an OTLP endpoint (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`); otherwise no, so an app nobody configured for tracing pays nothing for it.
 */
export function tracingConfigured(env: NodeJS.ProcessEnv = process.env): boolean {
  if (env.OTEL_SDK_DISABLED?.trim().toLowerCase() === 'true') return false;
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (exporters.length > 0) return !(exporters.length === 1 && exporters[0] === 'none');
  return Boolean(env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim());
}

/**
 * Starts the OpenTelemetry SDK for the app `serviceName` (`OTEL_SERVICE_NAME`, then a `service.name` in
 * `OTEL_RESOURCE_ATTRIBUTES`, win) when {@link tracingConfigured}; returns undefined, having loaded nothing, when not.
 * Call it once, before anything else is imported.
 */
export function startTracing(serviceName: string, env: NodeJS.ProcessEnv = process.env): Tracing | undefined {
  if (running || !tracingConfigured(env)) return running;
  // Loaded only now: the SDK and its exporters are heavy, and an app without tracing should not pay for them.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { startTracingSdk } = require('./tracing-sdk') as typeof import('./tracing-sdk');
  const named = Boolean(env.OTEL_SERVICE_NAME?.trim()) || /(^|,)\s*service\.name\s*=/.test(env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  running = startTracingSdk(named ? undefined : serviceName);
  telemetry = jobSpansOnly(new BullMQOtel({ tracerName: 'bullmq' }));
  return running;
}

/** Exports what is left and stops tracing (the app's shutdown path); a no-op when tracing is off. */
export async function stopTracing(): Promise<void> {
  const stopping = running;
  running = undefined;
  telemetry = undefined;
  await stopping?.shutdown();
}

/**
 * BullMQ's `telemetry` option for every Queue and Worker of the app (bullmq-otel): producer and consumer spans, and
 * the trace context carried in the job's options. Undefined while tracing is off, which BullMQ skips at no cost.
 */
export function queueTelemetry(): Telemetry<Context> | undefined {
  return telemetry;
}

/** A span BullMQ may use that records nothing and leaves the context as it was. */
const UNTRACED: QueueSpan<Context> = {
  setSpanOnContext: (ctx) => ctx,
  setAttribute: () => undefined,
  setAttributes: () => undefined,
  addEvent: () => undefined,
  recordException: () => undefined,
  end: () => undefined,
};

/**
 * BullMQ's telemetry recording what carries a job (producer and consumer spans) and not its workers' housekeeping
 * (internal spans: each worker's wait for the next job, stalled-job checks), which would start a trace every few
 * seconds per worker, with the Redis commands inside it.
 */
function jobSpansOnly(otel: BullMQOtel): Telemetry<Context> {
  return {
    contextManager: otel.contextManager,
    tracer: {
      startSpan: (name, options, ctx) => ((options?.kind ?? SpanKind.INTERNAL) === SpanKind.INTERNAL ? UNTRACED : otel.tracer.startSpan(name, options, ctx)),
    },
  };
}

/** The trace context of the active span, to store with what another process picks up later; null if there is none. */
export function currentTraceContext(): TraceContext | null {
  if (!running) return null;
  const span = trace.getSpanContext(context.active());
  if (!span || !isSpanContextValid(span)) return null;
  const flags = (span.traceFlags & 0xff).toString(16).padStart(2, '0');
  const tracestate = span.traceState?.serialize();
  return { traceparent: `00-${span.traceId}-${span.spanId}-${flags}`, ...(tracestate ? { tracestate } : {}) };
}

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The context of a stored trace context (a remote parent), or undefined if there is none or it does not parse. */
export function traceContextOf(stored: TraceContext | null | undefined): Context | undefined {
  const parts = typeof stored?.traceparent === 'string' ? TRACEPARENT.exec(stored.traceparent.trim()) : null;
  if (!parts || parts[1] === 'ff') return undefined;
  const spanContext = {
    traceId: parts[2],
    spanId: parts[3],
    traceFlags: parseInt(parts[4], 16) & TraceFlags.SAMPLED,
    isRemote: true,
    ...(typeof stored?.tracestate === 'string' && stored.tracestate ? { traceState: createTraceState(stored.tracestate) } : {}),
  };
  return isSpanContextValid(spanContext) ? trace.setSpanContext(ROOT_CONTEXT, spanContext) : undefined;
}

/** Runs `fn` as a child of a stored trace context (while tracing is on and there is one), else as it is. */
export function withTraceContext<T>(stored: TraceContext | null | undefined, fn: () => T): T {
  const parent = running ? traceContextOf(stored) : undefined;
  return parent ? context.with(parent, fn) : fn();
}

/**
 * A job's options with the trace it belongs to: its consumer's span becomes a child of the stored trace context
 * rather than of the (batch) publish that added it. For jobs published in bulk, long after the context was stored
 * (the outbox); returned unchanged while tracing is off or without a context.
 */
export function jobTraceOptions<Options extends object>(
  opts: Options,
  stored: TraceContext | null | undefined,
): Options & { telemetry?: { metadata: string } } {
  const parent = telemetry ? traceContextOf(stored) : undefined;
  if (!telemetry || !parent) return opts;
  return { ...opts, telemetry: { metadata: telemetry.contextManager.getMetadata(parent) } };
}

/**
 * Names the active server span after its route, as the Express instrumentation does for the routes it sees
 * (`http.route`, span `POST /verify`): for requests served below Express (serveHotRoutes). Nothing without tracing.
 */
export function nameServerSpan(method: string, route: string): void {
  const span = trace.getActiveSpan();
  if (!span) return;
  span.setAttribute('http.route', route);
  span.updateName(`${method} ${route}`);
}
