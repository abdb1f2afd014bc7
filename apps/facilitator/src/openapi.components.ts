import {
  HEALTH_SCHEMAS,
  MERCHANT_API_KEY_RESPONSES,
  MERCHANT_API_KEY_SCHEMES,
  RECONCILIATION_SCHEMAS,
  WEBHOOK_DELIVERY,
  X402_SCHEMAS,
  problemBody,
  problemResponse,
} from '@mp/platform';
import { PAYMENT_EXAMPLE } from './openapi.shared';

/**
 * Component schemas, responses and parameters of this service's OpenAPI document that no DTO class or zod codec
 * makes: the shapes of its answers and their shared problem responses, referenced by the @ApiDoc of its routes.
 */
export const COMPONENTS = {
  responses: {
    ...MERCHANT_API_KEY_RESPONSES,
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
        internal: { summary: 'Unexpected error', value: problemBody('internal_error', 'an unexpected error occurred; it has been logged', '/supported') },
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
        tooLarge: { summary: 'Declared length over 64 KiB', value: problemBody('payload_too_large', 'the body is 71084 bytes; the limit is 65536', '/settle') },
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
    ...HEALTH_SCHEMAS,
    ...RECONCILIATION_SCHEMAS,
    ...X402_SCHEMAS,
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
    MppChallengeIssuance: {
      type: 'object',
      required: ['issuerKey', 'realm', 'offers', 'challengeTtlSeconds'],
      additionalProperties: false,
      properties: {
        issuerKey: {
          type: 'string',
          description: "The key to bind the merchant's own challenges with (base64url, 43 characters): derived from its secret, rotated with it.",
        },
        realm: { type: 'string' },
        offers: {
          type: 'array',
          items: { $ref: '#/components/schemas/MppOffer' },
          description: "The route's offers, made canonical: what its challenges carry.",
        },
        challengeTtlSeconds: { type: 'integer', description: 'Seconds a challenge lives when the terms name no `expiresIn` (MPP_CHALLENGE_TTL_SECONDS).' },
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
      // `enum` and `x-problem-status` come from @mp/mpp PROBLEMS (see openapi.ts): the types the code answers
      description:
        "Problem types of the Payment scheme the MPP endpoints answer (with `challenges`, fresh ones for the same terms, and one `WWW-Authenticate` per challenge):\n\n| type | status | when |\n|---|---|---|\n| `payment-required` | 402 | No credential (merchants send it themselves with the first 402). |\n| `payment-insufficient` | 402 | The authorization pays less than the challenge asks; the Shared Payment Token allows less (verify only). |\n| `verification-failed` | 402 | Bad signature, wrong recipient or exact amount, nonce not bound to the challenge, payer lacks funds or the simulation fails; Stripe declined the token or the payment. |\n| `malformed-credential` | 402 | Not base64url JSON, or not a credential. |\n| `invalid-challenge` | 402 | Not issued by us for this merchant (HMAC), issued for other terms (cross-route, other body digest or opaque), or already used. |\n| `payment-expired` | 402 | The challenge (or the authorization) has expired. |\n| `invalid-payload` | 402 | The method payload is malformed (missing or wrong members). |\n| `payment-action-required` | 402 | The PaymentIntent requires customer action (3-D Secure). |\n| `method-unsupported` | 400 | The credential's method or intent is not one of the route's offers. |\n| `bad-request` | 400 | More than one Payment credential. |\n| `internal-payment-error` | 500 | The outcome is not known yet: the chain RPC or Stripe is unreachable, or settlement is still pending. The same credential may be sent again (retried idempotently); nothing is charged twice. |\n| `session/invalid-signature` | 402 | Intent `session`: the voucher is not a recoverable 65-byte low-s EIP-712 signature. |\n| `session/signer-mismatch` | 402 | Intent `session`: the voucher is not signed by the channel's signer (authorizedSigner, or the payer). |\n| `session/amount-exceeds-deposit` | 402 | Intent `session`: the voucher authorizes more than the channel's deposit (top up first). |\n| `session/delta-too-small` | 402 | Intent `session`: the voucher raises the accepted amount by less than `minVoucherDelta`. |\n| `session/insufficient-balance` | 402 | Intent `session`: the payer's token pull failed, the channel holds less than the price, or (POST /mpp/sessions/charges) the accepted vouchers do not cover the charge. |\n| `session/challenge-not-found` | 402 | Intent `session`: the challenge the credential echoes is unknown. |\n| `session/channel-not-found` | 410 | Intent `session`: no such channel on the escrow, or not one of this merchant's. |\n| `session/channel-finalized` | 410 | Intent `session`: the channel is closed, being closed, or the payer requested close. |\n| `session/transaction-reverted` | 409 | Intent `session`: the open, top-up or close transaction reverted. |",
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
    Refund: {
      type: 'object',
      description:
        "A refund (`POST /refunds`, `GET /refunds/{id}`, `GET /payments/{id}/refunds`): the x402 refund extension's RefundResponse (`status`, `amount`, `refundTxHash`, `denialReason`) and what names it here.",
      required: [
        'id',
        'status',
        'amount',
        'paymentId',
        'rail',
        'network',
        'asset',
        'reason',
        'reasonDetail',
        'idempotencyKey',
        'refundTo',
        'reference',
        'failureReason',
        'failureMessage',
        'createdAt',
        'finishedAt',
      ],
      additionalProperties: false,
      properties: {
        id: { type: 'string', format: 'uuid' },
        status: {
          type: 'string',
          enum: ['executed', 'pending', 'denied', 'failed'],
          description:
            '`executed`: the money moved (mined transfer, or Stripe `succeeded`); `pending`: accepted, not final yet (poll `GET /refunds/{id}`); `denied`: not accepted (`denialReason`), nothing moved; `failed` (ours, beyond the extension): was pending and did not happen (reverted, or Stripe failed it), nothing moved.',
        },
        amount: { allOf: [{ $ref: '#/components/schemas/AtomicAmount' }], description: 'Refunded, or requested when denied or failed.' },
        refundTxHash: { type: 'string', description: 'EVM refunds, when executed: the transfer transaction.' },
        denialReason: {
          type: 'string',
          enum: [
            'amount_exceeds_settled',
            'already_refunded',
            'payment_not_settled',
            'refund_wallet_not_configured',
            'refund_wallet_underfunded',
            'rail_not_configured',
          ],
          description: 'When denied.',
        },
        paymentId: { type: 'string', format: 'uuid', description: 'The refunded payment.' },
        rail: { type: 'string', enum: ['evm', 'stripe'] },
        network: { anyOf: [{ $ref: '#/components/schemas/Caip2' }, { const: 'stripe' }] },
        asset: { type: 'string', description: 'The token contract (checksummed); on Stripe the currency.' },
        reason: { type: 'string', enum: ['service_not_delivered', 'service_defective', 'duplicate_payment', 'overcharge', 'customer_request', 'other'] },
        reasonDetail: { type: ['string', 'null'] },
        idempotencyKey: { type: 'string' },
        refundTo: { type: ['string', 'null'], description: 'EVM: the address refunded (checksummed); Stripe: null (the payment method that paid).' },
        reference: { type: ['string', 'null'], description: 'The transfer transaction once mined (EVM), or the Stripe refund `re_…`.' },
        failureReason: {
          type: ['string', 'null'],
          description: "When failed: `transaction_reverted`, `transfer_mismatch`, `transfer_would_revert`, or Stripe's `failure_reason`.",
        },
        failureMessage: { type: ['string', 'null'], description: 'Human-readable detail; not stable.' },
        createdAt: { type: 'string', format: 'date-time' },
        finishedAt: { type: ['string', 'null'], format: 'date-time', description: 'When it became executed, denied or failed.' },
      },
    },
    RefundList: {
      type: 'object',
      required: ['data'],
      additionalProperties: false,
      properties: { data: { type: 'array', items: { $ref: '#/components/schemas/Refund' }, description: 'Oldest first, denied and failed ones included.' } },
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
        scheme: { type: 'string', enum: ['exact', 'upto'] },
        network: { type: 'string', description: 'CAIP-2 for v2; a v1 name for v1.' },
        extra: {
          type: 'object',
          additionalProperties: true,
          description:
            "Not set for exact EVM. For `upto` (v2 only): `{facilitatorAddress}`, the signer a payer must name as `witness.facilitator` (always the network's first signer; verification accepts any of them).",
        },
      },
    },
    SupportedResponse: {
      type: 'object',
      description:
        "For `exact`: one v2 kind per configured network, then one v1 kind per v1 name of that network (the networks file's `v1Names` plus the built-in names of `DEFAULT_V1_NETWORKS` that map to it). Then for `upto`: one v2 kind per network that has a signer.",
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
  },
  securitySchemes: {
    ...MERCHANT_API_KEY_SCHEMES,
    operatorToken: {
      type: 'http',
      scheme: 'bearer',
      description:
        "The operator token (`OPERATOR_TOKEN`, at least 32 characters), for the merchant admin API under `/admin/merchants` and for bull-board, the queue dashboard at `/admin/queues` (a browser may send it as the password of HTTP Basic, any user name; bull-board's pages and its `/admin/queues/api/…` are not listed here). Without `OPERATOR_TOKEN` every `/admin` route answers 404. A merchant API key is never an operator token.",
    },
  },
};

/** A payment webhook: the event's type, and the payment as the event carries it. */
function paymentWebhook(type: string, operationId: string, summary: string, payment: object) {
  return {
    post: {
      operationId,
      summary,
      description:
        "POSTed by the facilitator's worker to the merchant's webhook URL (set with `scripts/merchants.mjs` or `PUT /merchants/me/webhook`). Outcomes are sent: `payment.confirmed`, `payment.failed`, `payment.expired` (a `payment.failed` without `txHash` was refused before anything was sent; settling the same payload again may still confirm it, which sends `payment.confirmed`), and the correction `payment.reorged`: the block that confirmed a payment left the chain (a reorg), so the payment is `submitted` again until its transaction is mined anew (another `payment.confirmed`, usually with the same `txHash`) or it fails. Answer 2xx within WEBHOOK_TIMEOUT_MS (5 s) to acknowledge; anything else (including redirects, which are not followed) is retried after 1 s, 2 s, 4 s… (±20 %, capped at WEBHOOK_RETRY_MAX_MS) until WEBHOOK_MAX_ATTEMPTS (8) attempts, with the same body and id and a fresh timestamp and signature. Deliveries are at least once and not ordered: deduplicate on `Webhook-Id`, and read `GET /payments/{id}` if you need the latest state.",
      parameters: WEBHOOK_DELIVERY.parameters,
      requestBody: {
        required: true,
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/WebhookEvent' },
            examples: {
              [type.replace('payment.', '')]: {
                value: { id: '0b6f0b43-6a55-4a47-9a3c-0d7c6f0e9b1d', type, createdAt: '2026-12-01T10:15:04.530Z', data: { payment } },
              },
            },
          },
        },
      },
      responses: WEBHOOK_DELIVERY.responses,
    },
  };
}

