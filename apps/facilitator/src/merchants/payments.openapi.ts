import { MERCHANT_API_KEY_SECURITY, NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, uuidPathParameter, type OperationDoc } from '@mp/platform';
import { MERCHANT_KEY_ERRORS, PAYMENT_EXAMPLE } from '../openapi.shared';

/** What the OpenAPI document says about PaymentsController's routes (see @ApiDoc). */
export const PAYMENTS_DOCS = {
  list: {
    operationId: 'listPayments',
    summary: "The calling merchant's payments, newest first",
    description:
      "Only the payments settled with this merchant's API keys, newest first, in pages. Requires an API key even in open mode. Counts against the key's rate limit.",
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 }, description: 'Payments per page.' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: 200 }, description: 'The `nextCursor` of the previous page.' },
      { name: 'state', in: 'query', required: false, schema: { $ref: '#/components/schemas/PaymentState' }, description: 'Only payments in this state.' },
    ],
    responses: {
      '200': jsonResponse(
        'A page of payments.',
        { $ref: '#/components/schemas/PaymentList' },
        {
          headers: NO_STORE_HEADERS,
          examples: {
            page: {
              summary: 'One page, more to come',
              value: { data: [PAYMENT_EXAMPLE], nextCursor: 'WyIyMDI2LTEyLTAxVDEwOjE1OjAyLjExNFoiLCI1YjFmNmE1Mi0yZjBlLTRjN2UtOWE0My0zZjZmN2QwYjllMjEiXQ' },
            },
          },
        },
      ),
      '400': problemResponse('A bad query parameter, named in `invalidParams`.', {
        examples: {
          badLimit: {
            summary: 'limit out of range',
            value: problemBody('validation_failed', 'invalid query parameter(s): limit', '/payments?limit=500', {
              invalidParams: [{ name: 'limit', reason: 'must be an integer from 1 to 100' }],
            }),
          },
        },
      }),
      ...MERCHANT_KEY_ERRORS,
      '503': { $ref: '#/components/responses/Unavailable' },
    },
  },
  get: {
    operationId: 'getPayment',
    summary: "One of the calling merchant's payments",
    description:
      "The payment, if it is this merchant's. Another merchant's payment is the same 404 as one that does not exist. Requires an API key even in open mode.",
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [uuidPathParameter('id', 'The payment id (as in webhooks and in `GET /payments`).')],
    responses: {
      '200': jsonResponse(
        'The payment.',
        { $ref: '#/components/schemas/Payment' },
        { headers: NO_STORE_HEADERS, examples: { confirmed: { summary: 'A confirmed payment', value: PAYMENT_EXAMPLE } } },
      ),
      '400': problemResponse('The id is not a UUID.', {
        examples: {
          badId: {
            summary: 'Not a payment id',
            value: problemBody('validation_failed', 'invalid path parameter: id', '/payments/42', {
              invalidParams: [{ name: 'id', reason: 'must be a payment id (a UUID)' }],
            }),
          },
        },
      }),
      ...MERCHANT_KEY_ERRORS,
      '404': problemResponse("No such payment for this merchant (it does not exist, or it is another merchant's).", {
        examples: {
          notFound: {
            summary: 'Unknown or not yours',
            value: problemBody('not_found', 'no payment 5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21', '/payments/5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21'),
          },
        },
      }),
      '503': { $ref: '#/components/responses/Unavailable' },
    },
  },
} satisfies Record<string, OperationDoc>;
