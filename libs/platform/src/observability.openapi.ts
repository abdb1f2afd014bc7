import type { OperationDoc } from './openapi';

/** What the OpenAPI document says about MetricsController, ReadyController, DocsController, OpenApiController's routes (see @ApiDoc). */
export const METRICS_DOCS = {
  scrape: {
    operationId: 'metrics',
    summary: 'Prometheus metrics (all three services)',
    description:
      "The Prometheus text exposition format (version 0.0.4) of the service's own registry. Gauges that are read rather than counted (signer balances, queue depth) are read when this is scraped.\n\n| metric | type | labels | services | meaning |\n|---|---|---|---|---|\n| `x402_verify_duration_seconds` | histogram | `network`, `outcome` | facilitator | POST /verify handling time. Buckets 5 ms … 10 s. |\n| `x402_verify_total` | counter | `network`, `outcome`, `reason` | facilitator | POST /verify answers. `outcome`: `valid`, `invalid` (the payer's or the request's fault), `error` (`unexpected_verify_error`: RPC down, bug). |\n| `x402_settle_duration_seconds` | histogram | `network`, `outcome` | facilitator | POST /settle handling time, including the wait for the outcome. Buckets 50 ms … 120 s. |\n| `x402_settle_total` | counter | `network`, `outcome`, `reason` | facilitator | POST /settle answers. `outcome`: `success`, `invalid` (refused, or failed on chain), `pending` (`settlement_pending`), `error` (`unexpected_settle_error`, or an unexpected exception). |\n| `settlement_queue_depth` | gauge | `state` (`waiting`, `active`, `delayed`) | facilitator | Settlement jobs in the queue, read at scrape time; no sample until the settlement queue reports. |\n| `settlements_pending` | gauge | | facilitator | Settlements accepted without a final outcome yet; 0 until the settlement queue reports. |\n| `settlement_gas_spent_wei_total` | counter | `network` | facilitator | Gas paid by the hot wallets for mined settlements (gasUsed × effectiveGasPrice), in wei. |\n| `signer_balance_wei` | gauge | `network`, `signer` | facilitator | Native balance of each hot wallet, read at scrape time (at most every 10 s). |\n| `http_request_duration_seconds` | histogram | `method`, `route`, `status` | all | Every HTTP request. Buckets 5 ms … 10 s. |\n| `metrics_collect_errors_total` | counter | `collector` | all | A scrape-time reading that failed or took over 2 s (e.g. `signer_balances` with an RPC down); its gauges keep their last values. |\n| `process_*`, `nodejs_*` | | | all | prom-client's default process metrics (CPU, memory, event-loop lag, GC, handles). |\n\nLabel values are bounded: `network` is a configured CAIP-2 id (v1 names are mapped) or `unknown`; `reason` is an x402 reason (`X402Reason`), a problem code (`validation_failed`, `payment_identifier_conflict`, `internal_error`, …), `none` (valid or settled) or `other`; `route` is the route template (`/verify`), `/docs/assets` or `unmatched` (no route: 404s), never the raw URL; `method` is an HTTP method or `other`; `signer` is a configured hot-wallet address.",
    responses: {
      '200': {
        description: 'The metrics, as `text/plain; version=0.0.4; charset=utf-8`.',
        headers: { 'cache-control': { schema: { const: 'no-store' } } },
        content: {
          'text/plain': {
            schema: { type: 'string' },
            example:
              '# HELP x402_verify_total POST /verify answers by network, outcome (valid, invalid, error) and reason (an x402 reason or problem code; "none" when valid).\n# TYPE x402_verify_total counter\nx402_verify_total{network="eip155:84532",outcome="valid",reason="none"} 1204\nx402_verify_total{network="eip155:84532",outcome="invalid",reason="invalid_exact_evm_insufficient_balance"} 17\n# HELP x402_settle_duration_seconds POST /settle handling time including the wait for the receipt, by network and outcome (success, invalid, pending, error).\n# TYPE x402_settle_duration_seconds histogram\nx402_settle_duration_seconds_bucket{le="2",network="eip155:84532",outcome="success"} 1150\nx402_settle_duration_seconds_bucket{le="+Inf",network="eip155:84532",outcome="success"} 1187\nx402_settle_duration_seconds_sum{network="eip155:84532",outcome="success"} 1893.2\nx402_settle_duration_seconds_count{network="eip155:84532",outcome="success"} 1187\n# HELP signer_balance_wei Native balance of each hot wallet, in wei, by network and signer address.\n# TYPE signer_balance_wei gauge\nsigner_balance_wei{network="eip155:84532",signer="0xD72505BC4336aF491c8EadCF6F28b1EAD73d0514"} 48210000000000000\n# HELP http_request_duration_seconds HTTP requests by method, route template (or "unmatched") and status code, from the first byte read to the last byte written.\n# TYPE http_request_duration_seconds histogram\nhttp_request_duration_seconds_count{method="POST",route="/verify",status="200"} 1221\n',
          },
        },
      },
    },
  },
} satisfies Record<string, OperationDoc>;

