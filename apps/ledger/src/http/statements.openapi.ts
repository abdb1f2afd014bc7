import { MERCHANT_API_KEY_SECURITY, jsonResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS, NO_SUCH_ID } from '../openapi.shared';

/** What the OpenAPI document says about StatementsController's routes (see @ApiDoc). */
export const STATEMENTS_DOCS = {
  get: {
    operationId: 'getStatement',
    summary: "An account's statement for a period",
    description: 'Period [from, to), default everything up to now: opening and closing posted balances and the entries between, each with its running balance.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        '`{account, assetSymbol, assetDecimals, from, to, opening, closing, entries, nextCursor}`: atomic amounts, each with its decimal form beside it.',
        { $ref: '#/components/schemas/Statement' },
      ),
      ...LEDGER_ERRORS,
      '404': NO_SUCH_ID,
    },
    parameters: [
      { name: 'account', in: 'query', required: true, schema: { type: 'string' }, description: 'Account id' },
      { name: 'from', in: 'query', required: false, schema: { type: 'string' }, description: 'ISO 8601' },
      { name: 'to', in: 'query', required: false, schema: { type: 'string' }, description: 'ISO 8601' },
      { name: 'limit', in: 'query', required: false, schema: { type: 'string' }, description: '1–10000' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'From nextCursor' },
    ],
  },
} satisfies Record<string, OperationDoc>;
