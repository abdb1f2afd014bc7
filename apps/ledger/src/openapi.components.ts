import { problemBody, problemResponse } from '@mp/platform';
/**
 * Component schemas, responses and parameters of this service's OpenAPI document that no DTO class or zod codec
 * makes: the shapes of its answers and their shared problem responses, referenced by the @ApiDoc of its routes.
 */
export const COMPONENTS = {
  responses: {
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
  },
  schemas: {
    HealthResponse: { type: 'object', required: ['status'], additionalProperties: false, properties: { status: { const: 'ok' } } },
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
    ReconciliationRequest: {
      type: 'object',
      additionalProperties: false,
      required: ['from', 'to'],
      properties: {
        merchantId: { type: 'string', format: 'uuid', description: "Optional: the merchant meant; must be the API key's (a 400 otherwise)." },
        from: { type: 'string', format: 'date-time', description: 'Start of the period (inclusive), ISO 8601 with a time zone.' },
        to: {
          type: 'string',
          format: 'date-time',
          description:
            'End of the period (exclusive); after `from`, at most `RECON_MAX_PERIOD_DAYS` later. It may be in the future: what has not happened yet is simply not there.',
        },
        sources: {
          type: 'array',
          minItems: 1,
          uniqueItems: true,
          items: { type: 'string', enum: ['chain', 'stripe'] },
          description:
            'Optional: what to reconcile the ledger against; default every source configured on the ledger (`stripe` needs STRIPE_SECRET_KEY, a 400 otherwise). With the merchant and the period, what makes two requests the same.',
        },
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
    ReconciliationRun: {
      type: 'object',
      required: [
        'id',
        'merchantId',
        'trigger',
        'status',
        'period',
        'sources',
        'progress',
        'summary',
        'totals',
        'error',
        'createdAt',
        'startedAt',
        'finishedAt',
        'links',
      ],
      properties: {
        id: { type: 'string', format: 'uuid' },
        merchantId: { type: 'string', format: 'uuid' },
        trigger: { type: 'string', enum: ['api', 'schedule'] },
        status: {
          type: 'string',
          enum: ['queued', 'running', 'completed', 'failed'],
          description:
            'queued (also while a failed attempt waits for its retry, with `error` set), running, completed (summary, totals, rows and reports are there), failed (after the last attempt; `error` says why).',
        },
        period: {
          type: 'object',
          required: ['from', 'to'],
          properties: { from: { type: 'string', format: 'date-time' }, to: { type: 'string', format: 'date-time' } },
        },
        sources: { type: 'array', items: { type: 'string', enum: ['chain', 'stripe'] }, description: 'What the run reconciles the ledger against, sorted.' },
        progress: {
          type: ['object', 'null'],
          required: ['phase', 'done', 'total', 'percent'],
          properties: {
            phase: { type: 'string', enum: ['ledger', 'chain', 'stripe', 'matching', 'done'] },
            done: { type: 'integer', description: 'chain: blocks scanned; stripe: objects read' },
            total: { type: 'integer', description: 'chain: blocks to scan; 0 when not known' },
            percent: { type: 'integer', minimum: 0, maximum: 100 },
          },
        },
        summary: { oneOf: [{ $ref: '#/components/schemas/ReconciliationSummary' }, { type: 'null' }] },
        totals: { type: ['array', 'null'], items: { $ref: '#/components/schemas/ReconciliationTotals' } },
        error: { type: ['string', 'null'] },
        createdAt: { type: 'string', format: 'date-time' },
        startedAt: { type: ['string', 'null'], format: 'date-time' },
        finishedAt: { type: ['string', 'null'], format: 'date-time' },
        links: {
          type: 'object',
          required: ['self', 'rows', 'csv', 'report'],
          properties: {
            self: { type: 'string' },
            rows: { type: 'string' },
            csv: { type: 'string' },
            report: {
              type: 'string',
              description:
                "The HTML report with a signed `token` (`<generation>.<expiry>.<signature>`): opens in a browser without an API key until it expires (RECON_REPORT_LINK_TTL_SECONDS after it was issued) or the run's links are revoked. Read with a token, a run answers that same token here (reading never extends a link); read with the API key, a newly issued one.",
            },
          },
        },
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
    ReconciliationTally: {
      type: 'object',
      required: ['count', 'net'],
      properties: {
        count: { type: 'integer' },
        net: { type: 'string', pattern: '^-?(0|[1-9][0-9]*)$', description: 'Payments in minus refunds, fees and gas out.' },
      },
    },
    ReconciliationTotals: {
      type: 'object',
      required: ['asset', 'source', 'ledger', 'external', 'matched', 'pending', 'breaks', 'difference'],
      properties: {
        asset: { type: 'string', examples: ['eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913', 'stripe/usd'] },
        source: { type: 'string', enum: ['chain', 'stripe'] },
        ledger: { $ref: '#/components/schemas/ReconciliationTally' },
        external: { $ref: '#/components/schemas/ReconciliationTally' },
        matched: { $ref: '#/components/schemas/ReconciliationTally' },
        pending: { type: 'integer' },
        breaks: {
          type: 'object',
          required: ['missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate'],
          additionalProperties: { type: 'integer' },
        },
        difference: { type: 'string', pattern: '^-?(0|[1-9][0-9]*)$', description: 'external.net − ledger.net' },
      },
    },
    Statement: {
      type: 'object',
      description:
        'Amounts are atomic units as decimal strings; beside each, `…Decimal` is the same in decimals of the asset (exact, no rounding) and `assetSymbol`/`assetDecimals` say which: tokens as their contract on a reconciled chain (`RECON_CHAIN_RPC_URLS` or the chain manifest) describes them, Stripe currencies (`stripe/<currency>`) by their minor unit (ISO 4217, as Stripe counts it). All null when the asset is not known (e.g. a network without an RPC URL).',
      required: ['account', 'assetSymbol', 'assetDecimals', 'from', 'to', 'opening', 'closing', 'entries', 'nextCursor'],
      properties: {
        account: { type: 'object', description: 'The account, as `GET /accounts/{id}` shows it.' },
        assetSymbol: { type: ['string', 'null'], examples: ['USDC'] },
        assetDecimals: { type: ['integer', 'null'], minimum: 0, examples: [6] },
        from: { type: 'string', format: 'date-time' },
        to: { type: 'string', format: 'date-time' },
        opening: {
          type: 'object',
          required: ['debitsPosted', 'creditsPosted', 'balance', 'balanceDecimal'],
          properties: {
            debitsPosted: { type: 'string', description: 'atomic units' },
            creditsPosted: { type: 'string', description: 'atomic units' },
            balance: { type: 'string', description: "posted balance, atomic units (negative when against the account's normal balance)" },
            balanceDecimal: { type: ['string', 'null'], description: '`balance` in decimals of the asset, e.g. "12.345678"; null when the asset is not known' },
          },
        },
        closing: {
          type: 'object',
          required: ['debitsPosted', 'creditsPosted', 'balance', 'balanceDecimal'],
          properties: {
            debitsPosted: { type: 'string', description: 'atomic units' },
            creditsPosted: { type: 'string', description: 'atomic units' },
            balance: { type: 'string', description: "posted balance, atomic units (negative when against the account's normal balance)" },
            balanceDecimal: { type: ['string', 'null'], description: '`balance` in decimals of the asset, e.g. "12.345678"; null when the asset is not known' },
          },
        },
        entries: {
          type: 'array',
          items: {
            type: 'object',
            required: [
              'transferId',
              'timestamp',
              'side',
              'amount',
              'amountDecimal',
              'counterpartyAccountId',
              'code',
              'pendingId',
              'reference',
              'balance',
              'balanceDecimal',
            ],
            properties: {
              transferId: { type: 'string' },
              timestamp: { type: 'string', format: 'date-time' },
              side: { type: 'string', enum: ['debit', 'credit'] },
              amount: { type: 'string', description: 'atomic units' },
              amountDecimal: { type: ['string', 'null'], description: '`amount` in decimals of the asset; null when not known' },
              counterpartyAccountId: { type: 'string' },
              code: { type: 'integer' },
              pendingId: { type: ['string', 'null'] },
              reference: { type: ['string', 'null'] },
              balance: { type: 'string', description: "the account's posted balance right after this posting, atomic units" },
              balanceDecimal: { type: ['string', 'null'], description: '`balance` in decimals of the asset; null when not known' },
            },
          },
        },
        nextCursor: { type: ['string', 'null'] },
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
  },
};

/** The request the ledger sends to a merchant's webhook URL. */
export const WEBHOOKS = {
  'reconciliation.breaks_found': {
    post: {
      operationId: 'webhookReconciliationBreaksFound',
      summary: 'A reconciliation run found breaks no earlier run of the merchant reported',
      description:
        'The ledger publishes a notice on the `merchant-notices` queue when a run completes with new breaks (at most once per run); the facilitator delivers it like the payment webhooks: same headers, signature, retries and at-least-once semantics, deduplicated per (merchant, notice). `data.newBreaks` lists at most 100 of the new breaks (`newBreakCount` counts them all); `reportPath` is the HTML report on the ledger with a signed token (`RECON_REPORT_LINK_TTL_SECONDS`), which opens without an API key.',
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
            schema: {
              type: 'object',
              required: ['id', 'type', 'createdAt', 'data'],
              additionalProperties: false,
              properties: {
                id: { type: 'string', format: 'uuid', description: 'the delivery id, also `Webhook-Id`' },
                type: { const: 'reconciliation.breaks_found' },
                createdAt: { type: 'string', format: 'date-time' },
                data: {
                  type: 'object',
                  required: ['runId', 'merchantId', 'summary', 'newBreakCount', 'newBreaks', 'reportPath'],
                  properties: {
                    runId: { type: 'string', format: 'uuid' },
                    merchantId: { type: 'string', format: 'uuid' },
                    summary: { $ref: '#/components/schemas/ReconciliationSummary' },
                    newBreakCount: { type: 'integer', minimum: 1 },
                    newBreaks: { type: 'array', maxItems: 100, items: { $ref: '#/components/schemas/ReconciliationRow' } },
                    reportPath: { type: 'string', description: 'path on the ledger, e.g. `/reconciliations/{id}/report?token=…`' },
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
