import { problemBody, problemResponse } from '@mp/platform';
/**
 * Component schemas, responses and parameters of this service's OpenAPI document that no DTO class or zod codec
 * makes: the shapes of its answers and their shared problem responses, referenced by the @ApiDoc of its routes.
 */
export const COMPONENTS = {
  responses: {
    BadRequest: problemResponse(
      'Malformed input: 400 `validation_failed` (with `invalidParams`) or `malformed_json`. Nothing is read from or written to the chain or the database.',
      {
        examples: {
          unknownField: {
            summary: 'Unknown member in a strict object',
            value: problemBody('validation_failed', 'invalid field(s): paymentRequirements', '/verify', {
              invalidParams: [{ name: 'paymentRequirements', reason: 'unknown field(s): discount' }],
            }),
          },
          missingFields: {
            summary: 'Missing envelope members',
            value: problemBody('validation_failed', 'invalid field(s): paymentPayload, paymentRequirements', '/verify', {
              invalidParams: [
                { name: 'paymentPayload', reason: 'is required' },
                { name: 'paymentRequirements', reason: 'is required' },
              ],
            }),
          },
          malformedPayload: {
            summary: 'Malformed EIP-3009 payload',
            value: problemBody('validation_failed', 'the exact EVM payload is malformed', '/settle', {
              invalidParams: [{ name: 'paymentPayload.payload.authorization.nonce', reason: 'must be 0x-prefixed 32 bytes of hex' }],
            }),
          },
          badPaymentIdentifier: {
            summary: 'payment-identifier id too short',
            value: problemBody('validation_failed', 'invalid field(s): paymentPayload.extensions.payment-identifier.info.id', '/settle', {
              invalidParams: [{ name: 'paymentPayload.extensions.payment-identifier.info.id', reason: 'must be 16 to 128 characters' }],
            }),
          },
          malformedJson: {
            summary: 'Body is not JSON',
            value: problemBody('malformed_json', 'the body is not valid JSON: Expected double-quoted property name in JSON at position 18', '/verify'),
          },
        },
      },
    ),
    InternalError: problemResponse('An unexpected error (logged on the server, never with a stack in the answer).', {
      examples: {
        internal: {
          summary: 'Unexpected error',
          value: problemBody('internal_error', 'an unexpected error occurred; it has been logged', '/supported'),
        },
      },
    }),
    OperatorRateLimited: problemResponse(
      'This client address sent more wrong tokens or API keys than `AUTH_FAILURES_PER_MINUTE` allows: even the right token waits `Retry-After` seconds.',
      {
        headers: { 'Retry-After': { description: 'Seconds to wait (an integer ≥ 1).', schema: { type: 'integer', minimum: 1 } } },
        examples: {
          locked: {
            summary: 'Too many failed attempts',
            value: problemBody('rate_limited', 'too many failed authentication attempts from this address; retry in 42 s', '/admin/merchants', {
              retryAfter: 42,
            }),
          },
        },
      },
    ),
    OperatorUnauthorized: problemResponse(
      "No operator token, or a wrong one (a merchant API key included). A wrong token counts against the client address's failed attempts (`AUTH_FAILURES_PER_MINUTE`, shared with bad API keys).",
      {
        headers: { 'WWW-Authenticate': { description: '`Bearer realm="operator"`.', schema: { type: 'string' } } },
        examples: {
          unauthorized: {
            summary: 'No or a wrong operator token',
            value: problemBody('unauthorized', 'the operator token is required (Authorization: Bearer <OPERATOR_TOKEN>)', '/admin/merchants'),
          },
        },
      },
    ),
    PayloadTooLarge: problemResponse('The body is over the limit. The connection is closed.', {
      examples: {
        tooLarge: {
          summary: 'Declared length over 64 KiB',
          value: problemBody('payload_too_large', 'the body is 71084 bytes; the limit is 65536', '/settle'),
        },
      },
    }),
    PaymentIdentifierConflict: problemResponse(
      'The payment-identifier `id` is bound to a different payload. Checked after the checks that need no chain and before any chain access: nothing is read from the chain, written or sent.',
      {
        examples: {
          conflict: {
            summary: 'Same id, different payload',
            value: problemBody(
              'payment_identifier_conflict',
              'payment identifier "order_7f3c2a9e41b64d0c" was already used with a different payment payload',
              '/settle',
              { paymentIdentifier: 'order_7f3c2a9e41b64d0c' },
            ),
          },
        },
      },
    ),
    RateLimited: problemResponse(
      'The API key used up its rate limit (a token bucket per key: `RATE_LIMIT_PER_MINUTE` tokens a minute, at most `RATE_LIMIT_BURST` at once, shared by all replicas through Redis). Retry after `Retry-After` seconds. If Redis is unreachable, requests are not limited. In open mode (`FACILITATOR_OPEN_MODE`), a request without a key is limited the same way per client address (`OPEN_MODE_RATE_LIMIT_PER_MINUTE`, `OPEN_MODE_RATE_LIMIT_BURST`).',
      {
        headers: { 'Retry-After': { description: 'Seconds until the key may send again (an integer ≥ 1).', schema: { type: 'integer', minimum: 1 } } },
        examples: {
          rateLimited: {
            summary: 'Too many requests with one key',
            value: problemBody('rate_limited', 'too many requests with this API key; retry in 20 s', '/settle', { retryAfter: 20 }),
          },
        },
      },
    ),
    Unauthorized: problemResponse(
      'No valid merchant API key: missing, malformed, unknown or revoked, or its merchant is disabled. The body is the same in every case, so it never tells whether a merchant or key exists. On /verify and /settle a request without any key is let through when the operator set `FACILITATOR_OPEN_MODE=true`.',
      {
        headers: { 'WWW-Authenticate': { description: 'Always `Bearer realm="facilitator"`.', schema: { type: 'string' } } },
        examples: {
          unauthorized: {
            summary: 'Missing or invalid API key',
            value: problemBody('unauthorized', 'a valid API key is required', '/settle'),
          },
        },
      },
    ),
    Unavailable: problemResponse('The database is unreachable; retry shortly.', {
      examples: {
        databaseDown: {
          summary: 'Database unreachable',
          value: problemBody('upstream_unavailable', 'a backing service (database or queue) is unavailable; retry shortly', '/payments'),
        },
      },
    }),
    UnsupportedMediaType: problemResponse('A body that is not declared as JSON.', {
      examples: {
        textPlain: {
          summary: 'text/plain body',
          value: problemBody('unsupported_media_type', 'send the body as application/json (got "text/plain")', '/verify'),
        },
      },
    }),
  },
  schemas: {
    AdminApiKey: {
      type: 'object',
      additionalProperties: false,
      description: 'An API key as the operator API shows it: never the key itself (shown once, when it is made) or its hash.',
      required: ['keyId', 'prefix', 'name', 'createdAt', 'lastUsedAt', 'revokedAt'],
      properties: {
        keyId: { type: 'string', format: 'uuid' },
        prefix: { type: 'string', pattern: '^[a-z2-7]{8}$', description: 'The 8 characters after `mpk_`: names the key in listings.' },
        name: { type: ['string', 'null'] },
        createdAt: { type: 'string', format: 'date-time' },
        lastUsedAt: { type: ['string', 'null'], format: 'date-time', description: 'Recorded at most once a minute per process.' },
        revokedAt: { type: ['string', 'null'], format: 'date-time', description: 'null: the key works (if its merchant is enabled).' },
      },
    },
    AdminCreatedApiKey: {
      description: 'A key as it is made: the only answer that carries `apiKey`.',
      allOf: [
        { $ref: '#/components/schemas/AdminApiKey' },
        {
          type: 'object',
          required: ['merchantId', 'apiKey'],
          properties: {
            merchantId: { type: 'string', format: 'uuid' },
            apiKey: {
              type: 'string',
              pattern: '^mpk_[a-z2-7]{8}_[a-z2-7]{32}$',
              description: 'The key, sent by the merchant as `Authorization: Bearer <apiKey>`. Only its sha256 is stored.',
            },
          },
        },
      ],
    },
    AdminCreatedMerchant: {
      type: 'object',
      additionalProperties: false,
      required: ['merchant', 'apiKey', 'webhookSecret'],
      description: 'A merchant as it is made, with its first API key and its webhook signing secret: both are shown here only.',
      properties: {
        merchant: { $ref: '#/components/schemas/AdminMerchant' },
        apiKey: { $ref: '#/components/schemas/AdminCreatedApiKey' },
        webhookSecret: {
          type: 'string',
          pattern: '^whsec_[A-Za-z0-9+/]{43}=$',
          description: 'Standard Webhooks secret (`whsec_` + base64 of 32 random bytes) every webhook to the merchant is signed with.',
        },
      },
    },
    AdminMerchant: {
      type: 'object',
      additionalProperties: false,
      description: 'A merchant as the operator API shows it: never its webhook secret or key hashes.',
      required: ['merchantId', 'name', 'webhookUrl', 'allowAnyPayTo', 'receivingAddresses', 'apiKeys', 'createdAt', 'disabledAt'],
      properties: {
        merchantId: { type: 'string', format: 'uuid' },
        name: { type: 'string' },
        webhookUrl: { type: ['string', 'null'], format: 'uri', description: 'Where its webhooks go; null: none are sent.' },
        allowAnyPayTo: { type: 'boolean', description: 'true: its settlements may pay any address, not only its receiving addresses.' },
        receivingAddresses: { type: 'array', items: { $ref: '#/components/schemas/ReceivingAddress' } },
        apiKeys: { type: 'array', items: { $ref: '#/components/schemas/AdminApiKey' }, description: 'Every key, revoked ones included, oldest first.' },
        createdAt: { type: 'string', format: 'date-time' },
        disabledAt: {
          type: ['string', 'null'],
          format: 'date-time',
          description: "null: enabled. A disabled merchant's keys are refused (401) and no webhooks are sent to it.",
        },
      },
    },
    AdminMerchantList: {
      type: 'object',
      additionalProperties: false,
      required: ['data', 'nextCursor'],
      properties: {
        data: { type: 'array', items: { $ref: '#/components/schemas/AdminMerchant' }, description: 'In creation order, oldest first.' },
        nextCursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
      },
    },
    AdminWebhookDelivery: {
      type: 'object',
      additionalProperties: false,
      required: [
        'deliveryId',
        'eventType',
        'eventId',
        'noticeId',
        'url',
        'status',
        'attempt',
        'responseStatus',
        'error',
        'nextAttemptAt',
        'createdAt',
        'deliveredAt',
      ],
      description: 'One webhook (see `webhooks`) and where its delivery stands; the body itself is not shown.',
      properties: {
        deliveryId: { type: 'string', format: 'uuid', description: "Also the `webhook-id` header and the body's `id`, the same on every attempt." },
        eventType: {
          type: 'string',
          description: '`payment.confirmed`, `payment.failed`, `payment.expired`, `payment.reorged`, or a notice type (`reconciliation.breaks_found`).',
        },
        eventId: { type: ['string', 'null'], description: 'The payment event it reports (a decimal id), or null for a notice.' },
        noticeId: { type: ['string', 'null'], description: 'The notice it carries, or null for a payment event.' },
        url: { type: 'string', description: 'Where its attempts go.' },
        status: { type: 'string', enum: ['pending', 'delivered', 'failed'] },
        attempt: { type: 'integer', minimum: 0, description: 'Attempts started so far.' },
        responseStatus: { type: ['integer', 'null'], description: 'HTTP status of the last attempt, if it got an answer.' },
        error: { type: ['string', 'null'], description: 'Why the last attempt failed.' },
        nextAttemptAt: { type: ['string', 'null'], format: 'date-time', description: 'When the next attempt is due (pending only).' },
        createdAt: { type: 'string', format: 'date-time' },
        deliveredAt: { type: ['string', 'null'], format: 'date-time' },
      },
    },
    AdminWebhookDeliveryList: {
      type: 'object',
      additionalProperties: false,
      required: ['data', 'nextCursor'],
      properties: {
        data: { type: 'array', items: { $ref: '#/components/schemas/AdminWebhookDelivery' }, description: 'Newest first.' },
        nextCursor: { type: ['string', 'null'], description: 'Pass as `cursor` for the next page; null on the last page.' },
      },
    },
    AtomicAmount: {
      type: 'string',
      pattern: '^(0|[1-9][0-9]*)$',
      description:
        "A non-negative integer count of the asset's atomic units as a decimal string (no sign, no leading zeros, at most 2^256-1). Never a JSON number.",
      examples: ['10000'],
    },
    Bytes32: { type: 'string', pattern: '^0x[0-9a-fA-F]{64}$', description: '0x-prefixed 32 bytes of hex.' },
    Caip2: {
      type: 'string',
      pattern: '^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$',
      description: 'CAIP-2 chain id, e.g. `eip155:8453` (Base), `eip155:84532` (Base Sepolia), `eip155:31337` (local anvil).',
    },
    EvmAddress: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: '0x-prefixed 20-byte address. Mixed case must be a valid EIP-55 checksum.' },
    FacilitatorRequestV1: {
      type: 'object',
      description: 'Body of POST /verify and /settle for x402 v1 (the legacy client sends no top-level `x402Version`).',
      additionalProperties: false,
      required: ['paymentPayload', 'paymentRequirements'],
      properties: {
        x402Version: { type: 'integer', description: 'Optional; when present it must equal `paymentPayload.x402Version`.' },
        paymentPayload: { $ref: '#/components/schemas/PaymentPayloadV1' },
        paymentRequirements: { $ref: '#/components/schemas/PaymentRequirementsV1' },
      },
    },
    FacilitatorRequestV2: {
      type: 'object',
      description: 'Body of POST /verify and /settle for x402 v2. The envelope is strict (`facilitatorRequestEnvelopeSchema`).',
      additionalProperties: false,
      required: ['paymentPayload', 'paymentRequirements'],
      properties: {
        x402Version: { type: 'integer', description: 'Optional; when present it must equal `paymentPayload.x402Version`, else `invalid_x402_version`.' },
        paymentPayload: { $ref: '#/components/schemas/PaymentPayloadV2' },
        paymentRequirements: { $ref: '#/components/schemas/PaymentRequirementsV2' },
      },
    },
    HealthResponse: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { const: 'ok' } } },
    MppIssuedChallenges: {
      type: 'object',
      required: ['challenges', 'wwwAuthenticate'],
      additionalProperties: false,
      properties: {
        challenges: { type: 'array', items: { $ref: '#/components/schemas/MppChallenge' } },
        wwwAuthenticate: {
          type: 'array',
          items: { type: 'string' },
          description: 'One `WWW-Authenticate` field value per challenge, ready to send with the 402.',
        },
      },
    },
    MppProblem: {
      type: 'object',
      description:
        'RFC 9457 problem of the Payment scheme, to relay to the client as it is (status, body without `challenges` or with, and the `WWW-Authenticate` fields).',
      required: ['type', 'title', 'status', 'challenges'],
      additionalProperties: false,
      properties: {
        type: { $ref: '#/components/schemas/MppProblemType' },
        title: { type: 'string' },
        status: { type: 'integer' },
        detail: { type: 'string' },
        challengeId: { type: 'string' },
        challenges: { type: 'array', items: { $ref: '#/components/schemas/MppChallenge' } },
      },
    },
    MppProblemType: {
      type: 'string',
      enum: [
        'https://paymentauth.org/problems/payment-required',
        'https://paymentauth.org/problems/payment-insufficient',
        'https://paymentauth.org/problems/verification-failed',
        'https://paymentauth.org/problems/malformed-credential',
        'https://paymentauth.org/problems/invalid-challenge',
        'https://paymentauth.org/problems/payment-expired',
        'https://paymentauth.org/problems/invalid-payload',
        'https://paymentauth.org/problems/payment-action-required',
        'https://paymentauth.org/problems/method-unsupported',
        'https://paymentauth.org/problems/bad-request',
        'https://paymentauth.org/problems/internal-payment-error',
      ],
      'x-problem-status': {
        'payment-required': 402,
        'payment-insufficient': 402,
        'verification-failed': 402,
        'malformed-credential': 402,
        'invalid-challenge': 402,
        'payment-expired': 402,
        'invalid-payload': 402,
        'payment-action-required': 402,
        'method-unsupported': 400,
        'bad-request': 400,
        'internal-payment-error': 500,
      },
      description:
        "Problem types of the Payment scheme the MPP endpoints answer (with `challenges`, fresh ones for the same terms, and one `WWW-Authenticate` per challenge):\n\n| type | status | when |\n|---|---|---|\n| `payment-required` | 402 | No credential (merchants send it themselves with the first 402). |\n| `payment-insufficient` | 402 | The authorization pays less than the challenge asks; the Shared Payment Token allows less (verify only). |\n| `verification-failed` | 402 | Bad signature, wrong recipient or exact amount, nonce not bound to the challenge, payer lacks funds or the simulation fails; Stripe declined the token or the payment. |\n| `malformed-credential` | 402 | Not base64url JSON, or not a credential. |\n| `invalid-challenge` | 402 | Not issued by us for this merchant (HMAC), issued for other terms (cross-route, other body digest or opaque), or already used. |\n| `payment-expired` | 402 | The challenge (or the authorization) has expired. |\n| `invalid-payload` | 402 | The method payload is malformed (missing or wrong members). |\n| `payment-action-required` | 402 | The PaymentIntent requires customer action (3-D Secure). |\n| `method-unsupported` | 400 | The credential's method or intent is not one of the route's offers. |\n| `bad-request` | 400 | More than one Payment credential. |\n| `internal-payment-error` | 500 | The outcome is not known yet: the chain RPC or Stripe is unreachable, or settlement is still pending. The same credential may be sent again (retried idempotently); nothing is charged twice. |",
    },
    MppSettleResponse: {
      type: 'object',
      required: ['success', 'receipt', 'paymentReceipt'],
      additionalProperties: false,
      properties: {
        success: { const: true },
        receipt: { $ref: '#/components/schemas/MppReceipt' },
        paymentReceipt: { type: 'string', description: 'The `Payment-Receipt` header value (also sent as a response header).' },
        payer: { type: 'string', description: 'The payer address (evm) or the Shared Payment Token (stripe).' },
      },
    },
    MppSupportedResponse: {
      type: 'object',
      required: ['methods'],
      additionalProperties: false,
      properties: {
        methods: {
          type: 'array',
          items: {
            type: 'object',
            required: ['method', 'intents'],
            properties: { method: { type: 'string' }, intents: { type: 'array', items: { type: 'string' } } },
          },
        },
      },
    },
    MppVerifyResponse: {
      type: 'object',
      required: ['valid', 'challengeId', 'method', 'intent'],
      additionalProperties: false,
      properties: {
        valid: { const: true },
        challengeId: { type: 'string' },
        method: { type: 'string' },
        intent: { type: 'string' },
        payer: { type: 'string' },
      },
    },
    Payment: {
      type: 'object',
      description:
        'A payment as its merchant sees it: in `GET /payments/{id}`, `GET /payments` and the `data.payment` of webhooks. x402 and MPP payments alike; an MPP stripe payment has network `stripe`, the currency as asset, the Shared Payment Token as payer, the challenge id as nonce and the PaymentIntent as reference.',
      required: [
        'id',
        'state',
        'protocol',
        'rail',
        'network',
        'asset',
        'payer',
        'payTo',
        'amount',
        'nonce',
        'scheme',
        'x402Version',
        'challengeId',
        'reference',
        'paymentIdentifier',
        'txHash',
        'errorReason',
        'errorMessage',
        'createdAt',
        'updatedAt',
        'settledAt',
      ],
      additionalProperties: false,
      properties: {
        id: { type: 'string', format: 'uuid' },
        state: { $ref: '#/components/schemas/PaymentState' },
        protocol: { type: 'string', enum: ['x402', 'mpp'], description: 'Which API accepted it.' },
        rail: { type: 'string', enum: ['evm', 'stripe'], description: 'evm: settled on chain by the settlement engine; stripe: a PaymentIntent.' },
        network: { anyOf: [{ $ref: '#/components/schemas/Caip2' }, { const: 'stripe' }] },
        asset: { type: 'string', description: 'The token contract (checksummed); on Stripe the currency.' },
        payer: { type: 'string', description: 'The payer address; on Stripe the Shared Payment Token.' },
        payTo: { type: 'string', description: "The recipient address; on Stripe the seller's network id." },
        amount: { $ref: '#/components/schemas/AtomicAmount' },
        nonce: { type: 'string', description: 'The EIP-3009 authorization nonce (lowercase); on Stripe the MPP challenge id.' },
        scheme: { type: 'string', examples: ['exact', 'evm', 'stripe'], description: 'The x402 scheme, or the MPP method.' },
        x402Version: { type: ['integer', 'null'], enum: [1, 2, null], description: 'x402 payments only.' },
        challengeId: { type: ['string', 'null'], description: 'MPP payments only: the challenge the credential answered.' },
        reference: { type: ['string', 'null'], description: 'Stripe payments only: the PaymentIntent (`pi_…`).' },
        paymentIdentifier: { type: ['string', 'null'], description: 'The x402 `payment-identifier` id it was settled under.' },
        txHash: { type: ['string', 'null'], description: 'The settlement transaction (the mined one once final).' },
        errorReason: {
          type: ['string', 'null'],
          description:
            "Why it failed or expired: an X402Reason for chain payments, Stripe's decline or error code (or the PaymentIntent status) for stripe ones.",
        },
        errorMessage: { type: ['string', 'null'], description: 'Human-readable detail; not stable.' },
        createdAt: { type: 'string', format: 'date-time' },
        updatedAt: { type: 'string', format: 'date-time' },
        settledAt: { type: ['string', 'null'], format: 'date-time', description: 'When it was confirmed.' },
      },
    },
    PaymentIdentifierExtension: {
      type: 'object',
      description:
        'The `payment-identifier` extension (x402 v2 only), `paymentPayload.extensions["payment-identifier"]`. Must be an object; its `info` is validated (`paymentIdentifierInfoSchema`, open for other members). An `id` binds to the first payload that /settle claims with it: the same id with the same payload gets the recorded outcome, the same id with a different payload gets 409 `payment_identifier_conflict` from /verify and /settle. `required: true` without an `id` is a 400. `schema` and other members are ignored.',
      additionalProperties: true,
      properties: { info: { $ref: '#/components/schemas/PaymentIdentifierInfo' }, schema: { type: 'object', additionalProperties: true } },
      examples: [{ info: { required: false, id: 'order_7f3c2a9e41b64d0c' }, schema: {} }],
    },
    PaymentList: {
      type: 'object',
      required: ['data', 'nextCursor'],
      additionalProperties: false,
      properties: {
        data: { type: 'array', items: { $ref: '#/components/schemas/Payment' }, description: 'Newest first (by creation, then id).' },
        nextCursor: { type: ['string', 'null'], description: 'Pass as `cursor` to get the next (older) page; null on the last page. Opaque.' },
      },
    },
    PaymentState: {
      type: 'string',
      enum: ['verified', 'submitted', 'confirmed', 'failed', 'expired'],
      description:
        '`verified`: claimed and queued; `submitted`: a transaction was signed and sent (`txHash`); `confirmed`: mined with the exact transfer (final); `failed`: with `txHash`, mined and failed (final); without, refused before anything was sent (settling the same payload again may retry it); `expired`: `validBefore` passed with nothing mined (final).',
    },
    ReadyResponse: {
      type: 'object',
      required: ['status', 'checks'],
      additionalProperties: false,
      properties: {
        status: { const: 'ready' },
        checks: {
          type: 'object',
          additionalProperties: { type: 'string' },
          description:
            'Check name → `ok` or `ok (<detail>)`. Facilitator: `database`, `redis` and one entry per configured network (CAIP-2 id → `ok (block N)`). Ledger: `database`, `redis`. Merchant agent: `facilitator`.',
        },
      },
    },
    ReceivingAddress: {
      type: 'object',
      required: ['network', 'address', 'createdAt'],
      additionalProperties: false,
      description:
        'An address the merchant is paid at on one network. `/verify`, `/settle` and MPP `evm` charges of a keyed merchant must pay one of these (the x402 `payTo`, the MPP `recipient`), unless the merchant sets `allowAnyPayTo`.',
      properties: {
        network: { type: 'string', pattern: '^eip155:[1-9][0-9]{0,19}$', description: 'CAIP-2 network id.' },
        address: { type: 'string', pattern: '^0x[0-9a-fA-F]{40}$', description: 'EIP-55 checksummed. Compared with `payTo` ignoring case.' },
        createdAt: { type: 'string', format: 'date-time' },
      },
    },
    ReconciliationRow: {
      type: 'object',
      required: ['key', 'kind', 'source', 'asset', 'entryKind', 'reference', 'occurredAt'],
      properties: {
        key: { type: 'string', description: 'Stable across runs: the same break found again has the same key.' },
        kind: { type: 'string', enum: ['matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate'] },
        source: { type: 'string', enum: ['chain', 'stripe'] },
        asset: { type: 'string' },
        entryKind: { type: 'string', enum: ['payment', 'refund', 'fee', 'gas'] },
        reference: {
          type: 'string',
          description: "`<txHash>:<logIndex>`, `pi_…`, `re_…`, `txn_…`, or the ledger's reference when there is no external entry.",
        },
        occurredAt: { type: 'string', format: 'date-time' },
        ledger: {
          type: 'object',
          description: 'The ledger entry as corrected (amount = booking + corrections).',
          properties: {
            id: { type: 'string' },
            merchantId: { type: 'string' },
            source: { type: 'string' },
            asset: { type: 'string' },
            reference: { type: 'string' },
            kind: { type: 'string' },
            amount: {
              type: 'string',
              pattern: '^-?(0|[1-9][0-9]*)$',
              description: 'Atomic units as a decimal string (negative for net amounts flowing out, and differences).',
            },
            state: { type: 'string', enum: ['pending', 'posted'] },
            occurredAt: { type: 'string', format: 'date-time' },
          },
        },
        corrections: { type: 'array', items: { type: 'string' }, description: 'Ids of the correcting entries folded into `ledger`.' },
        external: {
          type: 'object',
          properties: {
            source: { type: 'string' },
            asset: { type: 'string' },
            reference: { type: 'string' },
            aliases: { type: 'array', items: { type: 'string' } },
            container: { type: 'string' },
            kind: { type: 'string' },
            amount: {
              type: 'string',
              pattern: '^-?(0|[1-9][0-9]*)$',
              description: 'Atomic units as a decimal string (negative for net amounts flowing out, and differences).',
            },
            occurredAt: { type: 'string', format: 'date-time' },
            details: { type: 'object', additionalProperties: { type: 'string' } },
          },
        },
        difference: { type: 'string', pattern: '^-?(0|[1-9][0-9]*)$', description: 'amount_mismatch: external − ledger' },
        duplicateOf: { type: 'string', description: 'duplicate: the ledger entry id or external reference this one repeats.' },
      },
    },
    ReconciliationSummary: {
      type: 'object',
      required: ['period', 'generatedAt', 'rows', 'counts', 'breaks', 'ledgerEntries', 'externalEntries', 'corrections', 'scope'],
      properties: {
        period: { type: 'object', properties: { from: { type: 'string', format: 'date-time' }, to: { type: 'string', format: 'date-time' } } },
        generatedAt: { type: 'string', format: 'date-time' },
        rows: { type: 'integer' },
        counts: {
          type: 'object',
          required: ['matched', 'pending', 'missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate'],
          additionalProperties: { type: 'integer' },
        },
        breaks: { type: 'integer', description: 'Rows of the four break kinds.' },
        ledgerEntries: { type: 'integer' },
        externalEntries: { type: 'integer' },
        corrections: { type: 'integer', description: 'Correcting ledger entries folded into the entries they correct.' },
        scope: {
          type: 'object',
          required: ['reconciled', 'leftOut'],
          properties: {
            reconciled: { type: 'array', items: { type: 'string' }, description: '`source/kind` pairs compared.' },
            leftOut: { type: 'integer', description: 'Ledger entries of kinds no scan covers (e.g. chain gas), not reconciled.' },
          },
        },
      },
    },
    SettleResponse: {
      type: 'object',
      description: 'Answer of POST /settle, always HTTP 200. `transaction` and `network` are always present.',
      required: ['success', 'transaction', 'network'],
      properties: {
        success: { type: 'boolean' },
        errorReason: { allOf: [{ $ref: '#/components/schemas/X402Reason' }], description: 'Present when `success` is false.' },
        errorMessage: { type: 'string', description: 'Human-readable detail, for logs; not stable.' },
        payer: { $ref: '#/components/schemas/EvmAddress' },
        transaction: {
          type: 'string',
          description:
            'The settlement transaction hash (0x + 64 hex), also on `settlement_pending` and on failures of a mined transaction; `""` when nothing was sent.',
        },
        network: {
          type: 'string',
          description:
            'The network exactly as `paymentRequirements.network` named it (a v1 name stays a v1 name); `""` only when the request could not be decoded far enough to read it.',
        },
      },
    },
    StripeWebhookAck: {
      type: 'object',
      required: ['received'],
      additionalProperties: false,
      properties: { received: { const: true }, duplicate: { const: true, description: 'This event id was handled before; nothing changed.' } },
    },
    SupportedKind: {
      type: 'object',
      required: ['x402Version', 'scheme', 'network'],
      properties: {
        x402Version: { type: 'integer', enum: [1, 2] },
        scheme: { const: 'exact' },
        network: { type: 'string', description: 'CAIP-2 for v2; a v1 name for v1.' },
        extra: { type: 'object', additionalProperties: true, description: 'Not set for exact EVM.' },
      },
    },
    SupportedResponse: {
      type: 'object',
      description:
        "One v2 kind per configured network, then one v1 kind per v1 name of that network (the networks file's `v1Names` plus the built-in names of `DEFAULT_V1_NETWORKS` that map to it).",
      required: ['kinds', 'extensions', 'signers'],
      properties: {
        kinds: { type: 'array', items: { $ref: '#/components/schemas/SupportedKind' } },
        extensions: { type: 'array', items: { type: 'string' }, description: 'Always `["payment-identifier"]`.' },
        signers: {
          type: 'object',
          description: 'Hot-wallet addresses, all networks together under `eip155:*`.',
          additionalProperties: { type: 'array', items: { $ref: '#/components/schemas/EvmAddress' } },
        },
      },
    },
    VerifyResponse: {
      type: 'object',
      description: "Answer of POST /verify, always HTTP 200 (the shape @x402/core's HTTPFacilitatorClient parses). /verify writes nothing.",
      required: ['isValid'],
      properties: {
        isValid: { type: 'boolean' },
        invalidReason: { allOf: [{ $ref: '#/components/schemas/X402Reason' }], description: 'Present when `isValid` is false.' },
        invalidMessage: { type: 'string', description: 'Human-readable detail, for logs; not stable.' },
        payer: { allOf: [{ $ref: '#/components/schemas/EvmAddress' }], description: 'Checksummed `authorization.from`, once the payload could be decoded.' },
      },
    },
    WebhookEvent: {
      type: 'object',
      required: ['id', 'type', 'createdAt', 'data'],
      additionalProperties: false,
      description: 'The body of a webhook, byte for byte the same on every retry.',
      properties: {
        id: {
          type: 'string',
          format: 'uuid',
          description: 'The delivery id, also in `Webhook-Id`: one per (merchant, event), the same on every retry. Deduplicate on it.',
        },
        type: { type: 'string', enum: ['payment.confirmed', 'payment.failed', 'payment.expired', 'payment.reorged'] },
        createdAt: { type: 'string', format: 'date-time', description: 'When the event happened.' },
        data: {
          type: 'object',
          required: ['payment'],
          additionalProperties: false,
          properties: { payment: { allOf: [{ $ref: '#/components/schemas/Payment' }], description: 'The payment as of the event.' } },
        },
      },
    },
    X402Reason: {
      type: 'string',
      description:
        "Reason strings of `X402Reason` (libs/x402/src/reasons.ts), character for character those of @x402/core and @x402/evm 2.27. Clients must treat them as opaque. Where the facilitator emits each one:\n\n| reason | endpoint | when |\n|---|---|---|\n| `invalid_x402_version` | verify, settle | `paymentPayload.x402Version` is not 1 or 2, or the top-level `x402Version` differs from it (libs/x402/src/request.ts). No `payer` in the answer. |\n| `invalid_scheme` | never (reserved) | Defined for compatibility with @x402/core; the facilitator answers `unsupported_scheme` for an unknown requirements scheme instead. |\n| `unsupported_scheme` | verify, settle | `paymentRequirements.scheme` is not `exact`. |\n| `invalid_network` | verify, settle | `paymentRequirements.network` (CAIP-2, or a v1 name in v1) is not a network this facilitator is configured for. |\n| `invalid_payload` | settle (fallback only) | Used only as a fallback when a verification failure carries no reason of its own; the current checks always name one, so it is not emitted in practice. |\n| `invalid_payment_requirements` | verify, settle | The `asset` is not on the network's asset allowlist, or (v2) `paymentPayload.accepted` differs from `paymentRequirements` in any of scheme, network, amount, asset, payTo, maxTimeoutSeconds or extra (the message lists them). |\n| `unexpected_verify_error` | verify | The chain could not be reached (RPC down, timeout, HTTP error) or an unexpected exception stopped verification (logged). Never reported as a bad signature. Retry later. |\n| `unexpected_settle_error` | settle | The chain could not be reached while verifying or estimating gas, the settlement transaction could not be signed or handed over before it had a hash, or an unexpected exception occurred (logged). Nothing was broadcast; settling again is safe. |\n| `invalid_transaction_state` | never (reserved) | Defined for compatibility with @x402/core; not emitted. |\n| `settlement_pending` | settle | The settlement is not finished within SETTLE_BUDGET_MS. With a `transaction` hash: it was broadcast and has no receipt yet (or the receipt lookup failed); settle the same payload again to get the outcome. With `transaction: \"\"`: another request or replica holds the claim on this authorization and had not finished; retry shortly. Never a failure: do not ask the payer for a new authorization. |\n| `unsupported_payload_type` | verify, settle | The payload is a Permit2 authorization (`permit2Authorization`); only EIP-3009 is accepted for now. |\n| `asset_not_deployed_contract` | verify, settle | The configured asset address has no contract code on the network. |\n| `invalid_exact_evm_scheme` | verify, settle | The payload is for another scheme than the requirements (v1 `paymentPayload.scheme`, v2 `accepted.scheme`). |\n| `invalid_exact_evm_network_mismatch` | verify, settle | The payload is for another network than the requirements (v1 `paymentPayload.network`, v2 `accepted.network`). |\n| `invalid_exact_evm_missing_eip712_domain` | verify, settle | `paymentRequirements.extra` does not carry the token's EIP-712 domain as non-empty strings `name` and `version`. |\n| `invalid_exact_evm_recipient_mismatch` | verify, settle | `authorization.to` is not `paymentRequirements.payTo`. |\n| `invalid_exact_evm_signature` | verify, settle | The signature is not `authorization.from`'s over this authorization: native ECDSA recovery does not give `from`, and `from` is not a deployed ERC-1271 wallet that accepts it (an ERC-6492 wrapper around the signature of a deployed wallet is ignored). Also an ERC-6492 wrapper that names no factory call (zero factory or empty calldata) for an address without code, as in the reference. The digest uses the domain from `paymentRequirements.extra`, so a wrong EIP-712 name or version usually shows up here. Also mapped from a broadcast error that names an invalid signature. |\n| `invalid_exact_evm_payload_authorization_valid_before` | verify, settle | `validBefore` is less than now + 6 s (too late to settle safely); also mapped from a broadcast error about an expired authorization, and answered for a payment recorded as `expired`. |\n| `invalid_exact_evm_payload_authorization_valid_after` | verify, settle | `validAfter` is in the future; also mapped from a broadcast error saying the authorization is not yet valid. |\n| `invalid_exact_evm_authorization_value` | never (reserved) | Defined for compatibility with @x402/evm; value problems are answered with `invalid_exact_evm_payload_authorization_value_mismatch`. |\n| `invalid_exact_evm_payload_authorization_value_mismatch` | verify, settle | `authorization.value` is not exactly the required amount (`amount`, v1 `maxAmountRequired`); more is refused too. |\n| `invalid_exact_evm_transaction_failed` | settle | The settlement transaction was mined and reverted (`transaction` holds its hash), or the node refused it with an error that matches no more precise reason (`transaction: \"\"`, nothing sent). A facilitator hot wallet without gas money is not reported this way: the worker retries (possibly from another wallet) and logs an error, and the request answers `settlement_pending` until it succeeds. |\n| `invalid_exact_evm_transfer_event_mismatch` | settle | The transaction succeeded but its receipt has no `Transfer(from, to, value)` log of the asset with exactly the authorized values. |\n| `invalid_exact_evm_failed_to_parse_signature` | verify, settle | The signature ends with the ERC-6492 magic suffix but the wrapper cannot be decoded. |\n| `invalid_exact_evm_token_name_mismatch` | verify, settle | `extra.name` differs from the configured EIP-712 name of the asset (reached when the payer signed with that same wrong name). |\n| `invalid_exact_evm_token_version_mismatch` | verify, settle | `extra.version` differs from the configured EIP-712 version of the asset. |\n| `invalid_exact_evm_eip3009_not_supported` | verify, settle | The simulation failed and the token does not answer `authorizationState`: it does not implement EIP-3009. |\n| `invalid_exact_evm_nonce_already_used` | verify, settle | The authorization nonce is already used or canceled on chain. /settle also answers it when this authorization (same network, asset, payer, nonce) was already presented with a different payload (the message names the settling transaction, if any) or by another merchant (then nothing about that payment is told), and maps broadcast errors saying the authorization was used. |\n| `invalid_exact_evm_insufficient_balance` | verify, settle | The simulation failed and the payer's token balance is below the value. |\n| `invalid_exact_evm_transaction_simulation_failed` | verify, settle | The transfer would revert for another reason (/verify simulates with `eth_call`; /settle estimates gas from the chosen signer, which simulates the same call). For a counterfactual ERC-6492 wallet with an allowed factory this is also the answer when the inner signature is not the wallet's (the token checks it by ERC-1271 inside the simulated deploy + transfer; the reference answers the same), when the factory call does not deploy a wallet at `from`, or when Multicall3 is not deployed on the network. |\n| `invalid_exact_evm_payload_undeployed_smart_wallet` | never (reserved) | Defined for compatibility with @x402/evm; an undeployed ERC-6492 wallet is either settled (allowed factory) or answered with `eip6492_factory_not_allowed`. |\n| `eip6492_factory_not_allowed` | verify, settle | The signature is ERC-6492-wrapped, the payer's wallet is not deployed, and the wrapper's factory is not on the network's `eip6492AllowedFactories` (networks file; `FACILITATOR_EIP6492_FACTORIES` for the local chain; compared ignoring case). The list is empty by default, so every counterfactual wallet is refused (fail closed) until an operator allows its factory. Nothing is sent. |\n| `smart_wallet_deployment_failed` | never (reserved) | Defined for compatibility with @x402/evm (its separate deployment transaction reverted). Here the deployment and the transfer are one atomic Multicall3 transaction: if it reverts, the answer is `invalid_exact_evm_transaction_failed` and no wallet was deployed. |\n| `settlement_gas_exceeds_cap` | settle | Ours, not a reason of @x402/evm: the asset has a gas cap (`gasCap` in the networks file; `FACILITATOR_GAS_CAP_BPS` for the local chain) and the settlement's gas at the current fee, priced in the asset, would exceed that share of the payment. Nothing is written or sent. |\n| `pay_to_not_allowed` | verify, settle | Ours, not a reason of @x402/evm: the request carries a merchant API key, and `payTo` is not one of the receiving addresses that merchant declared for the network (`GET /merchants/me/receiving-addresses`; compared ignoring case), nor does the merchant allow any (`allowAnyPayTo`). Nothing is written or sent. Open mode (no key) is not checked. |",
      enum: [
        'invalid_x402_version',
        'invalid_scheme',
        'unsupported_scheme',
        'invalid_network',
        'invalid_payload',
        'invalid_payment_requirements',
        'unexpected_verify_error',
        'unexpected_settle_error',
        'invalid_transaction_state',
        'settlement_pending',
        'unsupported_payload_type',
        'asset_not_deployed_contract',
        'invalid_exact_evm_scheme',
        'invalid_exact_evm_network_mismatch',
        'invalid_exact_evm_missing_eip712_domain',
        'invalid_exact_evm_recipient_mismatch',
        'invalid_exact_evm_signature',
        'invalid_exact_evm_payload_authorization_valid_before',
        'invalid_exact_evm_payload_authorization_valid_after',
        'invalid_exact_evm_authorization_value',
        'invalid_exact_evm_payload_authorization_value_mismatch',
        'invalid_exact_evm_transaction_failed',
        'invalid_exact_evm_transfer_event_mismatch',
        'invalid_exact_evm_failed_to_parse_signature',
        'invalid_exact_evm_token_name_mismatch',
        'invalid_exact_evm_token_version_mismatch',
        'invalid_exact_evm_eip3009_not_supported',
        'invalid_exact_evm_nonce_already_used',
        'invalid_exact_evm_insufficient_balance',
        'invalid_exact_evm_transaction_simulation_failed',
        'invalid_exact_evm_payload_undeployed_smart_wallet',
        'eip6492_factory_not_allowed',
        'smart_wallet_deployment_failed',
        'settlement_gas_exceeds_cap',
        'pay_to_not_allowed',
      ],
      'x-emitted-by': {
        invalid_x402_version: 'verify, settle',
        invalid_scheme: 'never (reserved)',
        unsupported_scheme: 'verify, settle',
        invalid_network: 'verify, settle',
        invalid_payload: 'settle (fallback only)',
        invalid_payment_requirements: 'verify, settle',
        unexpected_verify_error: 'verify',
        unexpected_settle_error: 'settle',
        invalid_transaction_state: 'never (reserved)',
        settlement_pending: 'settle',
        unsupported_payload_type: 'verify, settle',
        asset_not_deployed_contract: 'verify, settle',
        invalid_exact_evm_scheme: 'verify, settle',
        invalid_exact_evm_network_mismatch: 'verify, settle',
        invalid_exact_evm_missing_eip712_domain: 'verify, settle',
        invalid_exact_evm_recipient_mismatch: 'verify, settle',
        invalid_exact_evm_signature: 'verify, settle',
        invalid_exact_evm_payload_authorization_valid_before: 'verify, settle',
        invalid_exact_evm_payload_authorization_valid_after: 'verify, settle',
        invalid_exact_evm_authorization_value: 'never (reserved)',
        invalid_exact_evm_payload_authorization_value_mismatch: 'verify, settle',
        invalid_exact_evm_transaction_failed: 'settle',
        invalid_exact_evm_transfer_event_mismatch: 'settle',
        invalid_exact_evm_failed_to_parse_signature: 'verify, settle',
        invalid_exact_evm_token_name_mismatch: 'verify, settle',
        invalid_exact_evm_token_version_mismatch: 'verify, settle',
        invalid_exact_evm_eip3009_not_supported: 'verify, settle',
        invalid_exact_evm_nonce_already_used: 'verify, settle',
        invalid_exact_evm_insufficient_balance: 'verify, settle',
        invalid_exact_evm_transaction_simulation_failed: 'verify, settle',
        invalid_exact_evm_payload_undeployed_smart_wallet: 'never (reserved)',
        eip6492_factory_not_allowed: 'verify, settle',
        smart_wallet_deployment_failed: 'never (reserved)',
        settlement_gas_exceeds_cap: 'settle',
        pay_to_not_allowed: 'verify, settle',
      },
    },
  },
  securitySchemes: {
    merchantApiKey: {
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'mpk_<prefix>_<secret>',
      description:
        'A merchant API key, `mpk_` + 8 + `_` + 32 lowercase base32 characters, made with `node scripts/merchants.mjs` and shown once. Sent as `Authorization: Bearer <key>`.',
    },
    merchantApiKeyHeader: {
      type: 'apiKey',
      in: 'header',
      name: 'X-API-Key',
      description: 'The same key in `X-API-Key`, for clients that cannot set `Authorization`.',
    },
    operatorToken: {
      type: 'http',
      scheme: 'bearer',
      description:
        "The operator token (`OPERATOR_TOKEN`, at least 32 characters), for the merchant admin API under `/admin/merchants` and for bull-board, the queue dashboard at `/admin/queues` (a browser may send it as the password of HTTP Basic, any user name; bull-board's pages and its `/admin/queues/api/…` are not listed here). Without `OPERATOR_TOKEN` every `/admin` route answers 404. A merchant API key is never an operator token.",
    },
  },
};

