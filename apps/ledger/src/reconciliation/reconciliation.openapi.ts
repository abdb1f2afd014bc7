import { ROW_KINDS } from '@mp/reconciliation';
import { MERCHANT_API_KEY_SECURITY, NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, uuidPathParameter, type OperationDoc } from '@mp/platform';
import { KEY_OR_REPORT_TOKEN, LEDGER_ERRORS, REPORT_TOKEN_PARAMETER, RUN_ID_PARAMETER, RUN_READ_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about ReconciliationController's routes (see @ApiDoc). */
export const RECONCILIATION_DOCS = {
  start: {
    operationId: 'startReconciliation',
    summary: "Reconcile the calling merchant's ledger against the chain and Stripe for a period",
    description:
      "Creates a run and queues it (BullMQ queue `reconciliation`); a worker compares the ledger's entries with the ERC-20 Transfer logs of the accepted assets to the merchant's addresses, the transactions of its booked refunds and the other transfers out of their refund wallets, and with Stripe's PaymentIntents, refunds, fees and paid subscription invoices of the period, and stores the report. Follow it with `GET /reconciliations/{id}`. Scheduled runs (`RECON_SCHEDULE`) are made the same way. One run at a time per merchant, held by PostgreSQL: asking again for the run in flight (same period and sources) answers that run (202, its id; its job is queued again if it was lost), asking for another while one is queued or running is a 409 `reconciliation_in_progress` naming it. A completed period may be reconciled again.",
    security: MERCHANT_API_KEY_SECURITY,
    requestBody: {
      required: true,
      content: {
        'application/json': {
          examples: { oneDay: { summary: 'One UTC day', value: { from: '2026-11-30T00:00:00Z', to: '2026-12-01T00:00:00Z' } } },
        },
      },
    },
    responses: {
      '202': jsonResponse(
        'Queued.',
        { $ref: '#/components/schemas/ReconciliationRun' },
        {
          headers: { Location: { schema: { type: 'string' }, description: '`/reconciliations/{id}`' }, ...NO_STORE_HEADERS },
          examples: {
            queued: {
              summary: 'A queued run',
              value: {
                id: '0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d',
                merchantId: '6f1c1c5e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
                trigger: 'api',
                status: 'queued',
                period: { from: '2026-11-30T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z' },
                sources: ['chain', 'stripe'],
                progress: null,
                summary: null,
                totals: null,
                error: null,
                createdAt: '2026-12-01T00:15:07.020Z',
                startedAt: null,
                finishedAt: null,
                links: {
                  self: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d',
                  rows: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d/rows',
                  csv: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d.csv',
                  report: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d/report?token=0.1796716507.Qm9vZ3VzLXRva2VuLWZvci10aGUtZG9jcy1vbmx5LWFiYw',
                },
              },
            },
          },
        },
      ),
      '400': problemResponse("Malformed body, `to` not after `from`, a period longer than `RECON_MAX_PERIOD_DAYS`, or a `merchantId` that is not the key's.", {
        examples: {
          periodReversed: {
            summary: 'to before from',
            value: problemBody('validation_failed', 'invalid body member(s): to', undefined, { invalidParams: [{ name: 'to', reason: 'must be after from' }] }),
          },
        },
      }),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '409': problemResponse(
        'Another run of this merchant is queued or running (for a different period or sources); `runId` and `location` name it. Start this one when it has finished.',
        {
          examples: {
            inProgress: {
              summary: 'A run in flight',
              value: problemBody(
                'reconciliation_in_progress',
                'reconciliation 0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d of this merchant (2026-11-30T00:00:00.000Z to 2026-12-01T00:00:00.000Z, chain+stripe) is running: one run at a time; start this one when it has finished',
                undefined,
                { runId: '0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d', location: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d' },
              ),
            },
          },
        },
      ),
      '429': { $ref: '#/components/responses/RateLimited' },
      '503': problemResponse('Redis (the queue) or the database is unreachable; nothing is queued.', {
        examples: {
          queueDown: {
            summary: 'Queue unavailable',
            value: problemBody('upstream_unavailable', 'the reconciliation queue is unavailable (Connection is closed.); try again'),
          },
        },
      }),
    },
  },
  list: {
    operationId: 'listReconciliations',
    summary: "The calling merchant's reconciliation runs, newest first",
    description:
      "Every run of the merchant whose API key calls (started by `POST /reconciliations`, `npm run recon` or the schedule), newest first by creation time, each as `GET /reconciliations/{id}` answers it (with a fresh report link). Paged: `limit` (1–100, default 20) and the opaque `nextCursor` of the previous page as `cursor`. Another merchant's runs never appear.",
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', minimum: 1, maximum: 100, default: 20 } },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string', maxLength: 200 }, description: '`nextCursor` of the previous page.' },
    ],
    responses: {
      '200': jsonResponse(
        'A page of runs.',
        {
          type: 'object',
          required: ['data', 'nextCursor'],
          properties: {
            data: { type: 'array', items: { $ref: '#/components/schemas/ReconciliationRun' } },
            nextCursor: { type: ['string', 'null'], description: 'pass as `cursor` for the next page; null on the last page' },
          },
        },
        { headers: NO_STORE_HEADERS },
      ),
      '400': problemResponse('Malformed `limit` or `cursor`, or an unknown query parameter (`validation_failed` naming it).'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '429': LEDGER_ERRORS['429'],
      '503': LEDGER_ERRORS['503'],
    },
  },
  revokeLinks: {
    operationId: 'revokeReconciliationReportLinks',
    summary: 'Revoke every report link of a run issued so far',
    description:
      "For a link that leaked: the run's link generation moves on, so every link to the run issued before (in `links.report`, in break webhooks, in the HTML page) stops opening it (401), whatever its expiry. The answer is the run with a new link. The merchant's API key only; another merchant's run is a 404.",
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [uuidPathParameter('id', "The run's id")],
    responses: {
      '200': jsonResponse(
        'Revoked; `links.report` carries a link of the new generation.',
        { $ref: '#/components/schemas/ReconciliationRun' },
        { headers: NO_STORE_HEADERS },
      ),
      '400': problemResponse('`id` is not a UUID (`validation_failed`).'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': problemResponse("The merchant has no such run (another merchant's runs are the same 404)."),
      '429': { $ref: '#/components/responses/RateLimited' },
      '503': LEDGER_ERRORS['503'],
    },
  },
  get: {
    operationId: 'getReconciliation',
    summary: 'A run: status, progress, summary and totals per asset and source',
    description: 'Poll it while `status` is `queued` or `running`; `progress.percent` covers the whole run (the chain scan is most of it).',
    security: KEY_OR_REPORT_TOKEN,
    parameters: [RUN_ID_PARAMETER, REPORT_TOKEN_PARAMETER],
    responses: {
      '200': jsonResponse(
        'The run.',
        { $ref: '#/components/schemas/ReconciliationRun' },
        {
          headers: NO_STORE_HEADERS,
          examples: {
            completed: {
              summary: 'A completed run with breaks',
              value: {
                id: '0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d',
                merchantId: '6f1c1c5e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
                trigger: 'api',
                status: 'completed',
                period: { from: '2026-11-30T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z' },
                sources: ['chain', 'stripe'],
                progress: { phase: 'done', done: 1, total: 1, percent: 100 },
                summary: {
                  period: { from: '2026-11-30T00:00:00.000Z', to: '2026-12-01T00:00:00.000Z' },
                  generatedAt: '2026-12-01T00:15:09.412Z',
                  rows: 9,
                  counts: { matched: 4, pending: 0, missing_in_ledger: 2, missing_externally: 1, amount_mismatch: 1, duplicate: 1, over_refund: 0 },
                  breaks: 5,
                  ledgerEntries: 7,
                  externalEntries: 7,
                  corrections: 0,
                  scope: { reconciled: ['chain/payment', 'chain/refund', 'stripe/payment', 'stripe/refund', 'stripe/fee'], leftOut: 0 },
                },
                totals: [
                  {
                    asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
                    source: 'chain',
                    ledger: { count: 5, net: '13300000' },
                    external: { count: 4, net: '7200000' },
                    matched: { count: 2, net: '3500000' },
                    pending: 0,
                    breaks: { missing_in_ledger: 1, missing_externally: 1, amount_mismatch: 1, duplicate: 1, over_refund: 0 },
                    difference: '-6100000',
                  },
                  {
                    asset: 'stripe/usd',
                    source: 'stripe',
                    ledger: { count: 2, net: '1168' },
                    external: { count: 3, net: '668' },
                    matched: { count: 2, net: '1168' },
                    pending: 0,
                    breaks: { missing_in_ledger: 1, missing_externally: 0, amount_mismatch: 0, duplicate: 0, over_refund: 0 },
                    difference: '-500',
                  },
                ],
                error: null,
                createdAt: '2026-12-01T00:15:07.020Z',
                startedAt: '2026-12-01T00:15:07.031Z',
                finishedAt: '2026-12-01T00:15:09.420Z',
                links: {
                  self: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d',
                  rows: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d/rows',
                  csv: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d.csv',
                  report: '/reconciliations/0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d/report?token=0.1796716507.Qm9vZ3VzLXRva2VuLWZvci10aGUtZG9jcy1vbmx5LWFiYw',
                },
              },
            },
          },
        },
      ),
      ...RUN_READ_ERRORS,
    },
  },
  rows: {
    operationId: 'listReconciliationRows',
    summary: "A run's rows, in report order",
    description:
      "Every ledger and external entry of the period is in exactly one row. Paged by `cursor`. The balance checks add rows of their own, as of the run whatever its period, only for breaks (`entryKind` `channel` or `prepaid`, `expected` = the books, `actual` = the escrow's `getChannel` or the balance's own transfers, `difference` = actual − expected, `details`): a channel whose deposit, settled or refund differs from its escrow's (`channel_deposit_mismatch`, `channel_settled_mismatch`, `channel_refunded_mismatch`; an x402 batch channel's balance, and settled within what its receiver was paid), an x402 batch channel whose claimed total differs from the contract's (`channel_claimed_mismatch`), closed in the books but not finalized on chain or the other way round (`channel_not_finalized`, `channel_closed_on_chain_not_in_books`), unknown to the escrow (`channel_not_on_chain`), a channel the escrow opened to the merchant's payee that the books lack (`channel_unknown_to_books`); a top-up whose funding payment is not a confirmed payment of its asset in the books, paid another amount or (on chain) was paid by another address (`prepaid_funding_missing`, `prepaid_funding_mismatch`), a prepaid balance that is not what its transfers add up to, or below zero (`prepaid_balance_mismatch`, `prepaid_negative`). The run's `summary.checked` says how many channels, balances and top-ups were checked.",
    security: KEY_OR_REPORT_TOKEN,
    parameters: [
      RUN_ID_PARAMETER,
      {
        name: 'kind',
        in: 'query',
        schema: {
          type: 'string',
          enum: ['all', 'breaks', ...ROW_KINDS],
          default: 'all',
        },
      },
      { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000, default: 500 } },
      { name: 'cursor', in: 'query', schema: { type: 'string' }, description: '`nextCursor` of the previous page.' },
      REPORT_TOKEN_PARAMETER,
    ],
    responses: {
      '200': jsonResponse(
        'A page of rows.',
        {
          type: 'object',
          required: ['data', 'nextCursor'],
          properties: { data: { type: 'array', items: { $ref: '#/components/schemas/ReconciliationRow' } }, nextCursor: { type: ['string', 'null'] } },
        },
        {
          headers: NO_STORE_HEADERS,
          examples: {
            breaks: {
              summary: '?kind=breaks',
              value: {
                data: [
                  {
                    key: 'amount_mismatch|chain|eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913|payment|misbooked-7|0x5c4e…a1:2',
                    kind: 'amount_mismatch',
                    source: 'chain',
                    asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
                    entryKind: 'payment',
                    reference: '0x5c4e9b0f3a2d1c8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e:2',
                    occurredAt: '2026-11-30T14:02:11.000Z',
                    ledger: {
                      id: 'misbooked-7',
                      merchantId: '6f1c1c5e-2d3a-4b5c-8d9e-0f1a2b3c4d5e',
                      source: 'chain',
                      asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
                      reference: '0x5c4e9b0f3a2d1c8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e:2',
                      kind: 'payment',
                      amount: '3100000',
                      state: 'posted',
                      occurredAt: '2026-11-30T14:02:11.000Z',
                    },
                    external: {
                      source: 'chain',
                      asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
                      reference: '0x5c4e9b0f3a2d1c8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e:2',
                      container: '0x5c4e9b0f3a2d1c8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e',
                      kind: 'payment',
                      amount: '3000000',
                      occurredAt: '2026-11-30T14:02:09.000Z',
                      details: {
                        network: 'eip155:8453',
                        token: '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
                        from: '0x277b6edc5e0664bda72eb0c84fe1e44af4befe6e',
                        to: '0xcdaf545f03d8da01c298d8604f29d4c80493f6b2',
                        transactionHash: '0x5c4e9b0f3a2d1c8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a3b2c1d0e9f8a7b6c5d4e',
                        logIndex: '2',
                        blockNumber: '23411802',
                      },
                    },
                    difference: '-100000',
                  },
                ],
                nextCursor: null,
              },
            },
          },
        },
      ),
      ...RUN_READ_ERRORS,
    },
  },
} satisfies Record<string, OperationDoc>;
