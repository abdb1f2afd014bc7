import { MERCHANT_API_KEY_SECURITY, jsonResponse, problemResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about BalancesController's routes (see @ApiDoc). */

const BALANCE_EXAMPLE = {
  payer: '0x2b5ad5c4795c026514f8317c7a215e218dccd6cf',
  asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  available: '4260',
  held: '1000',
  deposited: '10000',
  spent: '4740',
};
const BALANCE =
  'The balance, in atomic units as decimal strings: `{payer, asset, available, held, deposited, spent}`; `available` = `deposited` − `spent` − `held`, never below zero.';

const INSUFFICIENT = problemResponse(
  '`insufficient_balance`: the balance is short. `available`, `required` and `topUpNeeded` (atomic units) say by how much; nothing is held or spent, and the same id answers the same 402 (use a new id after the top-up).',
  {
    example: {
      type: 'urn:problem:insufficient_balance',
      title: 'The prepaid balance is too low; top it up',
      status: 402,
      code: 'insufficient_balance',
      detail: 'the prepaid balance of 0x2b5a… has 260 of the 1000 this call needs',
      payer: '0x2b5ad5c4795c026514f8317c7a215e218dccd6cf',
      asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
      available: '260',
      required: '1000',
      topUpNeeded: '740',
    },
  },
);
const ID_CONFLICT = problemResponse('`balance_conflict`: the id was used before for another payer, asset or amount; nothing is written.');

export const BALANCES_DOCS = {
  get: {
    operationId: 'getPrepaidBalance',
    summary: "Read a payer's prepaid balance",
    description: 'A payer with no top-up has a zero balance (not a 404).',
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [
      {
        name: 'payer',
        in: 'path',
        required: true,
        schema: { type: 'string', maxLength: 200 },
        description: 'the payer (an 0x address is compared case-insensitively)',
      },
      { name: 'asset', in: 'query', required: true, schema: { type: 'string' }, description: 'the ledger asset' },
    ],
    responses: { '200': jsonResponse(BALANCE, { type: 'object' }, { example: BALANCE_EXAMPLE }), ...LEDGER_ERRORS },
  },
  topUp: {
    operationId: 'topUpPrepaidBalance',
    summary: "Credit a settled payment to a payer's prepaid balance",
    description:
      "After a payment settled through the facilitator (x402 or MPP, on chain or Stripe), credit it to the payer's balance: the amount moves from the merchant's revenue (not earned yet) to the balance, a liability until it is spent. One payment (its `paymentReference` in the asset) funds one top-up: the same request again answers 200 with the balance and adds nothing; the same reference with another payer or amount is a 409. Reconciliation matches every top-up to its payment in the book.",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '201': jsonResponse(`Credited. ${BALANCE}`, { type: 'object' }, { example: BALANCE_EXAMPLE }),
      '200': jsonResponse(`This payment was credited before; nothing more is. ${BALANCE}`, { type: 'object' }, { example: BALANCE_EXAMPLE }),
      ...LEDGER_ERRORS,
      '409': ID_CONFLICT,
    },
  },
  charge: {
    operationId: 'chargePrepaidBalance',
    summary: 'Spend a known price from a prepaid balance',
    description:
      'For a call whose price is known before it runs: spends `amount` at once, or refuses with 402 and spends nothing. `id` is the call: the same id again answers 200 and spends nothing more. Deliver only after a 201 or 200.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '201': jsonResponse(`Spent. ${BALANCE}`, { type: 'object' }, { example: BALANCE_EXAMPLE }),
      '200': jsonResponse(`Spent before under this id; nothing more is. ${BALANCE}`, { type: 'object' }, { example: BALANCE_EXAMPLE }),
      ...LEDGER_ERRORS,
      '402': INSUFFICIENT,
      '409': ID_CONFLICT,
    },
  },
  hold: {
    operationId: 'holdPrepaidBalance',
    summary: 'Reserve the most a metered call may cost',
    description:
      'For a call whose cost is known only after it ran (tokens, seconds): reserves `amount` so concurrent calls cannot spend it, then capture what it cost. An uncaptured hold lapses after `timeoutSeconds` and returns to the balance. Deliver at most what was held. 402 when the balance is short; the same id again answers 200.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '201': jsonResponse(`Held. ${BALANCE}`, { type: 'object' }, { example: BALANCE_EXAMPLE }),
      '200': jsonResponse(`Held before under this id. ${BALANCE}`, { type: 'object' }, { example: BALANCE_EXAMPLE }),
      ...LEDGER_ERRORS,
      '402': INSUFFICIENT,
      '409': ID_CONFLICT,
    },
  },
  capture: {
    operationId: 'capturePrepaidHold',
    summary: 'Spend what a held call cost and release the rest',
    description: 'Captures `amount` (at most the hold; 0 releases it all). The same capture again answers 200.',
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 128 }, description: "the hold's id" }],
    responses: {
      '201': jsonResponse('Captured: `{id, status: "captured"}`.', { type: 'object' }),
      '200': jsonResponse('Captured before: `{id, status: "captured"}`.', { type: 'object' }),
      ...LEDGER_ERRORS,
      '400': problemResponse('`validation_failed`: a malformed amount, or more than the hold.'),
      '404': problemResponse('No hold with this id.'),
      '409': problemResponse('`hold_closed`: the hold was released, expired, or captured with another amount.'),
    },
  },
  release: {
    operationId: 'releasePrepaidHold',
    summary: 'Release a hold',
    description: 'Returns the whole hold to the balance. The same release again answers 200.',
    security: MERCHANT_API_KEY_SECURITY,
    parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', maxLength: 128 }, description: "the hold's id" }],
    responses: {
      '201': jsonResponse('Released: `{id, status: "released"}`.', { type: 'object' }),
      '200': jsonResponse('Released before: `{id, status: "released"}`.', { type: 'object' }),
      ...LEDGER_ERRORS,
      '404': problemResponse('No hold with this id.'),
      '409': problemResponse('`hold_closed`: the hold was captured or expired.'),
    },
  },
} satisfies Record<string, OperationDoc>;
