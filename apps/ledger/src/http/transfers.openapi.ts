import { MERCHANT_API_KEY_SECURITY, jsonResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS, LEDGER_ID_PARAMETER, NO_SUCH_ID } from '../openapi.shared';

/** What the OpenAPI document says about TransfersController's routes (see @ApiDoc). */
export const TRANSFERS_DOCS = {
  create: {
    operationId: 'createTransfers',
    summary: 'Create transfers (TigerBeetle create_transfers semantics)',
    description:
      'Body: array of `{id, debitAccountId?, creditAccountId?, amount?, pendingId?, asset?, code?, flags?: [linked|pending|post_pending_transfer|void_pending_transfer], timeout? (seconds), reference?}`. HTTP 200 with one result per transfer whatever it is (codes in libs/ledger/src/results.ts: `created`, `exists`, `exists_with_different_amount`, `exceeds_credits`, `accounts_must_have_the_same_ledger`, `pending_transfer_already_posted`, `id_already_failed`, …, and `internal_error` when the ledger failed unexpectedly on it: nothing of it applied, logged, the same id may be sent again); a linked chain succeeds or fails as a whole; nothing partial is written.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('`{results:[{index, id, result, message, timestamp?, firstResult?}]}`'), ...LEDGER_ERRORS },
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: { type: 'array', minItems: 1, description: 'at most LEDGER_BATCH_MAX', items: { $ref: '#/components/schemas/CreateTransfer' } },
        },
      },
    },
  },
  list: {
    operationId: 'listTransfers',
    summary: "The merchant's transfers, newest first",
    description: 'Filters `account`, `asset`, `code`, `from`, `to`, `status` (pending|posted|voided|expired); `limit` and an opaque `cursor`.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('`{data: Transfer[], nextCursor}`'), ...LEDGER_ERRORS, '404': NO_SUCH_ID },
    parameters: [
      { name: 'account', in: 'query', required: false, schema: { type: 'string' }, description: 'Account id' },
      { name: 'asset', in: 'query', required: false, schema: { type: 'string' }, description: 'Asset' },
      { name: 'code', in: 'query', required: false, schema: { type: 'string' }, description: 'Transfer code' },
      { name: 'from', in: 'query', required: false, schema: { type: 'string' }, description: 'ISO 8601' },
      { name: 'to', in: 'query', required: false, schema: { type: 'string' }, description: 'ISO 8601' },
      { name: 'status', in: 'query', required: false, schema: { type: 'string' }, description: 'pending, posted, voided or expired' },
      { name: 'limit', in: 'query', required: false, schema: { type: 'string' }, description: '1–1000' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'From nextCursor' },
    ],
  },
  get: {
    operationId: 'getTransfer',
    summary: 'One transfer',
    description: '',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('The transfer.'), ...LEDGER_ERRORS, '404': NO_SUCH_ID },
    parameters: [LEDGER_ID_PARAMETER],
  },
} satisfies Record<string, OperationDoc>;
