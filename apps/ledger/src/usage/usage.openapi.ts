import { MERCHANT_API_KEY_SECURITY, jsonResponse, problemBody, problemResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS } from '../openapi.shared';
import { AVG_SCALE } from './meter';

/** What the OpenAPI document says about UsageController's routes (see @ApiDoc). */

const EVENT_EXAMPLE = {
  specversion: '1.0',
  id: '5c10fade-1c9e-4d6e-8275-c52c36731d3c',
  source: 'api-gateway/eu-1',
  type: 'llm.completion',
  subject: 'customer-42',
  time: '2026-12-02T10:00:00Z',
  data: { tokens: 1234, model: 'small' },
};

const EVENT_SCHEMA = {
  type: 'object',
  required: ['id', 'source', 'type', 'subject'],
  properties: {
    specversion: { type: 'string', const: '1.0', description: 'CloudEvents version; absent is read as 1.0' },
    id: { type: 'string', minLength: 1, maxLength: 256, description: 'unique per source: the dedupe key with source' },
    source: { type: 'string', minLength: 1, maxLength: 512, description: 'a URI reference naming who produced the event' },
    type: { type: 'string', minLength: 1, maxLength: 256, description: "what a meter's eventType selects" },
    subject: { type: 'string', minLength: 1, maxLength: 256, description: 'the customer the usage is about (a payer or customer key)' },
    time: { type: 'string', format: 'date-time', description: 'RFC 3339; from 35 days ago to 5 minutes ahead; default: when received' },
    data: { type: 'object', description: 'the values meters read (`$.tokens`)' },
    datacontenttype: { type: 'string', description: 'application/json if given' },
    dataschema: { type: 'string', description: 'a URI, not kept' },
  },
  additionalProperties: { description: 'CloudEvents extension attributes (1 to 20 lowercase letters or digits) are accepted and not kept' },
};

const METER_EXAMPLE = {
  id: 'llm-tokens',
  eventType: 'llm.completion',
  aggregation: 'sum',
  valueProperty: '$.tokens',
  groupBy: { model: '$.model' },
  createdAt: '2026-12-02T09:00:00.000Z',
};

