import { HEALTH_SCHEMAS, X402_SCHEMAS, jsonResponse, problemBody, problemResponse } from '@mp/platform';

/**
 * Component schemas, responses and parameters of this service's OpenAPI document that no DTO class or zod codec
 * makes: the shapes of its answers and their shared problem responses, referenced by the @ApiDoc of its routes.
 */
export const COMPONENTS = {
  parameters: {
    A2AExtensions: {
      name: 'A2A-Extensions',
      in: 'header',
      required: false,
      description:
        "Comma-separated extension URIs the client activates. Paid skills need one of the x402 extension's: `https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2` or `https://github.com/google-a2a/a2a-x402/v0.1`. Echoed in the response header of the same name.",
      schema: { type: 'string' },
      example: 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2',
    },
    A2AExtensionsLegacy: {
      name: 'X-A2A-Extensions',
      in: 'header',
      required: false,
      description: 'The v0.3 name of `A2A-Extensions`, read on v0.3 requests only (and echoed under this name).',
      schema: { type: 'string' },
      example: 'https://github.com/google-a2a/a2a-x402/v0.1',
    },
    A2ATaskId: {
      name: 'taskId',
      in: 'path',
      required: true,
      description: "The task's id (a UUID).",
      schema: { type: 'string' },
      example: 'c6d4ddef-1619-436a-b830-52e8f97b515a',
    },
    A2AVersion: {
      name: 'A2A-Version',
      in: 'header',
      required: false,
      description: 'A2A protocol version of the request: `1.0`, or `0.3` (the default when absent). Anything else is answered -32009 (HTTP+JSON: 400).',
      schema: { type: 'string', enum: ['1.0', '0.3'] },
      example: '1.0',
    },
  },
  responses: {
    A2APayloadTooLarge: problemResponse("The body is over the A2A routers' limit (100 KB); answered by the platform's error handler.", {
      examples: { tooLarge: { summary: 'A 200 KB message', value: problemBody('payload_too_large', 'request entity too large', '/a2a/rest/message:send') } },
    }),
    A2ARestError: {
      description: 'An A2A error on HTTP+JSON 1.0 (see the error table of `POST /a2a/jsonrpc`).',
      content: {
        'application/a2a+json': {
          schema: { $ref: '#/components/schemas/A2ARestError' },
          examples: {
            taskNotFound: {
              summary: 'Unknown task',
              value: {
                error: {
                  code: 404,
                  status: 'NOT_FOUND',
                  message: 'Task not found: 8a27813e-312e-4598-9792-2776d04e72c9',
                  details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }],
                },
              },
            },
            extensionRequired: {
              summary: 'A paid skill without the x402 extension',
              value: {
                error: {
                  code: 400,
                  status: 'FAILED_PRECONDITION',
                  message:
                    'skill haiku is paid: activate the x402 extension (A2A-Extensions: https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2, or https://github.com/google-a2a/a2a-x402/v0.1)',
                  details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXTENSION_SUPPORT_REQUIRED', domain: 'a2a-protocol.org' }],
                },
              },
            },
          },
        },
      },
    },
    A2AV03RestError: jsonResponse(
      'An A2A error on the v0.3 HTTP+JSON binding: the JSON-RPC code and message, with the HTTP status of the error (404 for -32001, 400 for the others, 500 for -32603).',
      { $ref: '#/components/schemas/A2AV03RestError' },
      { example: { code: -32001, message: 'Task not found: 8a27813e-312e-4598-9792-2776d04e72c9' } },
    ),
  },
  schemas: {
    ...HEALTH_SCHEMAS,
    ...X402_SCHEMAS,
    A2AAgentCard: {
      type: 'object',
      description:
        'The A2A 1.0 agent card, built from MERCHANT_PUBLIC_URL and the skills\' prices (MERCHANT_PRICE, MERCHANT_HAIKU_PRICE, MERCHANT_NETWORK, MERCHANT_ASSET, MERCHANT_PAY_TO). A v0.3 client gets the v0.3 shape instead: `protocolVersion: "0.3"`, `url` and `preferredTransport` (JSON-RPC), `additionalInterfaces`.',
      required: ['name', 'description', 'version', 'supportedInterfaces', 'capabilities', 'skills'],
      properties: {
        name: { type: 'string' },
        description: { type: 'string' },
        version: { type: 'string' },
        supportedInterfaces: {
          type: 'array',
          description: 'JSON-RPC at `/a2a/jsonrpc` and HTTP+JSON at `/a2a/rest`, each in 1.0 and 0.3.',
          items: {
            type: 'object',
            properties: {
              url: { type: 'string', format: 'uri' },
              protocolBinding: { type: 'string', enum: ['JSONRPC', 'HTTP+JSON'] },
              protocolVersion: { type: 'string', enum: ['1.0', '0.3'] },
              tenant: { type: 'string' },
            },
          },
        },
        provider: { type: 'object' },
        capabilities: {
          type: 'object',
          properties: {
            streaming: { const: true },
            pushNotifications: { const: false },
            extendedAgentCard: { const: false },
            extensions: {
              type: 'array',
              description:
                'The x402 extension under both URIs, `required: false` (each paid skill requires it), `params: {x402Version: 2, prices: {<skill>: {scheme, network, asset, amount, payTo, settle}}}`.',
              items: {
                type: 'object',
                properties: { uri: { type: 'string' }, description: { type: 'string' }, required: { type: 'boolean' }, params: { type: 'object' } },
              },
            },
          },
        },
        defaultInputModes: { type: 'array', items: { type: 'string' } },
        defaultOutputModes: { type: 'array', items: { type: 'string' } },
        skills: {
          type: 'array',
          description: '`forecast`, `haiku` (paid) and `ping` (free).',
          items: {
            type: 'object',
            properties: {
              id: { type: 'string' },
              name: { type: 'string' },
              description: { type: 'string' },
              tags: { type: 'array', items: { type: 'string' } },
              examples: { type: 'array', items: { type: 'string' } },
            },
          },
        },
      },
    },
    A2AJsonRpcRequest: {
      type: 'object',
      description: "A JSON-RPC 2.0 request. Method names are A2A 1.0's with `A2A-Version: 1.0`, v0.3's otherwise.",
      required: ['jsonrpc', 'method'],
      properties: {
        jsonrpc: { const: '2.0' },
        id: { type: ['string', 'integer', 'null'] },
        method: {
          type: 'string',
          enum: [
            'SendMessage',
            'SendStreamingMessage',
            'GetTask',
            'ListTasks',
            'CancelTask',
            'SubscribeToTask',
            'message/send',
            'message/stream',
            'tasks/get',
            'tasks/cancel',
            'tasks/resubscribe',
          ],
          description:
            '1.0: `SendMessage`, `SendStreamingMessage` (SSE), `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask` (SSE). v0.3: `message/send`, `message/stream` (SSE), `tasks/get`, `tasks/cancel`, `tasks/resubscribe` (SSE). The push-notification config methods and `GetExtendedAgentCard` (v0.3 `agent/getAuthenticatedExtendedCard`) exist but only answer -32003 / -32004.',
        },
        params: {
          type: 'object',
          description:
            'For SendMessage / SendStreamingMessage an `A2ASendMessageRequest`; for GetTask `{id, historyLength?}`; CancelTask and SubscribeToTask `{id}`; ListTasks `{contextId?, status?, pageSize? (1–100, default 50), pageToken?, historyLength?, includeArtifacts?}`.',
        },
      },
    },
    A2AJsonRpcResponse: {
      type: 'object',
      description:
        'A JSON-RPC 2.0 response: `result` (for SendMessage an `A2ASendMessageResponse`, for GetTask / CancelTask an `A2ATask`, for ListTasks `{tasks, nextPageToken, pageSize, totalSize}`) or `error`.',
      required: ['jsonrpc', 'id'],
      properties: {
        jsonrpc: { const: '2.0' },
        id: { type: ['string', 'integer', 'null'] },
        result: {},
        error: {
          type: 'object',
          required: ['code', 'message'],
          properties: {
            code: { type: 'integer', enum: [-32700, -32600, -32601, -32602, -32603, -32001, -32002, -32003, -32004, -32005, -32008, -32009] },
            message: { type: 'string' },
            data: {
              description: 'A2A 1.0: `[{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "TASK_NOT_FOUND", "domain": "a2a-protocol.org"}]`.',
            },
          },
        },
      },
    },
    A2AMessage: {
      type: 'object',
      description:
        'An A2A 1.0 message (ProtoJSON). The v0.3 bindings use v0.3 shapes instead (`kind`, role `user`/`agent`; on v0.3 HTTP+JSON the parts are in `content`).',
      required: ['messageId', 'role', 'parts'],
      properties: {
        messageId: { type: 'string' },
        contextId: { type: 'string' },
        taskId: { type: 'string', description: 'Set to answer on an existing task (the payment).' },
        role: { type: 'string', enum: ['ROLE_USER', 'ROLE_AGENT'] },
        parts: {
          type: 'array',
          items: {
            type: 'object',
            description: 'One part: `text` (with `mediaType`), or `data` (a JSON value, e.g. the forecast artifact).',
            properties: { text: { type: 'string' }, data: {}, mediaType: { type: 'string' }, metadata: { type: 'object' } },
          },
        },
        metadata: { type: 'object', description: 'The a2a-x402 keys travel here (see `A2AX402Metadata`).' },
        extensions: { type: 'array', items: { type: 'string' }, description: 'On agent messages: the x402 extension URI the caller activated.' },
      },
    },
    A2ARestError: {
      type: 'object',
      description: 'The error body of A2A 1.0 HTTP+JSON (google.rpc.Status style).',
      required: ['error'],
      properties: {
        error: {
          type: 'object',
          properties: {
            code: { type: 'integer', description: 'The HTTP status.' },
            status: { type: 'string', enum: ['INVALID_ARGUMENT', 'NOT_FOUND', 'FAILED_PRECONDITION', 'INTERNAL', 'UNKNOWN'] },
            message: { type: 'string' },
            details: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  '@type': { const: 'type.googleapis.com/google.rpc.ErrorInfo' },
                  reason: { type: 'string', description: 'e.g. TASK_NOT_FOUND, EXTENSION_SUPPORT_REQUIRED, INVALID_PARAMS' },
                  domain: { const: 'a2a-protocol.org' },
                },
              },
            },
          },
        },
      },
    },
    A2ASendMessageRequest: {
      type: 'object',
      description:
        'SendMessageRequest (A2A 1.0): the `params` of JSON-RPC SendMessage / SendStreamingMessage, and the body of `message:send` / `message:stream`.',
      required: ['message'],
      properties: {
        message: { $ref: '#/components/schemas/A2AMessage' },
        configuration: {
          type: 'object',
          properties: {
            returnImmediately: { type: 'boolean', description: 'Return the task without waiting for it to finish or need input.' },
            historyLength: { type: 'integer', minimum: 0 },
            acceptedOutputModes: { type: 'array', items: { type: 'string' } },
          },
        },
        metadata: { type: 'object' },
      },
    },
    A2ASendMessageResponse: {
      type: 'object',
      description: 'Exactly one of `task` (a paid skill) or `message` (a free skill, or a reply that changed nothing).',
      properties: { task: { $ref: '#/components/schemas/A2ATask' }, message: { $ref: '#/components/schemas/A2AMessage' } },
    },
    A2ATask: {
      type: 'object',
      description: "An A2A 1.0 task: the paid skills' unit of work. `metadata.skill` names the skill.",
      required: ['id', 'contextId', 'status'],
      properties: {
        id: { type: 'string' },
        contextId: { type: 'string' },
        status: {
          type: 'object',
          properties: {
            state: {
              type: 'string',
              enum: [
                'TASK_STATE_SUBMITTED',
                'TASK_STATE_WORKING',
                'TASK_STATE_INPUT_REQUIRED',
                'TASK_STATE_COMPLETED',
                'TASK_STATE_FAILED',
                'TASK_STATE_CANCELED',
              ],
              description:
                "This agent's tasks wait in INPUT_REQUIRED for their payment, work while it is verified and settled, and end COMPLETED, FAILED or CANCELED.",
            },
            message: { $ref: '#/components/schemas/A2AMessage' },
            timestamp: { type: 'string', format: 'date-time' },
          },
        },
        history: { type: 'array', items: { $ref: '#/components/schemas/A2AMessage' } },
        artifacts: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              artifactId: { type: 'string' },
              name: { type: 'string', description: '`forecast` or `haiku`' },
              parts: {
                type: 'array',
                items: {
                  type: 'object',
                  description: 'One part: `text` (with `mediaType`), or `data` (a JSON value, e.g. the forecast artifact).',
                  properties: { text: { type: 'string' }, data: {}, mediaType: { type: 'string' }, metadata: { type: 'object' } },
                },
              },
            },
          },
        },
        metadata: { type: 'object' },
      },
    },
    A2AV03RestError: {
      type: 'object',
      description: 'The error body of the v0.3 HTTP+JSON binding.',
      required: ['code', 'message'],
      properties: { code: { type: 'integer', description: 'The A2A JSON-RPC error code.' }, message: { type: 'string' } },
    },
    Forecast: {
      type: 'object',
      required: ['location', 'issuedAt', 'hours'],
      properties: {
        location: { type: 'string' },
        issuedAt: { type: 'string', format: 'date-time' },
        hours: {
          type: 'array',
          items: {
            type: 'object',
            required: ['in', 'tempC', 'sky'],
            properties: { in: { type: 'integer' }, tempC: { type: 'number' }, sky: { type: 'string' } },
          },
        },
      },
    },
    PaymentRequired: {
      type: 'object',
      description: 'Content of the PAYMENT-REQUIRED header (x402 v2), written by @x402/express.',
      required: ['x402Version', 'accepts'],
      properties: {
        x402Version: { const: 2 },
        error: {
          type: 'string',
          description: "e.g. `Payment required`, `No matching payment requirements`, or the facilitator's reason after a failed verification.",
        },
        resource: { $ref: '#/components/schemas/ResourceInfo' },
        accepts: { type: 'array', items: { $ref: '#/components/schemas/PaymentRequirementsV2' } },
        extensions: { type: 'object', additionalProperties: true },
      },
    },
    PaywallError: {
      type: 'object',
      description: "Body of the @x402/express middleware's own errors (not problem+json).",
      properties: { error: { type: 'string' } },
    },
  },
  securitySchemes: {},
};

