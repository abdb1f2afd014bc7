import { MERCHANT_NOTICE_TYPES } from '@mp/clients';
import { HEALTH_SCHEMAS, MERCHANT_API_KEY_RESPONSES, MERCHANT_API_KEY_SCHEMES, RECONCILIATION_SCHEMAS, WEBHOOK_DELIVERY } from '@mp/platform';

/** A statement's opening and closing balances: the same shape. */
const POSTED_BALANCE = {
  type: 'object',
  required: ['debitsPosted', 'creditsPosted', 'balance', 'balanceDecimal'],
  properties: {
    debitsPosted: { type: 'string', description: 'atomic units' },
    creditsPosted: { type: 'string', description: 'atomic units' },
    balance: { type: 'string', description: "posted balance, atomic units (negative when against the account's normal balance)" },
    balanceDecimal: { type: ['string', 'null'], description: '`balance` in decimals of the asset, e.g. "12.345678"; null when the asset is not known' },
  },
};

/**
 * Component schemas, responses and parameters of this service's OpenAPI document that no DTO class or zod codec
 * makes: the shapes of its answers and their shared problem responses, referenced by the @ApiDoc of its routes.
 */
export const COMPONENTS = {
  responses: MERCHANT_API_KEY_RESPONSES,
  schemas: {
    ...HEALTH_SCHEMAS,
    ...RECONCILIATION_SCHEMAS,
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
          required: ['missing_in_ledger', 'missing_externally', 'amount_mismatch', 'duplicate', 'over_refund'],
          additionalProperties: { type: 'integer' },
          description: "Breaks per kind, the balance checks' kinds (channel_…, prepaid_…) included.",
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
        opening: POSTED_BALANCE,
        closing: POSTED_BALANCE,
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
  securitySchemes: MERCHANT_API_KEY_SCHEMES,
};

/** What each subscription notice says happened. */
const SUBSCRIPTION_NOTICE_SUMMARIES: Record<string, string> = {
  'subscription.activated': "A subscription's first period was paid, or its trial started",
  'subscription.renewed': 'A period of a subscription was paid',
  'subscription.past_due': 'A renewal failed: the subscription is past_due and will be retried inside the period',
  'subscription.payment_failed': 'A retry of a failed renewal failed',
  'subscription.cancel_scheduled': 'A cancel at period end was recorded (by the merchant or the payer)',
  'subscription.canceled': 'A subscription ended: canceled now, at the end of its paid period, by dunning, or at its end',
  'subscription.unpaid': 'Dunning ran out and the plan keeps the subscription as unpaid',
  'subscription.revoked': 'The payer withdrew the grant on the rail: canceled at the end of the paid period',
  'subscription.incomplete_expired': "A subscription's first payment never came",
  'subscription.refunded': "The refund of an immediate cancel's unused part was executed (cause: refundId, amount, reference)",
  'subscription.refund_failed': "The refund of an immediate cancel's unused part failed on its rail: nothing moved, settle it by hand",
};

/** The request the ledger sends to a merchant's webhook URL. */
export const WEBHOOKS = {
  'reconciliation.breaks_found': {
    post: {
      operationId: 'webhookReconciliationBreaksFound',
      summary: 'A reconciliation run found breaks no earlier run of the merchant reported',
      description:
        'The ledger publishes a notice on the `merchant-notices` queue when a run completes with new breaks (at most once per run); the facilitator delivers it like the payment webhooks: same headers, signature, retries and at-least-once semantics, deduplicated per (merchant, notice). `data.newBreaks` lists at most 100 of the new breaks (`newBreakCount` counts them all); `reportPath` is the HTML report on the ledger with a signed token (`RECON_REPORT_LINK_TTL_SECONDS`), which opens without an API key.',
      parameters: WEBHOOK_DELIVERY.parameters,
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
      responses: WEBHOOK_DELIVERY.responses,
    },
  },
  ...Object.fromEntries(
    MERCHANT_NOTICE_TYPES.filter((type) => type.startsWith('subscription.')).map((type) => [
      type,
      {
        post: {
          operationId: `webhook${type
            .split(/[._]/)
            .map((word) => word[0].toUpperCase() + word.slice(1))
            .join('')}`,
          summary: SUBSCRIPTION_NOTICE_SUMMARIES[type],
          description:
            'One notice per recorded transition of a subscription (issue 13), published by the ledger on `merchant-notices` as `subscription-<subscriptionId>-<version>` and delivered by the facilitator like the payment webhooks (same headers, signature, retries), at most once per (merchant, notice).',
          parameters: WEBHOOK_DELIVERY.parameters,
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: {
                  type: 'object',
                  required: ['id', 'type', 'createdAt', 'data'],
                  properties: {
                    id: { type: 'string', format: 'uuid', description: 'the delivery id, also `Webhook-Id`' },
                    type: { const: type },
                    createdAt: { type: 'string', format: 'date-time', description: "the transition's time on the ledger's clock" },
                    data: {
                      type: 'object',
                      required: ['subscriptionId', 'event', 'fromState', 'state', 'version', 'at', 'cause'],
                      properties: {
                        subscriptionId: { type: 'string' },
                        event: { type: 'string', description: '@mp/billing SubscriptionEvent, e.g. renewal_paid, dunning_exhausted' },
                        fromState: { type: 'string' },
                        state: { type: 'string', description: 'the state after the transition' },
                        version: { type: 'integer', minimum: 1 },
                        at: { type: 'string', format: 'date-time' },
                        cause: { type: 'object', description: 'why: the period, attempt, payment, reason or actor behind it' },
                      },
                    },
                  },
                },
              },
            },
          },
          responses: WEBHOOK_DELIVERY.responses,
        },
      },
    ]),
  ),
};
