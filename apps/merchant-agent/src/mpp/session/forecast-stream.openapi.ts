import { NO_STORE_HEADERS, type OperationDoc } from '@mp/platform';

const paymentHeader = {
  name: 'Authorization',
  in: 'header',
  required: false,
  schema: { type: 'string' },
  description: '`Payment <base64url JSON credential>` of an evm `session` challenge: open (GET), voucher, topUp or close (POST).',
} as const;
const problem = (description: string) => ({ description, content: { 'application/problem+json': { schema: { type: 'object' } } } });

/** What the OpenAPI document says about ForecastStreamController's routes (see @ApiDoc). */
export const FORECAST_STREAM_DOCS = {
  stream: {
    operationId: 'getMppForecastStream',
    summary: 'A forecast streamed hour by hour over SSE, paid per hour through an MPP evm session',
    description:
      'Without a credential: 402 with a `WWW-Authenticate: Payment` challenge of `{method: "evm", intent: "session"}` (price per forecast hour: MERCHANT_SESSION_UNIT_PRICE; suggestedDeposit: MERCHANT_SESSION_SUGGESTED_DEPOSIT). With the open credential: the facilitator opens (or resumes) the channel and the answer is `text/event-stream`: each hour is charged to the channel (spent recorded by the facilitator) before its `event: message` is written; when the accepted vouchers do not cover the next hour, `event: payment-need-voucher` `{channelId, requiredCumulative, acceptedCumulative, deposit}` and the stream waits (MERCHANT_SESSION_VOUCHER_WAIT_MS) for the voucher POSTed to this URL. It ends with `event: payment-receipt` (the session receipt: acceptedCumulative, spent). `Idempotency-Key`: a replayed stream is not charged again.',
    parameters: [
      paymentHeader,
      {
        name: 'hours',
        in: 'query',
        required: false,
        schema: { type: 'integer', minimum: 1, maximum: 168, default: 24 },
        description: 'Forecast hours to stream (units).',
      },
      { name: 'city', in: 'query', required: false, schema: { type: 'string', maxLength: 100, default: 'Lisbon' } },
      { name: 'Idempotency-Key', in: 'header', required: false, schema: { type: 'string', maxLength: 128 } },
    ],
    responses: {
      '200': {
        description: 'The metered stream.',
        headers: { 'Payment-Receipt': { schema: { type: 'string' }, description: 'base64url JSON session receipt of the open' } },
        content: {
          'text/event-stream': { schema: { type: 'string' }, example: 'event: message\ndata: {"location":"Lisbon","in":1,"tempC":18,"sky":"clear"}\n\n' },
        },
      },
      '400': problem('`hours` out of range, or more than one credential.'),
      '402': problem('Payment required, or the credential was refused (`session/*` problem types), with fresh challenges.'),
      '410': problem('`session/channel-not-found` or `session/channel-finalized`.'),
      '503': problem('The facilitator is unreachable.'),
    },
  },
  credential: {
    operationId: 'postMppForecastStreamCredential',
    summary: "A voucher, top-up or close for the stream's session channel",
    description:
      'The credential is relayed to the facilitator. 204 with `Payment-Receipt` (after a close, its `txHash`). A stream waiting for a voucher resumes as soon as it is accepted.',
    parameters: [paymentHeader],
    responses: {
      '204': { description: 'Accepted.', headers: { 'Payment-Receipt': { schema: { type: 'string' } }, ...NO_STORE_HEADERS } },
      '400': problem('More than one credential, or a malformed one.'),
      '402': problem('Refused (`session/*` problem types), with fresh challenges.'),
      '409': problem('`session/transaction-reverted`.'),
      '410': problem('`session/channel-not-found` or `session/channel-finalized`.'),
      '503': problem('The facilitator is unreachable.'),
    },
  },
} satisfies Record<string, OperationDoc>;
