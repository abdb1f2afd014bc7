import { MERCHANT_API_KEY_SECURITY, problemBody, problemResponse, uuidPathParameter } from '@mp/platform';

/** What the ledger's routes say alike in the OpenAPI document (see their *.openapi.ts). */

/** The errors of every ledger route behind a merchant API key; a route overrides the ones it words differently. */
export const LEDGER_ERRORS = {
  '400': problemResponse('Malformed input (`validation_failed` naming each field, or `malformed_json`); nothing is applied.'),
  '401': { $ref: '#/components/responses/Unauthorized' },
  '429': problemResponse("Passed on from the facilitator's key lookup: too many failed key attempts."),
  '500': problemResponse('Internal error.'),
  '503': problemResponse('The facilitator could not be asked who the key belongs to, or the database is unavailable.'),
};

/** The 404 of an account, transfer or statement id the calling merchant does not have. */
export const NO_SUCH_ID = problemResponse("The merchant has no such id (another merchant's ids are the same 404).");

/** An account or transfer id in the path. */
export const LEDGER_ID_PARAMETER = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string' },
  description: 'A UUID (a decimal 128-bit integer is accepted too).',
};

/** A run is read with the merchant's API key or, from a browser, with the token of its report link. */
export const KEY_OR_REPORT_TOKEN = [...MERCHANT_API_KEY_SECURITY, {}];

export const RUN_ID_PARAMETER = uuidPathParameter('id', "The reconciliation run's id (from `POST /reconciliations`, or a scheduled run's).");

export const REPORT_TOKEN_PARAMETER = {
  name: 'token',
  in: 'query',
  required: false,
  schema: { type: 'string', maxLength: 200 },
  description:
    "A signed read token for this one run (from `links.report` of the run): lets a browser read it without an API key until it expires (`RECON_REPORT_LINK_TTL_SECONDS` after it was issued; reading never extends it) or the run's links are revoked (POST /reconciliations/{id}/report-link/revoke). An invalid, expired or revoked token is ignored, and the API key is then required (without one: 401 saying the link expired or was revoked).",
};

/** The errors of the routes that read one run (its JSON, rows, CSV and report). */
export const RUN_READ_ERRORS = {
  '400': problemResponse('The id is not a UUID, or a query parameter is invalid.', {
    examples: {
      badId: {
        summary: 'Not a run id',
        value: problemBody('validation_failed', 'invalid path parameter(s): id', undefined, {
          invalidParams: [{ name: 'id', reason: 'must be a reconciliation id (a UUID)' }],
        }),
      },
    },
  }),
  '401': { $ref: '#/components/responses/Unauthorized' },
  '404': problemResponse("No such run of this merchant (another merchant's run is the same 404), or (CSV, report) the run has not completed yet.", {
    examples: { notFound: { summary: 'Unknown run', value: problemBody('not_found', 'no reconciliation 0b7f3c2a-9e41-4b64-8d0c-5f1e2a3b4c5d') } },
  }),
};
