import { MERCHANT_API_KEY_SECURITY, jsonResponse, problemResponse, type OperationDoc } from '@mp/platform';

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
      '400': problemResponse('Malformed input (`validation_failed` naming each field, or `malformed_json`); nothing is applied.'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': problemResponse("The merchant has no such id (another merchant's ids are the same 404)."),
      '429': problemResponse("Passed on from the facilitator's key lookup: too many failed key attempts."),
      '500': problemResponse('Internal error.'),
      '503': problemResponse('The facilitator could not be asked who the key belongs to, or the database is unavailable.'),
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