// what the A2A HTTP+JSON routes of each binding share
const REST_BINDING =
  'A2A 1.0 HTTP+JSON (@a2a-js/sdk `restHandler`): answers in 1.0 ProtoJSON shapes as `application/a2a+json`; errors are `A2ARestError` bodies with an HTTP status (see the error table of `POST /a2a/jsonrpc`). `A2A-Version` may be 1.0 or 0.3 (absent reads as 0.3); anything else is 400. Extensions in `A2A-Extensions`.';
const V03_BINDING =
  "v0.3 compatibility route (the SDK's legacy HTTP+JSON router): served when `A2A-Version` is absent or 0.3; a 1.0 client uses the route without `/v1`. Bodies and answers in v0.3 gRPC-JSON shapes (parts in `content`), errors as `{code, message}`; extensions in `X-A2A-Extensions` (or `A2A-Extensions`).";
const TASK_PARAMETERS = [{ $ref: '#/components/parameters/A2ATaskId' }, { $ref: '#/components/parameters/A2AVersion' }];
const SEND_MESSAGE_BODY = {
  required: true,
  content: {
    'application/json': { schema: { $ref: '#/components/schemas/A2ASendMessageRequest' } },
    'application/a2a+json': { schema: { $ref: '#/components/schemas/A2ASendMessageRequest' } },
  },
};
const V03_SEND_MESSAGE_BODY = {
  required: true,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        description:
          'A v0.3 SendMessageRequest (gRPC-JSON): `{message: {messageId, role: "ROLE_USER", content: [{text}], taskId?, contextId?, metadata?}, configuration?}`.',
        properties: { message: { type: 'object' }, configuration: { type: 'object' }, metadata: { type: 'object' } },
        required: ['message'],
      },
    },
  },
};
const EVENT_STREAM = {
  description: 'The event stream.',
  content: { 'text/event-stream': { schema: { type: 'string', description: '`data: <A2AStreamResponse JSON>` frames, one per event.' } } },
};
const V03_EVENT_STREAM = { description: 'The event stream.', content: { 'text/event-stream': { schema: { type: 'string' } } } };
const REST_ERRORS = {
  '400': { $ref: '#/components/responses/A2ARestError' },
  '404': { $ref: '#/components/responses/A2ARestError' },
  '500': { $ref: '#/components/responses/A2ARestError' },
};
const V03_REST_ERRORS = {
  '400': { $ref: '#/components/responses/A2AV03RestError' },
  '404': { $ref: '#/components/responses/A2AV03RestError' },
  '500': { $ref: '#/components/responses/A2AV03RestError' },
};