export const READY_DOCS = {
  ready: {
    operationId: 'ready',
    summary: "Readiness: are the service's dependencies up? (all three services)",
    description:
      'Runs every readiness check of the service concurrently, each bounded by 2 s, and answers 200 only if all pass. Route traffic on this, not on /health.\n\n| service | checks |\n|---|---|\n| facilitator | `database` (`SELECT 1`), `redis` (PING on a fresh connection to REDIS_URL), and per configured network its CAIP-2 id (`eth_blockNumber`, also bounded by RPC_TIMEOUT_MS) |\n| ledger | `database`, `redis` |\n| merchant agent | `facilitator` (`GET <FACILITATOR_URL>/health` answers 2xx) |\n\nWhen a check fails the answer is 503 `upstream_unavailable` as problem+json, with `detail` naming what is down, `health: "degraded"` and `checks` giving every check\'s result (`down: <first line of the error>`; URLs in errors are cut to scheme and host).',
    responses: {
      '200': {
        description: 'Every check passed.',
        headers: { 'cache-control': { schema: { const: 'no-store' } } },
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/ReadyResponse' },
            examples: {
              facilitator: {
                summary: 'Facilitator',
                value: { status: 'ready', checks: { database: 'ok', redis: 'ok', 'eip155:84532': 'ok (block 19230412)' } },
              },
              ledger: { summary: 'Ledger', value: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } },
              merchant: { summary: 'Merchant agent', value: { status: 'ready', checks: { facilitator: 'ok' } } },
            },
          },
        },
      },
      '503': {
        description: 'Not ready: at least one dependency is down.',
        content: {
          'application/problem+json': {
            schema: { $ref: '#/components/schemas/Problem' },
            examples: {
              rpcDown: {
                summary: 'Facilitator: a chain RPC is down',
                value: {
                  type: 'urn:problem:upstream_unavailable',
                  title: 'An upstream service is unavailable',
                  status: 503,
                  code: 'upstream_unavailable',
                  detail: 'not ready: eip155:84532 unavailable',
                  instance: '/ready',
                  health: 'degraded',
                  checks: { database: 'ok', redis: 'ok', 'eip155:84532': 'down: The request took too long to respond.' },
                },
              },
              redisDown: {
                summary: 'Ledger: Redis is unreachable',
                value: {
                  type: 'urn:problem:upstream_unavailable',
                  title: 'An upstream service is unavailable',
                  status: 503,
                  code: 'upstream_unavailable',
                  detail: 'not ready: redis unavailable',
                  instance: '/ready',
                  health: 'degraded',
                  checks: { database: 'ok', redis: 'down: connect ECONNREFUSED 127.0.0.1:6379' },
                },
              },
              facilitatorDown: {
                summary: 'Merchant agent: the facilitator is down',
                value: {
                  type: 'urn:problem:upstream_unavailable',
                  title: 'An upstream service is unavailable',
                  status: 503,
                  code: 'upstream_unavailable',
                  detail: 'not ready: facilitator unavailable',
                  instance: '/ready',
                  health: 'degraded',
                  checks: { facilitator: 'down: fetch failed: connect ECONNREFUSED 127.0.0.1:4020' },
                },
              },
            },
          },
        },
      },
    },
  },
} satisfies Record<string, OperationDoc>;

export const DOCS_DOCS = {
  page: {
    operationId: 'docs',
    summary: "This service's API reference in Swagger UI",
    description:
      "An HTML page that renders `GET /docs/openapi.json` with Swagger UI. Its scripts, stylesheet and icons come from the service itself, under `/docs/assets/` (the `swagger-ui-dist` package installed with the app: `swagger-ui.css`, `swagger-ui-bundle.js`, their source maps, `favicon-16x16.png`, `favicon-32x32.png`, plus `init.js`), never from a CDN; any other path under `/docs/assets/` is 404. Served with a `content-security-policy` that allows only the service's own origin.",
    responses: { '200': { description: 'The Swagger UI page.', content: { 'text/html': { schema: { type: 'string' } } } } },
  },
  document: documentDoc('openapiDocument', '/docs/openapi.json'),
} satisfies Record<string, OperationDoc>;

export const OPEN_API_DOCS = { document: documentDoc('openapiDocumentAtRoot', '/openapi.json') } satisfies Record<string, OperationDoc>;

/** GET /docs/openapi.json and GET /openapi.json: one document, two places. */
function documentDoc(operationId: string, instance: string): OperationDoc {
  return {
    operationId,
    summary: "This service's OpenAPI document",
    description:
      "Generated when first asked from the service's controllers, DTO classes and the x402/MPP zod codecs (@nestjs/swagger), so it is the API this process serves; `docs/api/<service>.openapi.json` in the repository is the same document, written by `npm run docs:openapi`.",
    responses: {
      '200': { description: 'The OpenAPI 3.1 document.', content: { 'application/json': { schema: { type: 'object' } } } },
      '404': {
        description: 'This app serves no document (it was not set up with setupOpenApi).',
        content: {
          'application/problem+json': {
            schema: { $ref: '#/components/schemas/Problem' },
            example: {
              type: 'urn:problem:not_found',
              title: 'Not found',
              status: 404,
              code: 'not_found',
              detail: 'this app serves no OpenAPI document',
              instance,
            },
          },
        },
      },
    },
  };
}
