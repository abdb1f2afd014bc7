import { NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, uuidPathParameter, type OperationDoc } from '@mp/platform';

const OPERATOR = [{ operatorToken: [] }];
const MERCHANT_ID = uuidPathParameter('merchantId', "The merchant's id.");
const RECEIVING_ADDRESS = {
  type: 'object',
  additionalProperties: false,
  required: ['network', 'address', 'createdAt'],
  properties: {
    network: { type: 'string' },
    address: { type: 'string', description: 'EIP-55 checksummed' },
    createdAt: { type: 'string', format: 'date-time' },
  },
};
// the examples' merchant, API key and webhook delivery; routes override what differs
const API_KEY = {
  keyId: '4f1c9a7e-2b3d-4e5f-8a6b-7c8d9e0f1a2b',
  prefix: 'k3x7q2ab',
  name: 'default',
  createdAt: '2026-12-01T10:00:00.000Z',
  lastUsedAt: '2026-12-01T10:15:02.000Z',
  revokedAt: null,
};
const MERCHANT = {
  merchantId: '0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90',
  name: 'Weather API',
  webhookUrl: 'https://weather.example/hooks/x402',
  allowAnyPayTo: false,
  receivingAddresses: [{ network: 'eip155:84532', address: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2', createdAt: '2026-12-01T10:00:00.000Z' }],
  apiKeys: [API_KEY],
  createdAt: '2026-12-01T10:00:00.000Z',
  disabledAt: null,
};
const NEW_API_KEY = { ...API_KEY, lastUsedAt: null, merchantId: MERCHANT.merchantId, apiKey: 'mpk_k3x7q2ab_4m6n7p2q3r4s5t6u7v2w3x4y5z6a7b2c' };
const DELIVERY = {
  deliveryId: '8d2e4f6a-1b3c-4d5e-9f7a-0b1c2d3e4f5a',
  eventType: 'payment.confirmed',
  eventId: '1042',
  noticeId: null,
  url: 'https://weather.example/hooks/x402',
  status: 'failed',
  attempt: 8,
  responseStatus: 503,
  error: 'HTTP 503',
  nextAttemptAt: null,
  createdAt: '2026-12-01T10:15:04.600Z',
  deliveredAt: null,
};
const OPERATOR_API_OFF = 'the operator API is disabled on this facilitator (OPERATOR_TOKEN is not set)';

/** The errors of every operator route besides its own. */
const OPERATOR_ERRORS = {
  '401': { $ref: '#/components/responses/OperatorUnauthorized' },
  '429': { $ref: '#/components/responses/OperatorRateLimited' },
  '500': { $ref: '#/components/responses/InternalError' },
};

/** A 400 with one example: the parameter or field this route refuses. */
function invalid(summary: string, detail: string, instance: string, invalidParam: { name: string; reason: string }) {
  return problemResponse(
    '`validation_failed`: a body field, query parameter or path parameter is missing, has the wrong type or format, or is unknown; `invalidParams` names each one (a nested field by its path, e.g. `receivingAddresses.0.address`; an unknown one with reason `unknown field`).',
    { examples: { invalid: { summary, value: problemBody('validation_failed', detail, instance, { invalidParams: [invalidParam] }) } } },
  );
}

/** A 404 with two examples: what this route did not find, and the answer of every /admin route while the operator API is off. */
function notFound(detail: string, instance: string) {
  return problemResponse(
    '`not_found`: no such merchant (or key, or delivery, of this merchant); also every /admin route when the operator API is off (OPERATOR_TOKEN not set).',
    {
      examples: {
        noMerchant: { summary: 'No such merchant', value: problemBody('not_found', detail, instance) },
        disabled: { summary: 'The operator API is off', value: problemBody('not_found', OPERATOR_API_OFF, instance) },
      },
    },
  );
}

/** The errors of the later routes, which have no examples. */
const OPERATOR_PROBLEMS = {
  '400': problemResponse(
    '`validation_failed`: a body field or path parameter is missing, has the wrong type or format, or is unknown; `invalidParams` names each one.',
  ),
  ...OPERATOR_ERRORS,
  '404': problemResponse(
    '`not_found`: no such merchant (or receiving address of it); also every /admin route when the operator API is off (OPERATOR_TOKEN not set).',
  ),
};

/** What the OpenAPI document says about AdminMerchantsController's routes (see @ApiDoc). */
export const ADMIN_MERCHANTS_DOCS = {
  create: {
    operationId: 'adminCreateMerchant',
    summary: 'Create a merchant with its first API key (operator)',
    description:
      'What `node scripts/merchants.mjs create` does, over HTTP: the merchant, its receiving addresses and its first API key, all or nothing. The answer is the only time the API key and the webhook signing secret are shown. A webhook URL is checked as `PUT /merchants/me/webhook` checks it (`webhook_destination_not_allowed` for a private destination unless WEBHOOK_ALLOW_PRIVATE).',
    security: OPERATOR,
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/CreateMerchantDto' },
          example: {
            name: 'Weather API',
            webhookUrl: 'https://weather.example/hooks/x402',
            receivingAddresses: [{ network: 'eip155:84532', address: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2' }],
          },
        },
      },
    },
    responses: {
      '201': jsonResponse(
        'Created.',
        { $ref: '#/components/schemas/AdminCreatedMerchant' },
        {
          headers: NO_STORE_HEADERS,
          example: {
            merchant: { ...MERCHANT, apiKeys: [{ ...API_KEY, lastUsedAt: null }] },
            apiKey: NEW_API_KEY,
            webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1nW7GyKY0dU=',
          },
        },
      ),
      '400': problemResponse(
        "`validation_failed`: a field is missing, invalid or unknown; `invalidParams` names each one, nested ones by path. `webhook_destination_not_allowed`: the webhook URL's host may not receive webhooks.",
        {
          examples: {
            unknownField: {
              summary: 'An unknown field',
              value: problemBody('validation_failed', 'invalid field(s): discount', '/admin/merchants', {
                invalidParams: [{ name: 'discount', reason: 'unknown field' }],
              }),
            },
            nested: {
              summary: 'A bad receiving address',
              value: problemBody('validation_failed', 'invalid field(s): name, receivingAddresses.0.address', '/admin/merchants', {
                invalidParams: [
                  { name: 'name', reason: 'must be a string of 1 to 200 characters' },
                  { name: 'receivingAddresses.0.address', reason: 'must be a 0x-prefixed 20-byte hex address' },
                ],
              }),
            },
            private: {
              summary: 'A loopback webhook URL',
              value: problemBody(
                'webhook_destination_not_allowed',
                '127.0.0.1 is a loopback address; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)',
                '/admin/merchants',
                {
                  invalidParams: [
                    {
                      name: 'webhookUrl',
                      reason: '127.0.0.1 is a loopback address; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)',
                    },
                  ],
                },
              ),
            },
          },
        },
      ),
      ...OPERATOR_ERRORS,
      '404': notFound(OPERATOR_API_OFF, '/admin/merchants'),
    },
  },
  list: {
    operationId: 'adminListMerchants',
    summary: 'Every merchant, in pages (operator)',
    description: 'Merchants in creation order, with their receiving addresses and API keys (never a key or the webhook secret).',
    security: OPERATOR,
    parameters: [
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 }, description: 'Items per page.' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: 200 }, description: 'The `nextCursor` of the previous page.' },
    ],
    responses: {
      '200': jsonResponse(
        'A page of merchants.',
        { $ref: '#/components/schemas/AdminMerchantList' },
        { headers: NO_STORE_HEADERS, example: { data: [MERCHANT], nextCursor: null } },
      ),
      '400': invalid('Invalid limit', 'invalid query parameter(s): limit', '/admin/merchants?limit=500', {
        name: 'limit',
        reason: 'must be an integer from 1 to 100',
      }),
      ...OPERATOR_ERRORS,
      '404': notFound(OPERATOR_API_OFF, '/admin/merchants'),
    },
  },
  get: {
    operationId: 'adminGetMerchant',
    summary: 'One merchant (operator)',
    description: 'The merchant with its receiving addresses and API keys.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    responses: {
      '200': jsonResponse('The merchant.', { $ref: '#/components/schemas/AdminMerchant' }, { headers: NO_STORE_HEADERS, example: MERCHANT }),
      '400': invalid('Invalid merchantId', 'invalid path parameter(s): merchantId', '/admin/merchants/nope', {
        name: 'merchantId',
        reason: 'must be a merchant id (a UUID)',
      }),
      ...OPERATOR_ERRORS,
      '404': notFound('no merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90'),
    },
  },
  disable: {
    operationId: 'adminDisableMerchant',
    summary: 'Disable a merchant (operator)',
    description:
      'Its API keys are refused (401) and no webhooks are sent to it (queued ones fail), on every replica within API_KEY_CACHE_MS. Disabling again keeps the first `disabledAt`.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    responses: {
      '200': jsonResponse(
        'The merchant as it is now.',
        { $ref: '#/components/schemas/AdminMerchant' },
        { headers: NO_STORE_HEADERS, example: { ...MERCHANT, disabledAt: '2026-12-01T11:00:00.000Z' } },
      ),
      '400': invalid('Invalid merchantId', 'invalid path parameter(s): merchantId', '/admin/merchants/nope/disable', {
        name: 'merchantId',
        reason: 'must be a merchant id (a UUID)',
      }),
      ...OPERATOR_ERRORS,
      '404': notFound('no merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/disable'),
    },
  },
  enable: {
    operationId: 'adminEnableMerchant',
    summary: 'Enable a merchant (operator)',
    description: 'Its keys that are not revoked work again.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    responses: {
      '200': jsonResponse('The merchant as it is now.', { $ref: '#/components/schemas/AdminMerchant' }, { headers: NO_STORE_HEADERS, example: MERCHANT }),
      '400': invalid('Invalid merchantId', 'invalid path parameter(s): merchantId', '/admin/merchants/nope/enable', {
        name: 'merchantId',
        reason: 'must be a merchant id (a UUID)',
      }),
      ...OPERATOR_ERRORS,
      '404': notFound('no merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/enable'),
    },
  },
  createApiKey: {
    operationId: 'adminCreateApiKey',
    summary: 'Make another API key (operator)',
    description: 'A new key for the merchant (as `merchants.mjs keys create`); the answer is the only time it is shown. The body may be empty.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { type: 'object', additionalProperties: false, properties: { name: { type: 'string', minLength: 1, maxLength: 200 } } },
          example: { name: 'ci' },
        },
      },
    },
    responses: {
      '201': jsonResponse('Made.', { $ref: '#/components/schemas/AdminCreatedApiKey' }, { headers: NO_STORE_HEADERS, example: { ...NEW_API_KEY, name: 'ci' } }),
      '400': invalid('Invalid name', 'invalid field(s): name', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/api-keys', {
        name: 'name',
        reason: 'must be a string of 1 to 200 characters',
      }),
      ...OPERATOR_ERRORS,
      '404': notFound('no merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/api-keys'),
      '409': problemResponse('`merchant_disabled`: enable the merchant first.', {
        examples: {
          disabled: {
            summary: 'A disabled merchant',
            value: problemBody(
              'merchant_disabled',
              'merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90 is disabled; enable it first',
              '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/api-keys',
            ),
          },
        },
      }),
    },
  },
  revokeApiKey: {
    operationId: 'adminRevokeApiKey',
    summary: 'Revoke an API key (operator)',
    description:
      'The key is refused from now on, on every replica within API_KEY_CACHE_MS. Revoking again keeps the first `revokedAt`. A key of another merchant is 404.',
    security: OPERATOR,
    parameters: [MERCHANT_ID, uuidPathParameter('keyId', "The API key's id (`keyId`).")],
    responses: {
      '200': jsonResponse(
        'The key as it is now.',
        { $ref: '#/components/schemas/AdminApiKey' },
        { headers: NO_STORE_HEADERS, example: { ...API_KEY, revokedAt: '2026-12-01T11:00:00.000Z' } },
      ),
      '400': invalid('Invalid keyId', 'invalid path parameter(s): keyId', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/api-keys/nope/revoke', {
        name: 'keyId',
        reason: 'must be an API key id (a UUID)',
      }),
      ...OPERATOR_ERRORS,
      '404': notFound(
        'merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90 has no API key 4f1c9a7e-2b3d-4e5f-8a6b-7c8d9e0f1a2b',
        '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/api-keys/4f1c9a7e-2b3d-4e5f-8a6b-7c8d9e0f1a2b/revoke',
      ),
    },
  },
  setWebhook: {
    operationId: 'adminSetWebhook',
    summary: "Set or clear a merchant's webhook URL (operator)",
    description:
      'As the merchant\'s own `PUT /merchants/me/webhook`, with the same checks: `{ "webhookUrl": "https://…" }` sends its future webhooks there (queued ones keep their URL), `null` stops new ones.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            additionalProperties: false,
            required: ['webhookUrl'],
            properties: { webhookUrl: { type: ['string', 'null'], format: 'uri', maxLength: 2048 } },
          },
          example: { webhookUrl: 'https://weather.example/hooks/x402' },
        },
      },
    },
    responses: {
      '200': jsonResponse(
        'The webhook URL as stored.',
        {
          type: 'object',
          additionalProperties: false,
          required: ['merchantId', 'webhookUrl'],
          properties: { merchantId: { type: 'string', format: 'uuid' }, webhookUrl: { type: ['string', 'null'], format: 'uri' } },
        },
        { headers: NO_STORE_HEADERS, example: { merchantId: '0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', webhookUrl: 'https://weather.example/hooks/x402' } },
      ),
      '400': problemResponse(
        "`validation_failed`: the field is missing, not a string or null, not an http(s) URL, too long, or an unknown field was sent. `webhook_destination_not_allowed`: the URL's host may not receive webhooks.",
        {
          examples: {
            missing: {
              summary: 'No webhookUrl',
              value: problemBody('validation_failed', 'invalid field(s): webhookUrl', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook', {
                invalidParams: [{ name: 'webhookUrl', reason: 'must be an http(s) URL or null' }],
              }),
            },
            private: {
              summary: 'A metadata address',
              value: problemBody(
                'webhook_destination_not_allowed',
                '169.254.169.254 is a cloud metadata address; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)',
                '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook',
                {
                  invalidParams: [
                    {
                      name: 'webhookUrl',
                      reason:
                        '169.254.169.254 is a cloud metadata address; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)',
                    },
                  ],
                },
              ),
            },
          },
        },
      ),
      ...OPERATOR_ERRORS,
      '404': notFound('no merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook'),
    },
  },
  rotateWebhookSecret: {
    operationId: 'adminRotateWebhookSecret',
    summary: "Rotate a merchant's webhook signing secret (operator)",
    description:
      'A new `whsec_` secret replaces the old one at once: every attempt from now on, retries of queued deliveries included, is signed with the new secret only. The answer is the only time it is shown; hand it to the merchant before the next webhook.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    responses: {
      '200': jsonResponse(
        'The new secret.',
        {
          type: 'object',
          additionalProperties: false,
          required: ['merchantId', 'webhookSecret'],
          properties: { merchantId: { type: 'string', format: 'uuid' }, webhookSecret: { type: 'string', pattern: '^whsec_[A-Za-z0-9+/]{43}=$' } },
        },
        {
          headers: NO_STORE_HEADERS,
          example: { merchantId: '0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', webhookSecret: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw1nW7GyKY0dU=' },
        },
      ),
      '400': invalid('Invalid merchantId', 'invalid path parameter(s): merchantId', '/admin/merchants/nope/webhook/rotate-secret', {
        name: 'merchantId',
        reason: 'must be a merchant id (a UUID)',
      }),
      ...OPERATOR_ERRORS,
      '404': notFound('no merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook/rotate-secret'),
    },
  },
  deliveries: {
    operationId: 'adminListWebhookDeliveries',
    summary: "A merchant's webhook deliveries, in pages (operator)",
    description: 'Newest first, with where each stands (attempts, last status or error).',
    security: OPERATOR,
    parameters: [
      MERCHANT_ID,
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 50 }, description: 'Items per page.' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: 200 }, description: 'The `nextCursor` of the previous page.' },
      {
        name: 'status',
        in: 'query',
        required: false,
        schema: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
        description: 'Only deliveries in this state.',
      },
    ],
    responses: {
      '200': jsonResponse(
        'A page of deliveries.',
        { $ref: '#/components/schemas/AdminWebhookDeliveryList' },
        { headers: NO_STORE_HEADERS, example: { data: [DELIVERY], nextCursor: null } },
      ),
      '400': invalid(
        'Invalid status',
        'invalid query parameter(s): status',
        '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook-deliveries?status=lost',
        { name: 'status', reason: 'must be one of pending, delivered, failed' },
      ),
      ...OPERATOR_ERRORS,
      '404': notFound('no merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook-deliveries'),
    },
  },
  resend: {
    operationId: 'adminResendWebhookDelivery',
    summary: 'Send a delivery again (operator)',
    description:
      "A new attempt of the same delivery: the same body and `webhook-id`, signed with the merchant's current secret, to its current webhook URL, as soon as a worker takes it (within WEBHOOK_POLL_MS). Counted and logged like any attempt; if it fails, it is retried only while the delivery has attempts left (WEBHOOK_MAX_ATTEMPTS). A delivered one is sent again too: receivers deduplicate on `webhook-id`.",
    security: OPERATOR,
    parameters: [MERCHANT_ID, uuidPathParameter('deliveryId', "The delivery's id (`deliveryId`, also the `webhook-id` header it was sent with).")],
    responses: {
      '202': jsonResponse(
        'Queued for a new attempt.',
        { $ref: '#/components/schemas/AdminWebhookDelivery' },
        { headers: NO_STORE_HEADERS, example: { ...DELIVERY, status: 'pending', nextAttemptAt: '2026-12-01T11:00:00.000Z' } },
      ),
      '400': invalid(
        'Invalid deliveryId',
        'invalid path parameter(s): deliveryId',
        '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook-deliveries/nope/resend',
        { name: 'deliveryId', reason: 'must be a webhook delivery id (a UUID)' },
      ),
      ...OPERATOR_ERRORS,
      '404': notFound(
        'merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90 has no webhook delivery 8d2e4f6a-1b3c-4d5e-9f7a-0b1c2d3e4f5a',
        '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook-deliveries/8d2e4f6a-1b3c-4d5e-9f7a-0b1c2d3e4f5a/resend',
      ),
      '409': problemResponse('`webhook_not_configured`: the merchant has no webhook URL. `merchant_disabled`: no webhooks are sent to a disabled merchant.', {
        examples: {
          noUrl: {
            summary: 'No webhook URL',
            value: problemBody(
              'webhook_not_configured',
              'merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90 has no webhook URL; set one first',
              '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook-deliveries/8d2e4f6a-1b3c-4d5e-9f7a-0b1c2d3e4f5a/resend',
            ),
          },
          disabled: {
            summary: 'A disabled merchant',
            value: problemBody(
              'merchant_disabled',
              'merchant 0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90 is disabled: no webhooks are sent to it',
              '/admin/merchants/0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90/webhook-deliveries/8d2e4f6a-1b3c-4d5e-9f7a-0b1c2d3e4f5a/resend',
            ),
          },
        },
      }),
    },
  },
  update: {
    operationId: 'adminUpdateMerchant',
    summary: 'Let a merchant settle to any address, or only to its receiving addresses (operator)',
    description:
      'As `PATCH /merchants/me` does for the merchant itself (`node scripts/merchants.mjs allow-any-pay-to`). The answer is the merchant as `GET /admin/merchants/{merchantId}` shows it.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    requestBody: {
      required: true,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/UpdateMerchantSettingsDto' }, example: { allowAnyPayTo: true } } },
    },
    responses: { '200': jsonResponse('The merchant.', { $ref: '#/components/schemas/AdminMerchant' }, { headers: NO_STORE_HEADERS }), ...OPERATOR_PROBLEMS },
  },
  declareReceivingAddress: {
    operationId: 'adminDeclareReceivingAddress',
    summary: 'Declare an address a merchant is paid at (operator)',
    description:
      'As `POST /merchants/me/receiving-addresses` does for the merchant itself (`node scripts/merchants.mjs receiving-addresses add`): any case (a mixed-case address must carry a valid EIP-55 checksum), stored and compared ignoring case, at most 100 per merchant. 201 when declared now, 200 when it already was.',
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { $ref: '#/components/schemas/ReceivingAddressDto' },
          example: { network: 'eip155:84532', address: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2' },
        },
      },
    },
    responses: {
      '200': jsonResponse('Already declared.', RECEIVING_ADDRESS, { headers: NO_STORE_HEADERS }),
      '201': jsonResponse('Declared.', RECEIVING_ADDRESS, { headers: NO_STORE_HEADERS }),
      ...OPERATOR_PROBLEMS,
    },
  },
  removeReceivingAddress: {
    operationId: 'adminRemoveReceivingAddress',
    summary: 'Stop paying a merchant at an address (operator)',
    description:
      'Settlements to it are refused (`pay_to_not_allowed`) from now on, unless the merchant allows any payTo (`node scripts/merchants.mjs receiving-addresses remove`).',
    security: OPERATOR,
    parameters: [
      MERCHANT_ID,
      {
        name: 'network',
        in: 'path',
        required: true,
        schema: { type: 'string', pattern: '^eip155:[1-9][0-9]{0,19}$' },
        description: 'CAIP-2 network id, e.g. eip155:8453.',
      },
      { name: 'address', in: 'path', required: true, schema: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$' }, description: 'The address, any case.' },
    ],
    responses: { '204': { description: 'Removed.' }, ...OPERATOR_PROBLEMS },
  },
  rotateMppSecret: {
    operationId: 'adminRotateMppSecret',
    summary: "Rotate a merchant's MPP challenge secret (operator)",
    description:
      "A new HMAC secret binds the merchant's MPP challenge ids from now on; challenges issued under the previous one stay payable for an hour (the longest a challenge lives). Other replicas pick it up within API_KEY_CACHE_MS (`node scripts/merchants.mjs rotate-mpp-secret`).",
    security: OPERATOR,
    parameters: [MERCHANT_ID],
    responses: {
      '200': jsonResponse(
        'Rotated.',
        {
          type: 'object',
          additionalProperties: false,
          required: ['merchantId', 'rotatedAt'],
          properties: { merchantId: { type: 'string', format: 'uuid' }, rotatedAt: { type: 'string', format: 'date-time' } },
        },
        { headers: NO_STORE_HEADERS },
      ),
      ...OPERATOR_PROBLEMS,
    },
  },
} satisfies Record<string, OperationDoc>;