/** The A2A routes the SDK's Express routers serve (mountA2a), outside Nest. */
export const A2A_PATHS = {
  '/.well-known/agent-card.json': {
    get: {
      operationId: 'getA2aAgentCard',
      summary: 'A2A agent card',
      description:
        'The merchant agent\'s A2A card (@a2a-js/sdk `agentCardHandler` with the v0.3 compat layer, mounted outside Nest by mount-a2a.ts): its bindings, streaming, the x402 extension (both URIs) with each paid skill\'s price, and the skills. Without `A2A-Version`, or with one from 0.3 up to (not including) 1.0, the v0.3 card (`protocolVersion: "0.3"`, `url`, `preferredTransport: "JSONRPC"`, `additionalInterfaces`); with any other (`1.0`) the 1.0 card. `Vary: A2A-Version`, `Cache-Control: public, max-age=3600`, and a weak `ETag` (a matching `If-None-Match` is 304).\n\n**Extensions.** The x402 extension is activated by naming one of its URIs in `A2A-Extensions` (comma-separated): `https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2` (a2a-x402 spec v0.2) or `https://github.com/google-a2a/a2a-x402/v0.1` (spec v0.1, the Python x402_a2a library); the card declares both, `required: false`. A v0.3 request (JSON-RPC without `A2A-Version: 1.0`, or the `/a2a/rest/v1/…` routes) may send `X-A2A-Extensions` instead. The activated URIs are echoed in the response\'s `A2A-Extensions` (`X-A2A-Extensions` for v0.3) and in the agent messages\' `extensions`.\n\nNot documented as operations because they only answer errors: the push-notification config routes (`/tasks/{taskId}/pushNotificationConfigs…`; the card says `pushNotifications: false`, so they answer -32003 / 400 `PUSH_NOTIFICATION_NOT_SUPPORTED`) and the extended agent card (`GET /a2a/rest/extendedAgentCard`, v0.3 `GET /a2a/rest/v1/card`; `extendedAgentCard: false`, so -32004 / 400). The SDK also serves each 1.0 route under a `/{tenant}` prefix; the card declares no tenant.',
      parameters: [
        {
          name: 'A2A-Version',
          in: 'header',
          required: false,
          description: 'Absent, or from 0.3 up to (not including) 1.0: the v0.3 card; any other value: the 1.0 card.',
          schema: { type: 'string' },
          example: '1.0',
        },
      ],
      responses: {
        '200': jsonResponse(
          'The card.',
          { $ref: '#/components/schemas/A2AAgentCard' },
          {
            headers: {
              ETag: { schema: { type: 'string' } },
              'Cache-Control': { schema: { type: 'string', const: 'public, max-age=3600' } },
              Vary: { schema: { type: 'string' }, description: 'Includes `A2A-Version`.' },
            },
            example: {
              name: 'machine-payments merchant agent',
              description:
                "Sells small machine services to other agents, paid on chain with x402 through A2A tasks (a2a-x402): a paid skill waits in input-required for a signed payment, then settles it through the merchant's facilitator.",
              supportedInterfaces: [
                { url: 'http://127.0.0.1:4040/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' },
                { url: 'http://127.0.0.1:4040/a2a/rest', protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '1.0' },
                { url: 'http://127.0.0.1:4040/a2a/jsonrpc', protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '0.3' },
                { url: 'http://127.0.0.1:4040/a2a/rest', protocolBinding: 'HTTP+JSON', tenant: '', protocolVersion: '0.3' },
              ],
              provider: { url: 'http://127.0.0.1:4040', organization: 'machine-payments' },
              version: '0.1.0',
              capabilities: {
                streaming: true,
                pushNotifications: false,
                extensions: [
                  {
                    uri: 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2',
                    description: 'x402 payments (a2a-x402 v0.2): paid skills answer with an input-required task carrying x402.payment.required.',
                    required: false,
                    params: {
                      x402Version: 2,
                      prices: {
                        forecast: {
                          scheme: 'exact',
                          network: 'eip155:84532',
                          asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                          amount: '10000',
                          payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                          settle: 'before-work',
                        },
                        haiku: {
                          scheme: 'exact',
                          network: 'eip155:84532',
                          asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                          amount: '5000',
                          payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                          settle: 'after-work',
                        },
                      },
                    },
                  },
                  {
                    uri: 'https://github.com/google-a2a/a2a-x402/v0.1',
                    description: 'x402 payments (a2a-x402 v0.1): paid skills answer with an input-required task carrying x402.payment.required.',
                    required: false,
                    params: {
                      x402Version: 2,
                      prices: {
                        forecast: {
                          scheme: 'exact',
                          network: 'eip155:84532',
                          asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                          amount: '10000',
                          payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                          settle: 'before-work',
                        },
                        haiku: {
                          scheme: 'exact',
                          network: 'eip155:84532',
                          asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                          amount: '5000',
                          payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                          settle: 'after-work',
                        },
                      },
                    },
                  },
                ],
                extendedAgentCard: false,
              },
              securitySchemes: {},
              securityRequirements: [],
              defaultInputModes: ['text/plain'],
              defaultOutputModes: ['application/json', 'text/plain'],
              skills: [
                {
                  id: 'forecast',
                  name: 'Weather forecast',
                  description:
                    'A machine-readable forecast for the next three hours of a city (default Lisbon). Paid with x402 (a2a-x402 extension): 10000 atomic units of 0x036CbD53842c5426634e7929541eC2318f3dCF7e on eip155:84532, settled before the work.',
                  tags: ['weather', 'forecast', 'x402'],
                  examples: ['forecast Lisbon'],
                  inputModes: ['text/plain'],
                  outputModes: ['application/json'],
                  securityRequirements: [],
                },
                {
                  id: 'haiku',
                  name: 'Haiku',
                  description:
                    'A haiku on a topic of your choice. Paid with x402 (a2a-x402 extension): 5000 atomic units of 0x036CbD53842c5426634e7929541eC2318f3dCF7e on eip155:84532, settled after the work.',
                  tags: ['poetry', 'haiku', 'x402'],
                  examples: ['haiku autumn rain'],
                  inputModes: ['text/plain'],
                  outputModes: ['text/plain'],
                  securityRequirements: [],
                },
                {
                  id: 'ping',
                  name: 'Ping',
                  description: 'Answers pong. Free: for checking the connection.',
                  tags: ['health'],
                  examples: ['ping'],
                  inputModes: ['text/plain'],
                  outputModes: ['text/plain'],
                  securityRequirements: [],
                },
              ],
              signatures: [],
            },
          },
        ),
        '304': { description: 'Not modified (`If-None-Match` matched the ETag).' },
        '500': jsonResponse('The card could not be built: `{"error": "Failed to retrieve agent card"}`.', {
          type: 'object',
          properties: { error: { type: 'string' } },
        }),
      },
    },
  },
  '/a2a/jsonrpc': {
    post: {
      operationId: 'postA2aJsonRpc',
      summary: 'A2A over JSON-RPC 2.0 (1.0 and v0.3)',
      description:
        "The JSON-RPC binding of the merchant agent's A2A server (@a2a-js/sdk `jsonRpcHandler`, v0.3 compat on). Answers are HTTP 200 with a JSON-RPC response, errors included (but -32603 is HTTP 500); `SendStreamingMessage` and `SubscribeToTask` (v0.3 `message/stream`, `tasks/resubscribe`) answer `text/event-stream`, each event a JSON-RPC response whose `result` is an `A2AStreamResponse` — unless they fail before the first event, which is a plain JSON-RPC error (v0.3 `tasks/resubscribe` streams even that, as an `event: error` frame).\n\n**Versions.** `A2A-Version: 1.0` speaks A2A 1.0 (ProtoJSON: `ROLE_USER`, `TASK_STATE_INPUT_REQUIRED`, parts `{\"text\": …}`). A missing `A2A-Version` is read as 0.3, served by the SDK's v0.3 compatibility layer. A version the card does not list (1.0 and 0.3 per binding) is -32009 (HTTP+JSON: 400 `FAILED_PRECONDITION`). On this binding v0.3 means v0.3 method names (`message/send`, `tasks/get`, …) and shapes (`kind: \"task\"`, `state: \"input-required\"`, role `user`); with `A2A-Version: 1.0` the 1.0 names (`SendMessage`, `GetTask`, …).\n\n**Payment flow (a2a-x402).** A message names its skill by `metadata.skillId` (of the message, or of a data part), by a data part `{\"skillId\": …}` or `{\"skill\": …}` (with an optional `input`), or in its text: a text starting with a skill id (`<skill> [input]`: `forecast Porto`, `haiku autumn rain`, `ping`), else a skill id, name or example anywhere before an `on:` (whole words, any case; `Please run skill forecast (Weather forecast) on: Porto`). The input is the data part's `input`, else the text after `on:`, else the text without the skill's id and name (at most 100 characters, else -32602). A message that names no skill, an unknown one, or two at the same rank opens a task in `TASK_STATE_INPUT_REQUIRED` whose status message lists the skills with their prices (`metadata.skills`: `[{id, name, price: {amount, asset, network} | null, examples}]`); a follow-up on that task may name one. `ping` is free and answers with a Message (`pong`). `forecast` (MERCHANT_PRICE, settled before the work) and `haiku` (MERCHANT_HAIKU_PRICE, settled after it) are paid and need the x402 extension activated (otherwise -32008, and no task is opened):\n\n1. The answer is a Task in `TASK_STATE_INPUT_REQUIRED` whose `status.message.metadata` has `x402.payment.status: payment-required` and `x402.payment.required`, an x402 v2 PaymentRequired with one `exact` requirement (`maxTimeoutSeconds` 300; `resource.url` is `<MERCHANT_PUBLIC_URL>/a2a/rest/tasks/<taskId>`).\n2. The client signs it and answers on the same task (`message.taskId`, and its `contextId`) with metadata `x402.payment.status: payment-submitted` and `x402.payment.payload`, an x402 v2 PaymentPayload. (`payment-rejected` declines: the task fails with `payment-rejected`, nothing charged. A message with neither gets the offer again.)\n3. The agent answers `payment-submitted` (working), has the facilitator verify it (`payment-verified`), settles it, adds the skill's artifact and completes the task (`TASK_STATE_COMPLETED`) with `x402.payment.status: payment-completed` and `x402.payment.receipts` (the facilitator's SettleResponses). A blocking send returns the completed task; `configuration.returnImmediately: true` returns it while it is still working.\n\nA payload that is malformed, is not for this offer or does not verify is answered `payment-failed` with `x402.payment.error` and a failed receipt, and the task goes back to `TASK_STATE_INPUT_REQUIRED` (`payment-required` again) for another signature, at most 3 attempts, then `TASK_STATE_FAILED`. A settlement that fails fails the task (`payment-failed`, `SETTLEMENT_FAILED` or the matching code). A settlement whose outcome the facilitator cannot tell yet (`settlement_pending`, or the facilitator unreachable, after 4 tries) leaves the task `TASK_STATE_WORKING` with `payment-verified`; the agent asks again every MERCHANT_A2A_SETTLE_RETRY_MS and then completes or fails it: follow it with GetTask or SubscribeToTask. A payment an agent stopped in the middle of (left submitted or verified for MERCHANT_A2A_RECOVER_AFTER_MS) is settled with the same authorization by the next agent to sweep, at boot included, and its task completed or failed the same way. A task takes one payment: a later message to a completed, failed or canceled task is -32004; to one whose payment is under way, a reply that changes nothing. See `A2AX402Metadata`.\n\n**Extensions.** The x402 extension is activated by naming one of its URIs in `A2A-Extensions` (comma-separated): `https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2` (a2a-x402 spec v0.2) or `https://github.com/google-a2a/a2a-x402/v0.1` (spec v0.1, the Python x402_a2a library); the card declares both, `required: false`. A v0.3 request (JSON-RPC without `A2A-Version: 1.0`, or the `/a2a/rest/v1/…` routes) may send `X-A2A-Extensions` instead. The activated URIs are echoed in the response's `A2A-Extensions` (`X-A2A-Extensions` for v0.3) and in the agent messages' `extensions`.\n\n**Errors** (JSON-RPC `error.code`; on HTTP+JSON 1.0 the HTTP status and `error.status`, with the same reason in `error.details[0].reason`):\n\n| code | when, on this agent | HTTP+JSON |\n|---|---|---|\n| -32700 | the body is not JSON | 400 `INVALID_ARGUMENT` |\n| -32600 | (v0.3) not a JSON-RPC 2.0 request; A2A 1.0 answers that -32602 | |\n| -32601 | unknown method, e.g. a 1.0 name (`GetTask`) without `A2A-Version: 1.0` | |\n| -32602 | invalid params: a skill's input over 100 characters, no `messageId`, a `contextId` that is not the task's, a `pageToken` this agent did not issue | 400 `INVALID_ARGUMENT` |\n| -32603 | unexpected error (HTTP 500 on JSON-RPC too) | 500 `INTERNAL` |\n| -32001 | task not found | 404 `NOT_FOUND` |\n| -32002 | task not cancelable: its payment is no longer awaited (submitted, verified, settling, completed, failed or declined), or the task is finished | 400 `FAILED_PRECONDITION` |\n| -32003 | push notifications are not supported | 400 `FAILED_PRECONDITION` |\n| -32004 | unsupported operation: a message to or a subscription on a task in a terminal state; the extended agent card | 400 `FAILED_PRECONDITION` |\n| -32005 | content type not supported (JSON-RPC takes `application/json` only) | 400 `INVALID_ARGUMENT` |\n| -32008 | extension support required: a paid skill, or a message to a paid task, without the x402 extension activated | 400 `FAILED_PRECONDITION` |\n| -32009 | `A2A-Version` not supported | 400 `FAILED_PRECONDITION` |\n\nPayment problems are not A2A errors: they are task states with `x402.payment.error` (see `A2AX402Metadata`).\n\nThe SDK's routers read their own bodies (express.json, at most 100 KB; a larger one is the platform's 413 `payload_too_large` problem, one nested deeper than 64 levels its 400 `json_too_deep` problem) and answer errors in A2A's shapes, not as problem+json. A path under `/a2a/jsonrpc` or `/a2a/rest` that they do not serve is a 404 `not_found` problem (`<METHOD> <path> is not an A2A endpoint of this agent`).",
      parameters: [
        { $ref: '#/components/parameters/A2AVersion' },
        { $ref: '#/components/parameters/A2AExtensions' },
        { $ref: '#/components/parameters/A2AExtensionsLegacy' },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/A2AJsonRpcRequest' },
            examples: {
              sendMessage: {
                summary: 'Ask for a forecast (A2A-Version: 1.0, A2A-Extensions: the x402 v0.2 URI)',
                value: {
                  jsonrpc: '2.0',
                  id: 1,
                  method: 'SendMessage',
                  params: { message: { messageId: 'a788b5f8-7b52-4837-9558-da87d2076643', role: 'ROLE_USER', parts: [{ text: 'forecast Porto' }] } },
                },
              },
              pay: {
                summary: 'Pay on the same task: payment-submitted with the signed payload (abridged)',
                value: {
                  jsonrpc: '2.0',
                  id: 2,
                  method: 'SendMessage',
                  params: {
                    message: {
                      messageId: '0d3c8f7e-5b1a-4c2e-9f60-2a7b9e4d1c55',
                      role: 'ROLE_USER',
                      taskId: 'c6d4ddef-1619-436a-b830-52e8f97b515a',
                      contextId: 'e383c9c4-8a61-4f91-b150-cb353c66fd01',
                      parts: [{ text: 'paying' }],
                      metadata: {
                        'x402.payment.status': 'payment-submitted',
                        'x402.payment.payload': {
                          x402Version: 2,
                          resource: {
                            url: 'http://127.0.0.1:4040/a2a/rest/tasks/c6d4ddef-1619-436a-b830-52e8f97b515a',
                            description: 'Weather forecast: Porto',
                            mimeType: 'application/json',
                          },
                          accepted: {
                            scheme: 'exact',
                            network: 'eip155:84532',
                            amount: '10000',
                            asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                            payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                            maxTimeoutSeconds: 300,
                            extra: { name: 'USDC', version: '2' },
                          },
                          payload: {
                            signature: '0x…',
                            authorization: {
                              from: '0x…',
                              to: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                              value: '10000',
                              validAfter: '…',
                              validBefore: '…',
                              nonce: '0x…',
                            },
                          },
                        },
                      },
                    },
                  },
                },
              },
              v03: {
                summary: 'The same ask from a v0.3 client (no A2A-Version; X-A2A-Extensions)',
                value: {
                  jsonrpc: '2.0',
                  id: 'req-001',
                  method: 'message/send',
                  params: {
                    message: {
                      kind: 'message',
                      messageId: '4351a71d-60b0-4970-8c4d-8b31f9cbb77e',
                      role: 'user',
                      parts: [{ kind: 'text', text: 'forecast Evora' }],
                    },
                  },
                },
              },
            },
          },
        },
      },
      responses: {
        '200': {
          description: 'A JSON-RPC response (result or error); for the streaming methods, an SSE stream.',
          headers: {
            'A2A-Extensions': { description: 'The x402 extension URI the request activated (`X-A2A-Extensions` on v0.3).', schema: { type: 'string' } },
          },
          content: {
            'application/json': {
              schema: { $ref: '#/components/schemas/A2AJsonRpcResponse' },
              examples: {
                paymentRequired: {
                  summary: 'SendMessage `forecast Porto`: the task waits for its payment',
                  value: {
                    jsonrpc: '2.0',
                    id: 1,
                    result: {
                      task: {
                        id: 'c6d4ddef-1619-436a-b830-52e8f97b515a',
                        contextId: 'e383c9c4-8a61-4f91-b150-cb353c66fd01',
                        status: {
                          state: 'TASK_STATE_INPUT_REQUIRED',
                          message: {
                            messageId: 'f2cd27d9-80f3-4697-ab95-dba92fcf528c',
                            contextId: 'e383c9c4-8a61-4f91-b150-cb353c66fd01',
                            taskId: 'c6d4ddef-1619-436a-b830-52e8f97b515a',
                            role: 'ROLE_AGENT',
                            parts: [
                              {
                                text: 'Payment required for forecast: 10000 atomic units of 0x036CbD53842c5426634e7929541eC2318f3dCF7e on eip155:84532. Sign x402.payment.required and send it as x402.payment.payload with x402.payment.status payment-submitted.',
                                mediaType: 'text/plain',
                              },
                            ],
                            metadata: {
                              'x402.payment.status': 'payment-required',
                              'x402.payment.required': {
                                x402Version: 2,
                                error: 'Payment required',
                                resource: {
                                  url: 'http://127.0.0.1:4040/a2a/rest/tasks/c6d4ddef-1619-436a-b830-52e8f97b515a',
                                  description: 'Weather forecast: Porto',
                                  mimeType: 'application/json',
                                },
                                accepts: [
                                  {
                                    scheme: 'exact',
                                    network: 'eip155:84532',
                                    amount: '10000',
                                    asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                                    payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                                    maxTimeoutSeconds: 300,
                                    extra: { name: 'USDC', version: '2' },
                                  },
                                ],
                              },
                            },
                            extensions: ['https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2'],
                          },
                          timestamp: '2026-12-01T10:56:02.702Z',
                        },
                        metadata: { skill: 'forecast' },
                      },
                    },
                  },
                },
                taskNotFound: {
                  summary: 'GetTask of an unknown task (A2A 1.0)',
                  value: {
                    jsonrpc: '2.0',
                    id: 1,
                    error: {
                      code: -32001,
                      message: 'Task not found: 8a27813e-312e-4598-9792-2776d04e72c9',
                      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'TASK_NOT_FOUND', domain: 'a2a-protocol.org' }],
                    },
                  },
                },
                extensionRequired: {
                  summary: 'A paid skill without the x402 extension',
                  value: {
                    jsonrpc: '2.0',
                    id: 1,
                    error: {
                      code: -32008,
                      message:
                        'skill forecast is paid: activate the x402 extension (A2A-Extensions: https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2, or https://github.com/google-a2a/a2a-x402/v0.1)',
                      data: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'EXTENSION_SUPPORT_REQUIRED', domain: 'a2a-protocol.org' }],
                    },
                  },
                },
              },
            },
            'text/event-stream': { schema: { type: 'string', description: '`data: <A2AStreamResponse JSON>` frames, one per event.' } },
          },
        },
        '413': { $ref: '#/components/responses/A2APayloadTooLarge' },
        '500': jsonResponse('-32603: an unexpected error, as a JSON-RPC error.', { $ref: '#/components/schemas/A2AJsonRpcResponse' }),
      },
    },
  },
  '/a2a/rest/message:send': {
    post: {
      operationId: 'postA2aRestMessageSend',
      summary: 'A2A HTTP+JSON: send a message (SendMessage)',
      description:
        "Sends a message and waits (unless `configuration.returnImmediately`) for the task to finish or need input. A2A 1.0 HTTP+JSON (@a2a-js/sdk `restHandler`): answers in 1.0 ProtoJSON shapes as `application/a2a+json`; errors are `A2ARestError` bodies with an HTTP status (see the error table of `POST /a2a/jsonrpc`). `A2A-Version` may be 1.0 or 0.3 (absent reads as 0.3); anything else is 400. Extensions in `A2A-Extensions`.\n\n**Payment flow (a2a-x402).** A message names its skill by `metadata.skillId` (of the message, or of a data part), by a data part `{\"skillId\": …}` or `{\"skill\": …}` (with an optional `input`), or in its text: a text starting with a skill id (`<skill> [input]`: `forecast Porto`, `haiku autumn rain`, `ping`), else a skill id, name or example anywhere before an `on:` (whole words, any case; `Please run skill forecast (Weather forecast) on: Porto`). The input is the data part's `input`, else the text after `on:`, else the text without the skill's id and name (at most 100 characters, else -32602). A message that names no skill, an unknown one, or two at the same rank opens a task in `TASK_STATE_INPUT_REQUIRED` whose status message lists the skills with their prices (`metadata.skills`: `[{id, name, price: {amount, asset, network} | null, examples}]`); a follow-up on that task may name one. `ping` is free and answers with a Message (`pong`). `forecast` (MERCHANT_PRICE, settled before the work) and `haiku` (MERCHANT_HAIKU_PRICE, settled after it) are paid and need the x402 extension activated (otherwise -32008, and no task is opened):\n\n1. The answer is a Task in `TASK_STATE_INPUT_REQUIRED` whose `status.message.metadata` has `x402.payment.status: payment-required` and `x402.payment.required`, an x402 v2 PaymentRequired with one `exact` requirement (`maxTimeoutSeconds` 300; `resource.url` is `<MERCHANT_PUBLIC_URL>/a2a/rest/tasks/<taskId>`).\n2. The client signs it and answers on the same task (`message.taskId`, and its `contextId`) with metadata `x402.payment.status: payment-submitted` and `x402.payment.payload`, an x402 v2 PaymentPayload. (`payment-rejected` declines: the task fails with `payment-rejected`, nothing charged. A message with neither gets the offer again.)\n3. The agent answers `payment-submitted` (working), has the facilitator verify it (`payment-verified`), settles it, adds the skill's artifact and completes the task (`TASK_STATE_COMPLETED`) with `x402.payment.status: payment-completed` and `x402.payment.receipts` (the facilitator's SettleResponses). A blocking send returns the completed task; `configuration.returnImmediately: true` returns it while it is still working.\n\nA payload that is malformed, is not for this offer or does not verify is answered `payment-failed` with `x402.payment.error` and a failed receipt, and the task goes back to `TASK_STATE_INPUT_REQUIRED` (`payment-required` again) for another signature, at most 3 attempts, then `TASK_STATE_FAILED`. A settlement that fails fails the task (`payment-failed`, `SETTLEMENT_FAILED` or the matching code). A settlement whose outcome the facilitator cannot tell yet (`settlement_pending`, or the facilitator unreachable, after 4 tries) leaves the task `TASK_STATE_WORKING` with `payment-verified`; the agent asks again every MERCHANT_A2A_SETTLE_RETRY_MS and then completes or fails it: follow it with GetTask or SubscribeToTask. A payment an agent stopped in the middle of (left submitted or verified for MERCHANT_A2A_RECOVER_AFTER_MS) is settled with the same authorization by the next agent to sweep, at boot included, and its task completed or failed the same way. A task takes one payment: a later message to a completed, failed or canceled task is -32004; to one whose payment is under way, a reply that changes nothing. See `A2AX402Metadata`.\n\n**Extensions.** The x402 extension is activated by naming one of its URIs in `A2A-Extensions` (comma-separated): `https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2` (a2a-x402 spec v0.2) or `https://github.com/google-a2a/a2a-x402/v0.1` (spec v0.1, the Python x402_a2a library); the card declares both, `required: false`. A v0.3 request (JSON-RPC without `A2A-Version: 1.0`, or the `/a2a/rest/v1/…` routes) may send `X-A2A-Extensions` instead. The activated URIs are echoed in the response's `A2A-Extensions` (`X-A2A-Extensions` for v0.3) and in the agent messages' `extensions`.",
      parameters: [{ $ref: '#/components/parameters/A2AVersion' }, { $ref: '#/components/parameters/A2AExtensions' }],
      requestBody: SEND_MESSAGE_BODY,
      responses: {
        '200': {
          description: 'The task (paid skill) or the message (free skill).',
          headers: { 'A2A-Extensions': { schema: { type: 'string' }, description: 'The activated x402 extension URI.' } },
          content: { 'application/a2a+json': { schema: { $ref: '#/components/schemas/A2ASendMessageResponse' } } },
        },
        ...REST_ERRORS,
        '413': { $ref: '#/components/responses/A2APayloadTooLarge' },
      },
    },
  },
  '/a2a/rest/message:stream': {
    post: {
      operationId: 'postA2aRestMessageStream',
      summary: 'A2A HTTP+JSON: send a message and stream the task (SendStreamingMessage)',
      description: `${"As `message:send`, answered as server-sent events (`data: <A2AStreamResponse>`): the task, its status and artifact updates, until it finishes or needs input (a paid task's first stream ends at `payment-required`; the payment's stream runs to `payment-completed`). An error before the first event is a plain `A2ARestError` answer; after it, an `event: error` frame."} ${REST_BINDING}`,
      parameters: [{ $ref: '#/components/parameters/A2AVersion' }, { $ref: '#/components/parameters/A2AExtensions' }],
      requestBody: SEND_MESSAGE_BODY,
      responses: { '200': EVENT_STREAM, ...REST_ERRORS, '413': { $ref: '#/components/responses/A2APayloadTooLarge' } },
    },
  },
  '/a2a/rest/tasks': {
    get: {
      operationId: 'listA2aRestTasks',
      summary: 'A2A HTTP+JSON: list tasks (ListTasks)',
      description: `${'Tasks by their last status change, latest first, page by page.'} ${REST_BINDING}`,
      parameters: [
        { $ref: '#/components/parameters/A2AVersion' },
        { name: 'contextId', in: 'query', required: false, schema: { type: 'string' } },
        { name: 'status', in: 'query', required: false, description: 'A task state, e.g. `TASK_STATE_COMPLETED`.', schema: { type: 'string' } },
        { name: 'pageSize', in: 'query', required: false, description: '1 to 100; 50 when absent.', schema: { type: 'integer', minimum: 1, maximum: 100 } },
        { name: 'pageToken', in: 'query', required: false, description: 'A `nextPageToken` from this agent; any other is 400.', schema: { type: 'string' } },
        { name: 'historyLength', in: 'query', required: false, schema: { type: 'integer', minimum: 0 } },
        { name: 'includeArtifacts', in: 'query', required: false, schema: { type: 'boolean' } },
      ],
      responses: {
        '200': {
          description: 'A page of tasks; `nextPageToken` is empty on the last page.',
          content: {
            'application/a2a+json': {
              schema: {
                type: 'object',
                properties: {
                  tasks: { type: 'array', items: { $ref: '#/components/schemas/A2ATask' } },
                  nextPageToken: { type: 'string' },
                  pageSize: { type: 'integer' },
                  totalSize: { type: 'integer' },
                },
              },
              example: { tasks: [], nextPageToken: '', pageSize: 50, totalSize: 0 },
            },
          },
        },
        '400': { $ref: '#/components/responses/A2ARestError' },
        '500': { $ref: '#/components/responses/A2ARestError' },
      },
    },
  },
  '/a2a/rest/tasks/{taskId}': {
    get: {
      operationId: 'getA2aRestTask',
      summary: 'A2A HTTP+JSON: get a task (GetTask)',
      description: `${"The task, with its status (and the x402 metadata of its last status message), artifacts and history. The x402 offer's `resource.url` points here."} ${REST_BINDING}`,
      parameters: [
        { $ref: '#/components/parameters/A2ATaskId' },
        { $ref: '#/components/parameters/A2AVersion' },
        {
          name: 'historyLength',
          in: 'query',
          required: false,
          description: '0 omits the history; N keeps the last N messages.',
          schema: { type: 'integer', minimum: 0 },
        },
      ],
      responses: {
        '200': { description: 'The task.', content: { 'application/a2a+json': { schema: { $ref: '#/components/schemas/A2ATask' } } } },
        ...REST_ERRORS,
      },
    },
  },
  '/a2a/rest/tasks/{taskId}:cancel': {
    post: {
      operationId: 'cancelA2aRestTask',
      summary: 'A2A HTTP+JSON: cancel a task (CancelTask)',
      description: `${'Cancels a task still waiting for its payment (`TASK_STATE_CANCELED`, nothing charged). A task whose payment is no longer awaited (submitted, verified, completed, failed or declined) is 400 `FAILED_PRECONDITION` (-32002, not cancelable); an unknown task 404. No body is needed.'} ${REST_BINDING}`,
      parameters: TASK_PARAMETERS,
      responses: {
        '200': { description: 'The canceled task.', content: { 'application/a2a+json': { schema: { $ref: '#/components/schemas/A2ATask' } } } },
        ...REST_ERRORS,
      },
    },
  },
  '/a2a/rest/tasks/{taskId}:subscribe': {
    get: {
      operationId: 'getSubscribeA2aRestTask',
      summary: 'A2A HTTP+JSON: subscribe to a task (SubscribeToTask, GET)',
      description: `${'Streams a task that is not finished (server-sent events, `data: <A2AStreamResponse>`): first the task as it is, then the events of a turn running on it, if any (e.g. a payment being verified and settled). A task in a terminal state is 400 `FAILED_PRECONDITION` (-32004); an unknown one 404. Also served as POST.'} ${REST_BINDING}`,
      parameters: TASK_PARAMETERS,
      responses: { '200': EVENT_STREAM, ...REST_ERRORS },
    },
    post: {
      operationId: 'postSubscribeA2aRestTask',
      summary: 'A2A HTTP+JSON: subscribe to a task (SubscribeToTask, POST)',
      description: `${'Streams a task that is not finished (server-sent events, `data: <A2AStreamResponse>`): first the task as it is, then the events of a turn running on it, if any (e.g. a payment being verified and settled). A task in a terminal state is 400 `FAILED_PRECONDITION` (-32004); an unknown one 404. Also served as GET.'} ${REST_BINDING}`,
      parameters: TASK_PARAMETERS,
      responses: { '200': EVENT_STREAM, ...REST_ERRORS },
    },
  },
  '/a2a/rest/v1/message:send': {
    post: {
      operationId: 'postA2aRestV03MessageSend',
      summary: 'A2A v0.3 HTTP+JSON: send a message',
      description: `${'SendMessage for v0.3 clients; the payment flow is the same (see `POST /a2a/rest/message:send`).'} ${V03_BINDING}`,
      parameters: [
        { $ref: '#/components/parameters/A2AVersion' },
        { $ref: '#/components/parameters/A2AExtensionsLegacy' },
        { $ref: '#/components/parameters/A2AExtensions' },
      ],
      requestBody: V03_SEND_MESSAGE_BODY,
      responses: {
        '201': jsonResponse(
          'The task or message, in v0.3 shapes.',
          { type: 'object', properties: { task: { type: 'object' }, message: { type: 'object' } } },
          {
            headers: { 'X-A2A-Extensions': { schema: { type: 'string' }, description: 'The activated x402 extension URI.' } },
            example: {
              task: {
                id: 'b1f601e9-1e4b-46ae-b036-b36cdd718024',
                contextId: '27b556d7-37a6-42e1-b321-f8dbcee0fd9e',
                status: {
                  state: 'TASK_STATE_INPUT_REQUIRED',
                  message: {
                    messageId: '07c93e07-604a-4f5d-ab10-d41995ac5e80',
                    contextId: '27b556d7-37a6-42e1-b321-f8dbcee0fd9e',
                    taskId: 'b1f601e9-1e4b-46ae-b036-b36cdd718024',
                    role: 'ROLE_AGENT',
                    content: [
                      {
                        text: 'Payment required for forecast: 10000 atomic units of 0x036CbD53842c5426634e7929541eC2318f3dCF7e on eip155:84532. Sign x402.payment.required and send it as x402.payment.payload with x402.payment.status payment-submitted.',
                      },
                    ],
                    metadata: {
                      'x402.payment.status': 'payment-required',
                      'x402.payment.required': {
                        x402Version: 2,
                        error: 'Payment required',
                        resource: {
                          url: 'http://127.0.0.1:4040/a2a/rest/tasks/b1f601e9-1e4b-46ae-b036-b36cdd718024',
                          description: 'Weather forecast: Faro',
                          mimeType: 'application/json',
                        },
                        accepts: [
                          {
                            scheme: 'exact',
                            network: 'eip155:84532',
                            amount: '10000',
                            asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
                            payTo: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
                            maxTimeoutSeconds: 300,
                            extra: { name: 'USDC', version: '2' },
                          },
                        ],
                      },
                    },
                    extensions: ['https://github.com/google-a2a/a2a-x402/v0.1'],
                  },
                  timestamp: '2026-12-01T10:56:02.738Z',
                },
                metadata: { skill: 'forecast' },
              },
            },
          },
        ),
        ...V03_REST_ERRORS,
        '413': { $ref: '#/components/responses/A2APayloadTooLarge' },
      },
    },
  },
  '/a2a/rest/v1/message:stream': {
    post: {
      operationId: 'postA2aRestV03MessageStream',
      summary: 'A2A v0.3 HTTP+JSON: send a message and stream the task',
      description: `${'As `POST /a2a/rest/v1/message:send`, answered as server-sent events (`data: <v0.3 StreamResponse>`).'} ${V03_BINDING}`,
      parameters: [
        { $ref: '#/components/parameters/A2AVersion' },
        { $ref: '#/components/parameters/A2AExtensionsLegacy' },
        { $ref: '#/components/parameters/A2AExtensions' },
      ],
      requestBody: V03_SEND_MESSAGE_BODY,
      responses: { '200': V03_EVENT_STREAM, ...V03_REST_ERRORS, '413': { $ref: '#/components/responses/A2APayloadTooLarge' } },
    },
  },
  '/a2a/rest/v1/tasks/{taskId}': {
    get: {
      operationId: 'getA2aRestV03Task',
      summary: 'A2A v0.3 HTTP+JSON: get a task',
      description: `${'GetTask for v0.3 clients (`historyLength` or `history_length` in the query).'} ${V03_BINDING}`,
      parameters: [
        { $ref: '#/components/parameters/A2ATaskId' },
        { $ref: '#/components/parameters/A2AVersion' },
        { name: 'historyLength', in: 'query', required: false, schema: { type: 'integer', minimum: 0 } },
      ],
      responses: { '200': jsonResponse('The task, in v0.3 shapes.'), ...V03_REST_ERRORS },
    },
  },
  '/a2a/rest/v1/tasks/{taskId}:cancel': {
    post: {
      operationId: 'cancelA2aRestV03Task',
      summary: 'A2A v0.3 HTTP+JSON: cancel a task',
      description: `${'CancelTask for v0.3 clients: as `POST /a2a/rest/tasks/{taskId}:cancel` (-32002 when the payment is under way or done).'} ${V03_BINDING}`,
      parameters: TASK_PARAMETERS,
      responses: { '200': jsonResponse('The canceled task, in v0.3 shapes.'), ...V03_REST_ERRORS },
    },
  },
  '/a2a/rest/v1/tasks/{taskId}:subscribe': {
    get: {
      operationId: 'getSubscribeA2aRestV03Task',
      summary: 'A2A v0.3 HTTP+JSON: subscribe to a task (GET)',
      description: `${'Resubscribe for v0.3 clients, as `/a2a/rest/tasks/{taskId}:subscribe`; served as GET and POST.'} ${V03_BINDING}`,
      parameters: TASK_PARAMETERS,
      responses: { '200': V03_EVENT_STREAM, ...V03_REST_ERRORS },
    },
    post: {
      operationId: 'postSubscribeA2aRestV03Task',
      summary: 'A2A v0.3 HTTP+JSON: subscribe to a task (POST)',
      description: `${'Resubscribe for v0.3 clients, as `/a2a/rest/tasks/{taskId}:subscribe`; served as GET and POST.'} ${V03_BINDING}`,
      parameters: TASK_PARAMETERS,
      responses: { '200': V03_EVENT_STREAM, ...V03_REST_ERRORS },
    },
  },
};
