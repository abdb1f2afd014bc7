-- The W3C trace context ({"traceparent": …, "tracestate": …}) an event was written in, while tracing is on (OTEL_*):
-- the relay publishes the event in it, so the ledger's booking joins the payment's trace. NULL without tracing.
ALTER TABLE "facilitator"."payment_events" ADD COLUMN "trace_context" JSONB;
