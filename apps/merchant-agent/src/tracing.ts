// Imported first by main.ts: OpenTelemetry patches express, pg and ioredis as they are loaded (off unless OTEL_* asks).
import { startTracing } from '@mp/platform/tracing';

startTracing('merchant-agent');
