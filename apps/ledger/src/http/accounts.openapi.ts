import { MERCHANT_API_KEY_SECURITY, jsonResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS, LEDGER_ID_PARAMETER, NO_SUCH_ID } from '../openapi.shared';

/** What the OpenAPI document says about AccountsController's routes (see @ApiDoc). */
export const ACCOUNTS_DOCS = {
  create: {
    operationId: 'createAccounts',
    summary: 'Create accounts (TigerBeetle create_accounts semantics)',
    description:
      'Body: array (1..LEDGER_BATCH_MAX) of `{id, asset, code (0–65535), flags?: [linked|debits_must_not_exceed_credits|credits_must_not_exceed_debits], normalBalance?: credit|debit, reference?}`. Answers one result per account: `created`, `exists`, `exists_with_different_{flags,reference,ledger,code,normal_balance}`, `linked_event_failed`, `linked_event_chain_open`, …',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('`{results:[{index, id, result, message}]}`'), ...LEDGER_ERRORS },
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { type: 'array', minItems: 1, description: 'at most LEDGER_BATCH_MAX', items: { $ref: '#/components/schemas/CreateAccount' } },
        },
      },
    },
  },
  list: {
    operationId: 'listAccounts',
    summary: "The merchant's accounts, newest first",
    description:
      'Filters `asset`, `code`; `limit` (1–1000, default 100) and an opaque `cursor`. Each account has `debitsPending`, `debitsPosted`, `creditsPending`, `creditsPosted` and `balances: {posted, pending, available}` as decimal strings.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('`{data: Account[], nextCursor}`'), ...LEDGER_ERRORS },
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
    responses: { '200': jsonResponse('The account.'), ...LEDGER_ERRORS, '404': NO_SUCH_ID },
    parameters: [LEDGER_ID_PARAMETER],
  },
} satisfies Record<string, OperationDoc>;
