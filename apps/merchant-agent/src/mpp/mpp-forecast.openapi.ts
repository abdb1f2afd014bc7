import { NO_STORE_HEADERS, jsonResponse, problemBody, type OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about MppForecastController's routes (see @ApiDoc). */
export const MPP_FORECAST_DOCS = {
  forecast: {
    operationId: 'postMppForecast',
    summary: 'A forecast paid with MPP: evm (MERCHANT_PRICE of the token) or stripe (MERCHANT_STRIPE_PRICE)',
    description:
      "Without a credential: 402 with one `WWW-Authenticate: Payment` challenge per offer, from the facilitator, bound to this route (`opaque.resource`) and to the body's digest. With `Authorization: Payment …` (or `Payment-Authorization`): the facilitator settles it, then the handler runs, and the answer carries `Payment-Receipt`. The stripe offer is made when MERCHANT_STRIPE_NETWORK_ID is set. Discovery: GET /openapi.json.",
    parameters: [{ name: 'Authorization', in: 'header', required: false, schema: { type: 'string' }, description: '`Payment <base64url JSON credential>`.' }],
    requestBody: {
      required: false,
      content: {
        'application/json': { schema: { type: 'object', properties: { city: { type: 'string' } }, additionalProperties: false }, example: { city: 'Porto' } },
      },
    },
    responses: {
      '200': jsonResponse(
        'Paid and settled: the forecast.',
        { $ref: '#/components/schemas/Forecast' },
        {
          headers: {
            'Payment-Receipt': { schema: { type: 'string' }, description: 'base64url JSON MppReceipt' },
            'Cache-Control': { schema: { type: 'string', const: 'private' } },
          },
          example: {
            location: 'Porto',
            issuedAt: '2026-12-01T04:20:22.804Z',
            hours: [
              { in: 1, tempC: 19, sky: 'clear' },
              { in: 2, tempC: 18, sky: 'clear' },
              { in: 3, tempC: 17, sky: 'cloudy' },
            ],
          },
        },
      ),
      '400': {
        description: '`bad-request` (more than one credential) or `method-unsupported`, with fresh challenges in WWW-Authenticate.',
        content: {
          'application/problem+json': {
            schema: { type: 'object' },
            example: { type: 'https://paymentauth.org/problems/bad-request', title: 'Bad Request', status: 400, detail: 'send exactly one Payment credential' },
          },
        },
      },
      '402': {
        description: "`payment-required` (no credential) or the facilitator's payment problem, relayed; `WWW-Authenticate` carries fresh challenges.",
        headers: {
          'WWW-Authenticate': {
            description: 'One field per fresh challenge.',
            schema: { type: 'string' },
            example:
              'Payment id="q0QmS3o0v8zjv7f9wO0fY1b2mJ0Hk7Jz2l1qkHq3c1M", realm="shop.example", method="evm", intent="charge", request="eyJhbW91bnQiOiIyNTAwMCIsImN1cnJlbmN5IjoiMHgwMzZDYkQ1Mzg0MmM1NDI2NjM0ZTc5Mjk1NDFlQzIzMThmM2RDRjdlIiwibWV0aG9kRGV0YWlscyI6eyJjaGFpbklkIjo4NDUzMiwiY3JlZGVudGlhbFR5cGVzIjpbImF1dGhvcml6YXRpb24iXSwiZGVjaW1hbHMiOjZ9LCJyZWNpcGllbnQiOiIweENkYUY1NDVmMDNEOGRBMDFDMjk4ZDg2MDRmMjlkNGM4MDQ5M2Y2YjIifQ", expires="2026-12-01T10:20:00Z", opaque="eyJfbm9uY2UiOiJoM2k0bTVuNm83cDhxOXIwIiwicmVzb3VyY2UiOiJQT1NUIC9tcHAvZm9yZWNhc3QifQ"',
          },
          ...NO_STORE_HEADERS,
        },
        content: {
          'application/problem+json': {
            schema: { type: 'object' },
            example: {
              type: 'https://paymentauth.org/problems/payment-required',
              title: 'Payment Required',
              status: 402,
              detail: 'this resource is paid; answer one of the challenges',
            },
          },
        },
      },
      '500': {
        description: '`internal-payment-error` relayed (retry the same credential), or an internal error.',
        content: { 'application/problem+json': { schema: { type: 'object' } } },
      },
      '503': {
        description: "The facilitator is unreachable or refused the merchant's request.",
        content: {
          'application/problem+json': {
            schema: { type: 'object' },
            example: problemBody('upstream_unavailable', 'the payment facilitator is unreachable: fetch failed', '/mpp/forecast'),
          },
        },
      },
    },
  },
} satisfies Record<string, OperationDoc>;