export const USAGE_DOCS = {
  ingest: {
    operationId: 'ingestUsageEvents',
    summary: 'Send usage events (CloudEvents), one or a batch of up to 100',
    description: [
      'The body is one CloudEvent (`application/cloudevents+json`), a JSON array of them (`application/cloudevents-batch+json`), or either as `application/json`. Required: `id`, `source`, `type`, `subject`; `specversion` must be `"1.0"` when given (absent is read as 1.0); `time` (RFC 3339) defaults to when the event is received; `data` is an object.',
      '',
      '**All or nothing.** A batch with any malformed event, or any event whose `time` lies more than 35 days back or more than 5 minutes ahead, is refused whole (400) and nothing is stored: `invalidParams` names each one by its place (`events[3].time`) with a `reasonCode` (`invalid_event`, `event_too_old`, `event_in_future`). The problem code is `validation_failed` if any event is malformed, else `event_too_old` / `event_in_future`. More than 100 events: 413 `payload_too_large`.',
      '',
      '**Exactly once.** An event is identified by (merchant, `source`, `id`): a copy of an event already stored, sent again in a retry, after a restart, in the same batch or concurrently, is counted in `duplicates` and never stored twice (the first copy wins; copies are not compared). Events are kept, so their keys are remembered at least as long as the 32 days promised.',
    ].join('\n'),
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        '`{accepted, duplicates}`: events stored by this request, and copies of events already stored.',
        { type: 'object', properties: { accepted: { type: 'integer' }, duplicates: { type: 'integer' } } },
        { example: { accepted: 99, duplicates: 1 } },
      ),
      ...LEDGER_ERRORS,
      '400': problemResponse(
        'A malformed event or body (`validation_failed`), or an event outside the accepted time window (`event_too_old`, `event_in_future`); nothing is stored.',
        {
          examples: {
            tooOld: {
              summary: 'An event older than 35 days',
              value: problemBody('event_too_old', 'invalid event(s), nothing was stored: events[3].time', undefined, {
                invalidParams: [
                  {
                    name: 'events[3].time',
                    reason: 'event_too_old: events may be at most 35 days old (the oldest accepted now is 2026-10-28T10:00:00.000Z)',
                    reasonCode: 'event_too_old',
                  },
                ],
              }),
            },
          },
        },
      ),
      '413': problemResponse('More than 100 events in one request (`payload_too_large`, `maxEvents`), or a body over BODY_LIMIT_BYTES; nothing is stored.'),
      '415': problemResponse('The body is not JSON (`unsupported_media_type`).'),
    },
    requestBody: {
      required: true,
      content: {
        'application/cloudevents+json': { schema: EVENT_SCHEMA, example: EVENT_EXAMPLE },
        'application/cloudevents-batch+json': { schema: { type: 'array', items: EVENT_SCHEMA, minItems: 1, maxItems: 100 }, example: [EVENT_EXAMPLE] },
        'application/json': { schema: { oneOf: [EVENT_SCHEMA, { type: 'array', items: EVENT_SCHEMA, minItems: 1, maxItems: 100 }] }, example: [EVENT_EXAMPLE] },
      },
    },
  },
  createMeter: {
    operationId: 'createUsageMeter',
    summary: 'Create a meter',
    description: `A meter totals the \`valueProperty\` (a JSON path into the events' \`data\`, such as \`$.tokens\`) of the merchant's events of \`eventType\` with its \`aggregation\`: \`sum\`, \`count\` (events; no valueProperty), \`min\`, \`max\`, \`avg\` (rounded half away from zero to ${AVG_SCALE} decimal places), \`unique_count\` (distinct values), \`latest\` (the value of the last event by time). A value is a JSON number or a string holding a plain decimal; events without one count only for \`count\`. \`groupBy\` splits totals by dimensions of the data. The merchant chooses the \`id\`: the same definition again answers the meter (200); another definition under the key is 409 \`meter_conflict\`. Meters are never changed.`,
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '201': jsonResponse('The meter: `{id, eventType, aggregation, valueProperty, groupBy, createdAt}`.', { type: 'object' }, { example: METER_EXAMPLE }),
      '200': jsonResponse('The meter already created under this key with the same definition.', { type: 'object' }, { example: METER_EXAMPLE }),
      ...LEDGER_ERRORS,
      '409': problemResponse('The key is taken by a meter with another definition (`conflictingFields`); nothing is written.'),
    },
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' }, example: METER_EXAMPLE } } },
  },
  listMeters: {
    operationId: 'listUsageMeters',
    summary: "The merchant's meters, by key",
    description: '',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('`{data: Meter[]}`', { type: 'object' }, { example: { data: [METER_EXAMPLE] } }), ...LEDGER_ERRORS },
  },
  getMeter: {
    operationId: 'getUsageMeter',
    summary: 'One meter',
    description: '',
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse('The meter.', { type: 'object' }, { example: METER_EXAMPLE }),
      ...LEDGER_ERRORS,
      '404': problemResponse('The merchant has no meter of this key.'),
    },
    parameters: [{ name: 'key', in: 'path', required: true, schema: { type: 'string' }, description: "The meter's id" }],
  },
  summary: {
    operationId: 'getUsageMeterSummary',
    summary: "A meter's totals per window",
    description:
      "Totals, computed in SQL, of the meter over the merchant's events of its type with `from <= time < to` (each bound optional), of one `subject` if given (else of all), per UTC calendar window of `windowSize` (`hour`, `day`, `month`; `none`, the default: one total) and per `groupBy` dimension. Windows without events are not listed. Each `value` is an exact decimal string, or null when no event of the window had a value (min, max, avg, latest); `count` and `unique_count` are whole numbers. With windowSize none, `windowStart`/`windowEnd` are `from`/`to` (null when not given).",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        '`{meter, aggregation, subject, from, to, windowSize, data: [{windowStart, windowEnd, groupBy?, value}]}`',
        { type: 'object' },
        {
          example: {
            meter: 'llm-tokens',
            aggregation: 'sum',
            subject: 'customer-42',
            from: '2026-12-01T00:00:00.000Z',
            to: '2026-12-03T00:00:00.000Z',
            windowSize: 'day',
            data: [
              { windowStart: '2026-12-01T00:00:00.000Z', windowEnd: '2026-12-02T00:00:00.000Z', groupBy: { model: 'small' }, value: '48210' },
              { windowStart: '2026-12-02T00:00:00.000Z', windowEnd: '2026-12-03T00:00:00.000Z', groupBy: { model: 'small' }, value: '1234' },
            ],
          },
        },
      ),
      ...LEDGER_ERRORS,
      '404': problemResponse('The merchant has no meter of this key.'),
    },
    parameters: [
      { name: 'key', in: 'path', required: true, schema: { type: 'string' }, description: "The meter's id" },
      { name: 'subject', in: 'query', required: false, schema: { type: 'string' }, description: "Only this subject's events" },
      { name: 'from', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'Events at or after' },
      { name: 'to', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'Events before' },
      { name: 'windowSize', in: 'query', required: false, schema: { type: 'string', enum: ['hour', 'day', 'month', 'none'] }, description: 'Default none' },
    ],
  },
} satisfies Record<string, OperationDoc>;
