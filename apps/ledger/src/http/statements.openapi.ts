import type { OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about StatementsController's routes (see @ApiDoc). */
export const STATEMENTS_DOCS = {
  get: {
    operationId: 'getStatement',
    summary: "An account's statement for a period",
    description: 'Period [from, to), default everything up to now: opening and closing posted balances and the entries between, each with its running balance.',
    security: [{ merchantApiKey: [] }, { merchantApiKeyHeader: [] }],
    responses: {
      '200': {
        description:
          '`{account, assetSymbol, assetDecimals, from, to, opening, closing, entries, nextCursor}`: atomic amounts, each with its decimal form beside it.',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Statement' } } },
      },
      '400': {
        description: 'Malformed input (`validation_failed` naming each field, or `malformed_json`); nothing is applied.',
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      },
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': {
        description: "The merchant has no such id (another merchant's ids are the same 404).",
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      },
      '429': {
        description: "Passed on from the facilitator's key lookup: too many failed key attempts.",
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      },
      '500': { description: 'Internal error.', content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } } },
      '503': {
        description: 'The facilitator could not be asked who the key belongs to, or the database is unavailable.',
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      },
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
