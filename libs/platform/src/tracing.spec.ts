import http from 'node:http';
import { createRequire } from 'node:module';
import { trace } from '@opentelemetry/api';
import { currentTraceContext, jobTraceOptions, queueTelemetry, startTracing, traceContextOf, tracingConfigured, withTraceContext } from './tracing';

const ENDPOINT = 'http://127.0.0.1:4318';
const TRACEPARENT = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';

describe('tracingConfigured: traces only when an exporter or an endpoint is configured', () => {
  it.each([
    [{}, false],
    [{ OTEL_SERVICE_NAME: 'ledger', OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod', OTEL_TRACES_SAMPLER: 'always_on' }, false],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }, true],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: `${ENDPOINT}/v1/traces` }, true],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: '  ' }, false],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, true],
    [{ OTEL_TRACES_EXPORTER: 'console' }, true],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }, false],
    [{ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }, false],
    [{ OTEL_SDK_DISABLED: 'TRUE', OTEL_TRACES_EXPORTER: 'console' }, false],
    [{ OTEL_SDK_DISABLED: 'false', OTEL_EXPORTER_OTLP_ENDPOINT: ENDPOINT }, true],
  ] as [NodeJS.ProcessEnv, boolean][])('%j → %s', (env, expected) => {
    expect(tracingConfigured(env)).toBe(expected);
  });
});

describe('startTracing without configuration', () => {
  it('starts nothing, loads no SDK and patches nothing: every helper is a no-op', () => {
    const emit = http.Server.prototype.emit;
    expect(startTracing('facilitator', {})).toBeUndefined();

    const loaded = Object.keys(createRequire(__filename).cache);
    expect(loaded.filter((file) => /@opentelemetry[\\/](sdk-node|instrumentation)/.test(file))).toEqual([]);
    expect(http.Server.prototype.emit).toBe(emit);
    expect(trace.getTracer('test').startSpan('nothing').isRecording()).toBe(false);

    expect(queueTelemetry()).toBeUndefined();
    expect(currentTraceContext()).toBeNull();
    const opts = { jobId: 'event-1' };
    expect(jobTraceOptions(opts, { traceparent: TRACEPARENT })).toBe(opts);
    expect(withTraceContext({ traceparent: TRACEPARENT }, () => trace.getActiveSpan())).toBeUndefined();
  });
});

describe('traceContextOf: a stored W3C trace context as a remote parent', () => {
  it('reads traceparent and tracestate', () => {
    const parent = trace.getSpanContext(traceContextOf({ traceparent: TRACEPARENT, tracestate: 'vendor=abc' })!);
    expect(parent).toMatchObject({ traceId: '0af7651916cd43dd8448eb211c80319c', spanId: 'b7ad6b7169203331', traceFlags: 1, isRemote: true });
    expect(parent?.traceState?.get('vendor')).toBe('abc');
  });

  it.each([
    null,
    undefined,
    {},
    { traceparent: 'nonsense' },
    { traceparent: `ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01` },
    { traceparent: '00-00000000000000000000000000000000-b7ad6b7169203331-01' },
  ])('has none for %j', (stored) => {
    expect(traceContextOf(stored as never)).toBeUndefined();
  });
});
