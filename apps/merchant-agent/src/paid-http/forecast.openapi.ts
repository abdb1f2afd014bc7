import { jsonResponse, type OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about ForecastController's routes (see @ApiDoc). */
export const FORECAST_DOCS = {
  forecast: {
    operationId: 'getPaidForecast',
    summary: 'A paid resource: a weather forecast for MERCHANT_PRICE atomic units',
    description:
      "Guarded by the official `@x402/express` `paymentMiddleware` (x402 v2, scheme `exact`, `maxTimeoutSeconds` 120), which talks to the facilitator at FACILITATOR_URL (it fetches /supported when the app starts, and again on the next paid request if that failed).\n\nFlow: a request without payment gets 402 with a PAYMENT-REQUIRED header. The client signs an EIP-3009 authorization and repeats the request with PAYMENT-SIGNATURE. The middleware calls the facilitator's /verify, runs the handler, then calls /settle (retrying once on `settlement_pending`) and only then releases the response, with a PAYMENT-RESPONSE header. If settlement fails the buffered body is dropped and the answer is 402 with PAYMENT-RESPONSE (`success: false`). The middleware also reads the v1 `X-PAYMENT` header, but this route advertises v2 requirements only.",
    parameters: [
      {
        name: 'PAYMENT-SIGNATURE',
        in: 'header',
        required: false,
        description: "base64 (standard alphabet) of the UTF-8 JSON of an x402 v2 PaymentPayload whose `accepted` is one of the 402's `accepts`.",
        schema: {
          type: 'string',
          contentEncoding: 'base64',
          contentMediaType: 'application/json',
          contentSchema: { $ref: '#/components/schemas/PaymentPayloadV2' },
        },
      },
    ],
    responses: {
      '200': jsonResponse(
        'Paid and settled: the resource.',
        { $ref: '#/components/schemas/Forecast' },
        {
          headers: {
            'PAYMENT-RESPONSE': {
              description: 'base64 of the JSON SettleResponse from the facilitator.',
              schema: {
                type: 'string',
                contentEncoding: 'base64',
                contentMediaType: 'application/json',
                contentSchema: { $ref: '#/components/schemas/SettleResponse' },
              },
              example:
                'eyJzdWNjZXNzIjp0cnVlLCJwYXllciI6IjB4Mjc3YjZFZEM1RTA2NjRCRGE3MmVCMGM4NEZlMUU0NGFmNGJFRmU2ZSIsInRyYW5zYWN0aW9uIjoiMHgwYzlhMDYyMjBkZTgyNWU2ZTczMzM1MjIxNzM5NzdlOGE4YmY2ZjdmYjBmMmRlNjNhMjEzZjhkZDU3YzY4MDM0IiwibmV0d29yayI6ImVpcDE1NTo4NDUzMiJ9',
            },
          },
          example: {
            location: 'Lisbon',
            issuedAt: '2026-12-01T04:20:22.804Z',
            hours: [
              { in: 1, tempC: 19, sky: 'clear' },
              { in: 2, tempC: 18, sky: 'clear' },
              { in: 3, tempC: 17, sky: 'cloudy' },
            ],
          },
        },
      ),
      '402': {
        description:
          'Payment required: no payment, a payment that does not match or does not verify, or a settlement that failed (then PAYMENT-RESPONSE is set too). The JSON body is `{}`; a browser (Accept: text/html and a Mozilla user agent) gets an HTML paywall page instead.',
        headers: {
          'PAYMENT-REQUIRED': {
            description: 'base64 of the JSON PaymentRequired: what to pay, to whom, on which network.',
            schema: {
              type: 'string',
              contentEncoding: 'base64',
              contentMediaType: 'application/json',
              contentSchema: { $ref: '#/components/schemas/PaymentRequired' },
            },
            example:
              'eyJ4NDAyVmVyc2lvbiI6MiwiZXJyb3IiOiJQYXltZW50IHJlcXVpcmVkIiwicmVzb3VyY2UiOnsidXJsIjoiaHR0cDovLzEyNy4wLjAuMTo0MDQwL3BhaWQvZm9yZWNhc3QiLCJkZXNjcmlwdGlvbiI6IkEgbWFjaGluZS1yZWFkYWJsZSB3ZWF0aGVyIGZvcmVjYXN0IiwibWltZVR5cGUiOiJhcHBsaWNhdGlvbi9qc29uIn0sImFjY2VwdHMiOlt7InNjaGVtZSI6ImV4YWN0IiwibmV0d29yayI6ImVpcDE1NTo4NDUzMiIsImFtb3VudCI6IjEwMDAwIiwiYXNzZXQiOiIweDAzNkNiRDUzODQyYzU0MjY2MzRlNzkyOTU0MWVDMjMxOGYzZENGN2UiLCJwYXlUbyI6IjB4Q2RhRjU0NWYwM0Q4ZEEwMUMyOThkODYwNGYyOWQ0YzgwNDkzZjZiMiIsIm1heFRpbWVvdXRTZWNvbmRzIjoxMjAsImV4dHJhIjp7Im5hbWUiOiJVU0RDIiwidmVyc2lvbiI6IjIifX1dfQ==',
          },
          'PAYMENT-RESPONSE': {
            description: 'Only after a failed settlement: base64 of the JSON SettleResponse (`success: false`).',
            schema: {
              type: 'string',
              contentEncoding: 'base64',
              contentMediaType: 'application/json',
              contentSchema: { $ref: '#/components/schemas/SettleResponse' },
            },
          },
        },
        content: { 'application/json': { schema: { type: 'object' }, example: {} }, 'text/html': { schema: { type: 'string' } } },
      },
      '500': jsonResponse(
        "The middleware failed: e.g. the facilitator's /supported could not be fetched (at start and again on this request), or any other unexpected error (logged by the middleware).",
        { $ref: '#/components/schemas/PaywallError' },
        { example: { error: 'Internal Server Error' } },
      ),
      '502': jsonResponse(
        'The facilitator answered 2xx with a body the x402 client cannot parse (FacilitatorResponseError).',
        { $ref: '#/components/schemas/PaywallError' },
        { example: { error: 'Facilitator verify returned invalid data: {"ok":true}' } },
      ),
    },
  },
} satisfies Record<string, OperationDoc>;