/** The requests the facilitator sends to a merchant's webhook URL. */
export const WEBHOOKS = {
  'payment.confirmed': {
    post: {
      operationId: 'webhookPaymentConfirmed',
      summary: 'A payment was settled on chain',
      description:
        "POSTed by the facilitator's worker to the merchant's webhook URL (set with `scripts/merchants.mjs` or `PUT /merchants/me/webhook`). Outcomes are sent: `payment.confirmed`, `payment.failed`, `payment.expired` (a `payment.failed` without `txHash` was refused before anything was sent; settling the same payload again may still confirm it, which sends `payment.confirmed`), and the correction `payment.reorged`: the block that confirmed a payment left the chain (a reorg), so the payment is `submitted` again until its transaction is mined anew (another `payment.confirmed`, usually with the same `txHash`) or it fails. Answer 2xx within WEBHOOK_TIMEOUT_MS (5 s) to acknowledge; anything else (including redirects, which are not followed) is retried after 1 s, 2 s, 4 s… (±20 %, capped at WEBHOOK_RETRY_MAX_MS) until WEBHOOK_MAX_ATTEMPTS (8) attempts, with the same body and id and a fresh timestamp and signature. Deliveries are at least once and not ordered: deduplicate on `Webhook-Id`, and read `GET /payments/{id}` if you need the latest state.",
      parameters: [
        {
          name: 'Webhook-Id',
          in: 'header',
          required: true,
          schema: { type: 'string', format: 'uuid' },
          description: 'The delivery id (= body `id`), the same on every retry.',
        },
        {
          name: 'Webhook-Timestamp',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^[0-9]+$' },
          description: 'Unix seconds when this attempt was signed. Refuse values far from your clock (5 minutes) to stop replays.',
        },
        {
          name: 'Webhook-Signature',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
          description:
            "Standard Webhooks (https://www.standardwebhooks.com): `v1,` + base64 HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded part of the merchant's webhook secret `whsec_<base64>`; several space-separated signatures may be sent, one match is enough. Verify with any Standard Webhooks library, e.g. the `standardwebhooks` npm package: `new Webhook(secret).verify(rawBody, headers)` (it also checks the timestamp), or `verifyWebhookSignature` in `libs/clients/src/webhooks.ts`.",
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/WebhookEvent' },
            examples: {
              confirmed: {
                value: {
                  id: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d',
                  type: 'payment.confirmed',
                  createdAt: '2026-12-01T10:15:04.530Z',
                  data: {
                    payment: {
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
            },
          },
        },
      },
      responses: { '2XX': { description: 'Acknowledged; not sent again.' }, default: { description: 'Not acknowledged: retried later.' } },
    },
  },
  'payment.failed': {
    post: {
      operationId: 'webhookPaymentFailed',
      summary: 'A payment failed',
      description:
        "POSTed by the facilitator's worker to the merchant's webhook URL (set with `scripts/merchants.mjs` or `PUT /merchants/me/webhook`). Outcomes are sent: `payment.confirmed`, `payment.failed`, `payment.expired` (a `payment.failed` without `txHash` was refused before anything was sent; settling the same payload again may still confirm it, which sends `payment.confirmed`), and the correction `payment.reorged`: the block that confirmed a payment left the chain (a reorg), so the payment is `submitted` again until its transaction is mined anew (another `payment.confirmed`, usually with the same `txHash`) or it fails. Answer 2xx within WEBHOOK_TIMEOUT_MS (5 s) to acknowledge; anything else (including redirects, which are not followed) is retried after 1 s, 2 s, 4 s… (±20 %, capped at WEBHOOK_RETRY_MAX_MS) until WEBHOOK_MAX_ATTEMPTS (8) attempts, with the same body and id and a fresh timestamp and signature. Deliveries are at least once and not ordered: deduplicate on `Webhook-Id`, and read `GET /payments/{id}` if you need the latest state.",
      parameters: [
        {
          name: 'Webhook-Id',
          in: 'header',
          required: true,
          schema: { type: 'string', format: 'uuid' },
          description: 'The delivery id (= body `id`), the same on every retry.',
        },
        {
          name: 'Webhook-Timestamp',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^[0-9]+$' },
          description: 'Unix seconds when this attempt was signed. Refuse values far from your clock (5 minutes) to stop replays.',
        },
        {
          name: 'Webhook-Signature',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
          description:
            "Standard Webhooks (https://www.standardwebhooks.com): `v1,` + base64 HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded part of the merchant's webhook secret `whsec_<base64>`; several space-separated signatures may be sent, one match is enough. Verify with any Standard Webhooks library, e.g. the `standardwebhooks` npm package: `new Webhook(secret).verify(rawBody, headers)` (it also checks the timestamp), or `verifyWebhookSignature` in `libs/clients/src/webhooks.ts`.",
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/WebhookEvent' },
            examples: {
              failed: {
                value: {
                  id: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d',
                  type: 'payment.failed',
                  createdAt: '2026-12-01T10:15:04.530Z',
                  data: {
                    payment: {
                      id: '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21',
                      state: 'failed',
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
                      errorReason: 'invalid_exact_evm_transaction_failed',
                      errorMessage: 'the settlement transaction reverted',
                      createdAt: '2026-12-01T10:15:02.114Z',
                      updatedAt: '2026-12-01T10:15:04.530Z',
                      settledAt: null,
                    },
                  },
                },
              },
            },
          },
        },
      },
      responses: { '2XX': { description: 'Acknowledged; not sent again.' }, default: { description: 'Not acknowledged: retried later.' } },
    },
  },
  'payment.expired': {
    post: {
      operationId: 'webhookPaymentExpired',
      summary: 'A payment expired before it could be settled',
      description:
        "POSTed by the facilitator's worker to the merchant's webhook URL (set with `scripts/merchants.mjs` or `PUT /merchants/me/webhook`). Outcomes are sent: `payment.confirmed`, `payment.failed`, `payment.expired` (a `payment.failed` without `txHash` was refused before anything was sent; settling the same payload again may still confirm it, which sends `payment.confirmed`), and the correction `payment.reorged`: the block that confirmed a payment left the chain (a reorg), so the payment is `submitted` again until its transaction is mined anew (another `payment.confirmed`, usually with the same `txHash`) or it fails. Answer 2xx within WEBHOOK_TIMEOUT_MS (5 s) to acknowledge; anything else (including redirects, which are not followed) is retried after 1 s, 2 s, 4 s… (±20 %, capped at WEBHOOK_RETRY_MAX_MS) until WEBHOOK_MAX_ATTEMPTS (8) attempts, with the same body and id and a fresh timestamp and signature. Deliveries are at least once and not ordered: deduplicate on `Webhook-Id`, and read `GET /payments/{id}` if you need the latest state.",
      parameters: [
        {
          name: 'Webhook-Id',
          in: 'header',
          required: true,
          schema: { type: 'string', format: 'uuid' },
          description: 'The delivery id (= body `id`), the same on every retry.',
        },
        {
          name: 'Webhook-Timestamp',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^[0-9]+$' },
          description: 'Unix seconds when this attempt was signed. Refuse values far from your clock (5 minutes) to stop replays.',
        },
        {
          name: 'Webhook-Signature',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
          description:
            "Standard Webhooks (https://www.standardwebhooks.com): `v1,` + base64 HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded part of the merchant's webhook secret `whsec_<base64>`; several space-separated signatures may be sent, one match is enough. Verify with any Standard Webhooks library, e.g. the `standardwebhooks` npm package: `new Webhook(secret).verify(rawBody, headers)` (it also checks the timestamp), or `verifyWebhookSignature` in `libs/clients/src/webhooks.ts`.",
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/WebhookEvent' },
            examples: {
              expired: {
                value: {
                  id: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d',
                  type: 'payment.expired',
                  createdAt: '2026-12-01T10:15:04.530Z',
                  data: {
                    payment: {
                      id: '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21',
                      state: 'expired',
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
                      txHash: null,
                      errorReason: 'invalid_exact_evm_payload_authorization_valid_before',
                      errorMessage: 'the authorization expired before the settlement could be sent',
                      createdAt: '2026-12-01T10:15:02.114Z',
                      updatedAt: '2026-12-01T10:15:04.530Z',
                      settledAt: null,
                    },
                  },
                },
              },
            },
          },
        },
      },
      responses: { '2XX': { description: 'Acknowledged; not sent again.' }, default: { description: 'Not acknowledged: retried later.' } },
    },
  },
  'payment.reorged': {
    post: {
      operationId: 'webhookPaymentReorged',
      summary: 'A confirmed payment was taken back by a reorg and is being judged again',
      description:
        "POSTed by the facilitator's worker to the merchant's webhook URL (set with `scripts/merchants.mjs` or `PUT /merchants/me/webhook`). Outcomes are sent: `payment.confirmed`, `payment.failed`, `payment.expired` (a `payment.failed` without `txHash` was refused before anything was sent; settling the same payload again may still confirm it, which sends `payment.confirmed`), and the correction `payment.reorged`: the block that confirmed a payment left the chain (a reorg), so the payment is `submitted` again until its transaction is mined anew (another `payment.confirmed`, usually with the same `txHash`) or it fails. Answer 2xx within WEBHOOK_TIMEOUT_MS (5 s) to acknowledge; anything else (including redirects, which are not followed) is retried after 1 s, 2 s, 4 s… (±20 %, capped at WEBHOOK_RETRY_MAX_MS) until WEBHOOK_MAX_ATTEMPTS (8) attempts, with the same body and id and a fresh timestamp and signature. Deliveries are at least once and not ordered: deduplicate on `Webhook-Id`, and read `GET /payments/{id}` if you need the latest state.",
      parameters: [
        {
          name: 'Webhook-Id',
          in: 'header',
          required: true,
          schema: { type: 'string', format: 'uuid' },
          description: 'The delivery id (= body `id`), the same on every retry.',
        },
        {
          name: 'Webhook-Timestamp',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^[0-9]+$' },
          description: 'Unix seconds when this attempt was signed. Refuse values far from your clock (5 minutes) to stop replays.',
        },
        {
          name: 'Webhook-Signature',
          in: 'header',
          required: true,
          schema: { type: 'string', pattern: '^v1,[A-Za-z0-9+/]{43}=( v1,[A-Za-z0-9+/]{43}=)*$' },
          description:
            "Standard Webhooks (https://www.standardwebhooks.com): `v1,` + base64 HMAC-SHA256 over `<webhook-id>.<webhook-timestamp>.<raw body>`, keyed with the base64-decoded part of the merchant's webhook secret `whsec_<base64>`; several space-separated signatures may be sent, one match is enough. Verify with any Standard Webhooks library, e.g. the `standardwebhooks` npm package: `new Webhook(secret).verify(rawBody, headers)` (it also checks the timestamp), or `verifyWebhookSignature` in `libs/clients/src/webhooks.ts`.",
        },
      ],
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/WebhookEvent' },
            examples: {
              reorged: {
                value: {
                  id: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d',
                  type: 'payment.reorged',
                  createdAt: '2026-12-01T10:15:04.530Z',
                  data: {
                    payment: {
                      id: '5b1f6a52-2f0e-4c7e-9a43-3f6f7d0b9e21',
                      state: 'submitted',
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
                      txHash: '0x5f1c3b0e9a8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a19081',
                      errorReason: null,
                      errorMessage: null,
                      createdAt: '2026-12-01T10:15:02.114Z',
                      updatedAt: '2026-12-01T10:15:04.530Z',
                      settledAt: null,
                    },
                  },
                },
              },
            },
          },
        },
      },
      responses: { '2XX': { description: 'Acknowledged; not sent again.' }, default: { description: 'Not acknowledged: retried later.' } },
    },
  },
};
