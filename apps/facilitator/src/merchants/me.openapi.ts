import { MERCHANT_API_KEY_SECURITY, NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, type OperationDoc } from '@mp/platform';
import { MERCHANT_KEY_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about MeController's routes (see @ApiDoc). */
export const ME_DOCS = {
  me: {
    operationId: 'getMerchantMe',
    summary: 'The merchant an API key belongs to',
    description:
      "How other services (the ledger) resolve a merchant's API key without reading the facilitator's tables. Requires an API key, even in open mode.",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        'The merchant and the key.',
        {
          type: 'object',
          required: ['merchantId', 'name', 'keyId'],
          additionalProperties: false,
          properties: { merchantId: { type: 'string', format: 'uuid' }, name: { type: 'string' }, keyId: { type: 'string', format: 'uuid' } },
        },
        {
          headers: NO_STORE_HEADERS,
          example: { merchantId: '0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', name: 'Weather API', keyId: '7d2c9a41-0e5b-4c8f-a1d3-6b9e8f2c4a17' },
        },
      ),
      ...MERCHANT_KEY_ERRORS,
      '503': { $ref: '#/components/responses/Unavailable' },
    },
  },
  update: {
    operationId: 'updateMerchantMe',
    summary: "Change the calling merchant's settings",
    description:
      "`allowAnyPayTo: true` lets this merchant's settlements pay any address; `false` (the default) limits them to its receiving addresses (`GET /merchants/me/receiving-addresses`). Requires an API key, even in open mode.",
    security: MERCHANT_API_KEY_SECURITY,
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { type: 'object', required: ['allowAnyPayTo'], additionalProperties: false, properties: { allowAnyPayTo: { type: 'boolean' } } },
          example: { allowAnyPayTo: true },
        },
      },
    },
    responses: {
      '200': jsonResponse(
        'The setting as stored.',
        {
          type: 'object',
          required: ['merchantId', 'allowAnyPayTo'],
          additionalProperties: false,
          properties: { merchantId: { type: 'string', format: 'uuid' }, allowAnyPayTo: { type: 'boolean' } },
        },
        { headers: NO_STORE_HEADERS, example: { merchantId: '0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', allowAnyPayTo: true } },
      ),
      '400': problemResponse('A field is missing or invalid; `invalidParams` names each one.', {
        examples: {
          invalid: {
            summary: 'Not a boolean',
            value: problemBody('validation_failed', 'invalid field(s): allowAnyPayTo', '/merchants/me', {
              invalidParams: [{ name: 'allowAnyPayTo', reason: 'must be true or false' }],
            }),
          },
        },
      }),
      ...MERCHANT_KEY_ERRORS,
    },
  },
} satisfies Record<string, OperationDoc>;
