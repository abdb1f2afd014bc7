import { NO_STORE_HEADERS, type OperationDoc } from '@mp/platform';
import { KEY_OR_REPORT_TOKEN, REPORT_TOKEN_PARAMETER, RUN_ID_PARAMETER, RUN_READ_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about ReportsController's routes (see @ApiDoc). */
export const REPORTS_DOCS = {
  csv: {
    operationId: 'getReconciliationCsv',
    summary: "A completed run's rows as CSV",
    description:
      'RFC 4180 (CRLF, quoted fields), one header line, amounts in atomic units (`ledger_amount`, `external_amount`, `difference`), and an `advice` column saying which transfer resolves each break. The last four columns give the same amounts in decimals of the asset (`ledger_amount_decimal`, `external_amount_decimal`, `difference_decimal`, e.g. `1500000` → `1.5`) and its symbol (`asset_symbol`): tokens as their contract on the reconciled chain describes them, Stripe currencies by their minor unit (ISO 4217, as Stripe counts it); empty when not known. Text cells a spreadsheet would run as a formula get a leading apostrophe.',
    security: KEY_OR_REPORT_TOKEN,
    parameters: [RUN_ID_PARAMETER, REPORT_TOKEN_PARAMETER],
    responses: {
      '200': {
        description: 'The CSV, as an attachment.',
        headers: {
          'Content-Disposition': { schema: { type: 'string' }, description: '`attachment; filename="reconciliation-<id>.csv"`' },
          ...NO_STORE_HEADERS,
        },
        content: {
          'text/csv': {
            schema: { type: 'string' },
            example:
              'row_kind,source,asset,entry_kind,reference,occurred_at,ledger_id,ledger_reference,ledger_state,ledger_amount,ledger_corrections,external_reference,external_amount,difference,duplicate_of,advice,asset_symbol,ledger_amount_decimal,external_amount_decimal,difference_decimal\r\n',
          },
        },
      },
      ...RUN_READ_ERRORS,
    },
  },
  report: {
    operationId: 'getReconciliationReport',
    summary: "A completed run's report as an HTML page for people",
    description:
      "One self-contained page (inline CSS and SVG, no scripts, nothing fetched; `Content-Security-Policy: default-src 'none'`): summary, totals per asset, a chart of payment volume and breaks over the period, and the table of breaks with what resolves each. Each reference links to where it can be looked at: a transaction to `<explorer>/tx/<hash>` when its network has an explorer (`RECON_EXPLORER_URLS`), a Stripe `pi_`/`ch_` id to `https://dashboard.stripe.com/[test/]payments/<id>`, `re_` to `…/refunds/<id>`, `txn_` to the dashboard's search (test or live from the ledger's `STRIPE_SECRET_KEY`); no link otherwise. Open `links.report` of the run in a browser: its signed token stands in for the API key.",
    security: KEY_OR_REPORT_TOKEN,
    parameters: [RUN_ID_PARAMETER, REPORT_TOKEN_PARAMETER],
    responses: {
      '200': {
        description: 'The page.',
        headers: {
          'Content-Security-Policy': { schema: { type: 'string' } },
          'Referrer-Policy': { schema: { type: 'string', const: 'no-referrer' } },
          ...NO_STORE_HEADERS,
        },
        content: { 'text/html': { schema: { type: 'string' } } },
      },
      ...RUN_READ_ERRORS,
    },
  },
} satisfies Record<string, OperationDoc>;
