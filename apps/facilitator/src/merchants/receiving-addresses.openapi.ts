import { MERCHANT_API_KEY_SECURITY, NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, type OperationDoc } from '@mp/platform';
import { JSON_BODY_ERRORS, MERCHANT_KEY_ERRORS } from '../openapi.shared';

const ADDRESS_EXAMPLE = { network: 'eip155:84532', address: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2', createdAt: '2026-12-01T10:02:11.310Z' };

/** What the OpenAPI document says about ReceivingAddressesController's routes (see @ApiDoc). */
export const RECEIVING_ADDRESSES_DOCS = {
  list: {
    operationId: 'listReceivingAddresses',
    summary: "The calling merchant's receiving addresses",
    description:
      "Where this merchant's settlements may send money, per network, and whether it allows any address. Requires an API key, even in open mode; only the key's own merchant is ever read.",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        'Its addresses, by network then address.',
        {
          type: 'object',
          required: ['allowAnyPayTo', 'data'],
          additionalProperties: false,
          properties: { allowAnyPayTo: { type: 'boolean' }, data: { type: 'array', items: { $ref: '#/components/schemas/ReceivingAddress' } } },
        },
        { headers: NO_STORE_HEADERS, example: { allowAnyPayTo: false, data: [ADDRESS_EXAMPLE] } },
      ),
      ...MERCHANT_KEY_ERRORS,
    },
  },
  declare: {
    operationId: 'declareReceivingAddress',
    summary: 'Declare an address the calling merchant is paid at',
    description:
      'Any case is accepted (a mixed-case address must carry a valid EIP-55 checksum); it is stored and compared ignoring case. Declaring an address twice is harmless (200). At most 100 addresses per merchant. The merchant CLI does the same: `node scripts/merchants.mjs receiving-addresses add <merchantId> <network>:<address>`.',
    security: MERCHANT_API_KEY_SECURITY,
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['network', 'address'],
            additionalProperties: false,
            properties: { network: { type: 'string', description: 'CAIP-2, `eip155:<chainId>`' }, address: { type: 'string' } },
          },
          example: { network: 'eip155:84532', address: '0xcdaf545f03d8da01c298d8604f29d4c80493f6b2' },
        },
      },
    },
    responses: {
      '200': jsonResponse(
        'It was declared already.',
        { $ref: '#/components/schemas/ReceivingAddress' },
        { headers: NO_STORE_HEADERS, example: ADDRESS_EXAMPLE },
      ),
      '201': jsonResponse('Declared now.', { $ref: '#/components/schemas/ReceivingAddress' }, { headers: NO_STORE_HEADERS, example: ADDRESS_EXAMPLE }),
      '400': problemResponse('A field is missing or invalid; `invalidParams` names each one.', {
        examples: {
          invalid: {
            summary: 'A typo in a checksummed address',
            value: problemBody('validation_failed', 'invalid field(s): address', '/merchants/me/receiving-addresses', {
              invalidParams: [{ name: 'address', reason: 'has a wrong EIP-55 checksum (did you mean 0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2?)' }],
            }),
          },
        },
      }),
      ...MERCHANT_KEY_ERRORS,
      ...JSON_BODY_ERRORS,
    },
  },
  remove: {
    operationId: 'removeReceivingAddress',
    summary: 'Stop being paid at an address',
    description:
      "Settlements to it are refused from now on (`pay_to_not_allowed`), unless the merchant allows any address. Another merchant's address is the same 404 as one never declared.",
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [
      { name: 'network', in: 'path', required: true, schema: { type: 'string' }, description: 'CAIP-2, e.g. `eip155:84532`.' },
      { name: 'address', in: 'path', required: true, schema: { type: 'string' }, description: 'In any case.' },
    ],
    responses: {
      '204': { description: 'Removed.' },
      '400': problemResponse('A field is missing or invalid; `invalidParams` names each one.', {
        examples: {
          invalid: {
            summary: 'Not a CAIP-2 network',
            value: problemBody(
              'validation_failed',
              'invalid path parameter(s): network',
              '/merchants/me/receiving-addresses/base/0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
              { invalidParams: [{ name: 'network', reason: 'must be a CAIP-2 EVM network id, e.g. eip155:8453' }] },
            ),
          },
        },
      }),
      ...MERCHANT_KEY_ERRORS,
      '404': problemResponse('This merchant has not declared it.', {
        example: problemBody(
          'not_found',
          'no receiving address 0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2 on eip155:84532',
          '/merchants/me/receiving-addresses/eip155:84532/0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
        ),
      }),
    },
  },
} satisfies Record<string, OperationDoc>;
