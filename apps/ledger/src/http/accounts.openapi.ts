import { MERCHANT_API_KEY_SECURITY, jsonResponse, problemResponse, type OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about AccountsController's routes (see @ApiDoc). */
export const ACCOUNTS_DOCS = {
  create: {
    operationId: 'createAccounts',
    summary: 'Create accounts (TigerBeetle create_accounts semantics)',
    description:
      'Body: array (1..LEDGER_BATCH_MAX) of `{id, asset, code (0–65535), flags?: [linked|debits_must_not_exceed_credits|credits_must_not_exceed_debits], normalBalance?: credit|debit, reference?}`. Answers one result per account: `created`, `exists`, `exists_with_different_{flags,reference,ledger,code,normal_balance}`, `linked_event_failed`, `linked_event_chain_open`, …',
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse('`{results:[{index, id, result, message}]}`'),
      '400': problemResponse('Malformed input (`validation_failed` naming each field, or `malformed_json`); nothing is applied.'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '429': problemResponse("Passed on from the facilitator's key lookup: too many failed key attempts."),
      '500': problemResponse('Internal error.'),
      '503': problemResponse('The facilitator could not be asked who the key belongs to, or the database is unavailable.'),
    },
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'array', items: { type: 'object' } } } } },
  },
  list: {
    operationId: 'listAccounts',
    summary: "The merchant's accounts, newest first",
    description:
      'Filters `asset`, `code`; `limit` (1–1000, default 100) and an opaque `cursor`. Each account has `debitsPending`, `debitsPosted`, `creditsPending`, `creditsPosted` and `balances: {posted, pending, available}` as decimal strings.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse('`{data: Account[], nextCursor}`'),
      '400': problemResponse('Malformed input (`validation_failed` naming each field, or `malformed_json`); nothing is applied.'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '429': problemResponse("Passed on from the facilitator's key lookup: too many failed key attempts."),
      '500': problemResponse('Internal error.'),
      '503': problemResponse('The facilitator could not be asked who the key belongs to, or the database is unavailable.'),
    },
    parameters: [
      { name: 'asset', in: 'query', required: false, schema: { type: 'string' }, description: 'Asset, e.g. eip155:8453/0x… or stripe/usd' },
      { name: 'code', in: 'query', required: false, schema: { type: 'string' }, description: 'Account code' },
      { name: 'limit', in: 'query', required: false, schema: { type: 'string' }, description: '1–1000' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'From nextCursor' },
    ],
  },
  get: {
    operationId: 'getAccount',
    summary: 'One account with its balances',
    description: '',
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse('The account.'),
      '400': problemResponse('Malformed input (`validation_failed` naming each field, or `malformed_json`); nothing is applied.'),
      '401': { $ref: '#/components/responses/Unauthorized' },
      '404': problemResponse("The merchant has no such id (another merchant's ids are the same 404)."),
      '429': problemResponse("Passed on from the facilitator's key lookup: too many failed key attempts."),
      '500': problemResponse('Internal error.'),
      '503': problemResponse('The facilitator could not be asked who the key belongs to, or the database is unavailable.'),
    },
    parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' }, description: 'A UUID (a decimal 128-bit integer is accepted too).' }],
  },
} satisfies Record<string, OperationDoc>;
