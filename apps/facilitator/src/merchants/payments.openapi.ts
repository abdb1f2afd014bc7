import { MERCHANT_API_KEY_SECURITY, NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, uuidPathParameter, type OperationDoc } from '@mp/platform';

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
              value: {
                data: [
                  {
                    id: '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21',
                    state: 'confirmed',
                    protocol: 'x402',
                    rail: 'evm',
                    network: 'eip155:84532',
                    asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                    payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                    payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                    amount: '10000',
                    nonce: '0x951710b936e8ec0b7657d42b457a25dd7c0d92b9be38f3d0cb8972e16ac881a3',
                    scheme: 'exact',
                    x402Version: 2,
                    challengeId: null,
                    reference: null,
                    paymentIdentifier: 'order_7f3c2a9e41b64d0c',
                    txHash: '0x68e5b1a3c9d0f2e4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d82f6c',
                    errorReason: null,
                    errorMessage: null,
                    createdAt: '2026-12-01T10:15:02.114Z',
                    updatedAt: '2026-12-01T10:15:04.530Z',
                    settledAt: '2026-12-01T10:15:04.530Z',
                  },
                ],
                nextCursor: 'WyIyMDI2LTEyLTAxVDEwOjE1OjAyLjExNFoiLCI1YjFmNmE1Mi0yZjBlLTRjN2UtOWE0My0zZjZmN2QwYjllMjEiXQ',
              },
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
      '401': { $ref: '#/components/responses/Unauthorized' },
      '429': { $ref: '#/components/responses/RateLimited' },
      '500': { $ref: '#/components/responses/InternalError' },
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
        {
          headers: NO_STORE_HEADERS,
          examples: {
            confirmed: {
              summary: 'A confirmed payment',
              value: {
                id: '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21',
                state: 'confirmed',
                protocol: 'x402',
                rail: 'evm',
                network: 'eip155:84532',
                asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                payer: '0x277b6EdC5E0664BDa72eB0c84Fe1E44af4bEFe6e',
                payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                amount: '10000',
                nonce: '0x951710b936e8ec0b7657d42b457a25dd7c0d92b9be38f3d0cb8972e16ac881a3',
                scheme: 'exact',
                x402Version: 2,
                challengeId: null,
                reference: null,
                paymentIdentifier: 'order_7f3c2a9e41b64d0c',
                txHash: '0x68e5b1a3c9d0f2e4a6b8c0d2e4f6a8b0c2d4e6f8a0b2c4d6e8f0a2b4c6d82f6c',
                errorReason: null,
                errorMessage: null,
                createdAt: '2026-12-01T10:15:02.114Z',
                updatedAt: '2026-12-01T10:15:04.530Z',
                settledAt: '2026-12-01T10:15:04.530Z',
              },
            },
          },
        },
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
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': problemResponse("No such payment for this merchant (it does not exist, or it is another merchant's).", {
        examples: {
          notFound: {
            summary: 'Unknown or not yours',
            value: problemBody('not_found', 'no payment 5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21', '/payments/5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21'),
          },
        },
      }),
      '429': { $ref: '#/components/responses/RateLimited' },
      '500': { $ref: '#/components/responses/InternalError' },
      '503': { $ref: '#/components/responses/Unavailable' },
    },
  },
} satisfies Record<string, OperationDoc>;