/** The requests the facilitator sends to a merchant's webhook URL. */
export const WEBHOOKS = {
  'payment.confirmed': paymentWebhook('payment.confirmed', 'webhookPaymentConfirmed', 'A payment was settled on chain', PAYMENT_EXAMPLE),
  'payment.failed': paymentWebhook('payment.failed', 'webhookPaymentFailed', 'A payment failed', {
    ...PAYMENT_EXAMPLE,
    state: 'failed',
    errorReason: 'invalid_exact_evm_transaction_failed',
    errorMessage: 'the settlement transaction reverted',
    settledAt: null,
  }),
  'payment.expired': paymentWebhook('payment.expired', 'webhookPaymentExpired', 'A payment expired before it could be settled', {
    ...PAYMENT_EXAMPLE,
    state: 'expired',
    txHash: null,
    errorReason: 'invalid_exact_evm_payload_authorization_valid_before',
    errorMessage: 'the authorization expired before the settlement could be sent',
    settledAt: null,
  }),
  'payment.reorged': paymentWebhook('payment.reorged', 'webhookPaymentReorged', 'A confirmed payment was taken back by a reorg and is being judged again', {
    ...PAYMENT_EXAMPLE,
    state: 'submitted',
    txHash: '0x5f1c3b0e9a8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a291807f6e5d4c3b2a19081',
    settledAt: null,
  }),
};
