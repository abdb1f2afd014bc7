import { MERCHANT_API_KEY_SECURITY, jsonResponse, problemBody, problemResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS, NO_SUCH_ID } from '../openapi.shared';

/** What the OpenAPI document says about SubscriptionsController's and EntitlementsController's routes (see @ApiDoc). */

const SUBSCRIPTION_ID_PARAMETER = {
  name: 'id',
  in: 'path',
  required: true,
  schema: { type: 'string', pattern: '^[A-Za-z0-9_-]{16,64}$' },
  description: "The facilitator's subscriptionId (the MPP receipt's).",
};

const SUBSCRIPTION_EXAMPLE = {
  id: 'sub_9b2fQm4xT1kPz7Lw',
  planId: '5d0b3c58-3a57-4a7e-9d55-0c6f5f8f2b11',
  planNote: null,
  product: 'pro',
  method: 'evm',
  payer: '0x2b5ad5c4795c026514f8317c7a215e218dccd6cf',
  payTo: '0x6813eb9362372eef6200f3b1dbc3f819671cba69',
  network: 'eip155:8453',
  asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  amount: '10000000',
  periodUnit: 'month',
  periodCount: 1,
  trialDays: 0,
  anchor: '2027-01-31T12:00:00.000Z',
  expiresAt: null,
  authorizedPeriods: 12,
  state: 'active',
  lastPaidIndex: 0,
  paidThrough: '2027-02-28T12:00:00.000Z',
  inFlight: null,
  dunning: null,
  cancel: null,
  endedAt: null,
  endedReason: null,
  nextActionAt: '2027-02-28T12:00:00.000Z',
  createdAt: '2027-01-31T12:00:01.000Z',
};

const SUBSCRIPTION_RESPONSE =
  'The subscription: its signed terms (`amount` atomic units of `asset` every `periodCount` `periodUnit`s from `anchor`), the bound plan (`planNote` `plan_mismatch` or `plan_not_found` when none is bound; then `product` is null), `state` (incomplete, trialing, active, past_due, canceled, unpaid, incomplete_expired), `lastPaidIndex`, `paidThrough`, the charge in flight, the dunning position, the cancel (with the refund of the unused part: `refund_requested` while the facilitator executes it, then `refunded` or `refund_failed`) and `nextActionAt`.';

const PAYER_PROOF_401 = problemResponse(
  "No API key and no valid payer proof: the signature is not the payer's over the exact message, or the deadline has passed or lies more than 600 s ahead (`payer_proof_invalid`); nothing changes.",
  {
    examples: {
      wrongSigner: {
        summary: 'Signed by someone else',
        value: problemBody(
          'payer_proof_invalid',
          'the signature is not the subscription\'s payer\'s over "mp-subscription:cancel:period_end:sub_9b2fQm4xT1kPz7Lw:1801234567"',
        ),
      },
    },
  },
);

export const SUBSCRIPTIONS_DOCS = {
  list: {
    operationId: 'listSubscriptions',
    summary: "The merchant's subscriptions, newest first",
    description: 'Filters `payer`, `state`, `plan`; `limit` (1–1000, default 100) and an opaque `cursor`.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('`{data: Subscription[], nextCursor}`'), ...LEDGER_ERRORS },
    parameters: [
      { name: 'payer', in: 'query', required: false, schema: { type: 'string' }, description: 'Only this payer (an address in any case)' },
      { name: 'state', in: 'query', required: false, schema: { type: 'string' }, description: 'Only this state' },
      { name: 'plan', in: 'query', required: false, schema: { type: 'string', format: 'uuid' }, description: 'Only subscriptions bound to this plan' },
      { name: 'limit', in: 'query', required: false, schema: { type: 'string' }, description: '1–1000' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'From nextCursor' },
    ],
  },
  get: {
    operationId: 'getSubscription',
    summary: 'One subscription, with its charges, transitions and usage',
    description:
      "`charges`: every attempt of every period (`requested`, `paid`, `failed`, `refused`, `voided`; `latePaidAt` marks a confirmation that came after the attempt was voided: booked, not counted). `transitions`: every lifecycle event in order, with its cause.\n\nWhen the bound plan has usage components: `currentUsage`, the open period (`periodIndex`, `periodStart`, `periodEnd`) and what each component's usage events recorded so far come to (`quantity`, the meter's aggregate; `amount`, atomic units), nothing recorded yet; null when no period is open. `usageCharges`: what each closed period's usage cost, one per period and component, recorded once when the period closed (at its end, or at the end of what was served when the subscription ended inside it): `quantity` (exact; null when `too_large`), `amount` = ceil(aggregate × `unitAmount`), `state` `due` (being drawn), `paid` (drawn from the payer's prepaid balance: `transferId`, code `usage`), `unpaid` (the balance was short by `topUpNeeded` at `triedAt`; drawn by a later renewal scan once a top-up covers it), `nothing_due` (0, nothing drawn) or `too_large` (beyond 2^256−1 atomic units: never drawn).",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        SUBSCRIPTION_RESPONSE,
        { type: 'object' },
        {
          example: {
            ...SUBSCRIPTION_EXAMPLE,
            charges: [],
            transitions: [],
            currentUsage: {
              periodIndex: 1,
              periodStart: '2027-02-28T12:00:00.000Z',
              periodEnd: '2027-03-31T12:00:00.000Z',
              components: [{ componentKey: 'tokens', meterKey: 'llm-tokens', unitAmount: '0.25', quantity: '1800', amount: '450' }],
            },
            usageCharges: [
              {
                periodIndex: 0,
                componentKey: 'tokens',
                meterKey: 'llm-tokens',
                unitAmount: '0.25',
                quantity: '12345',
                amount: '3087',
                periodStart: '2027-01-31T12:00:00.000Z',
                periodEnd: '2027-02-28T12:00:00.000Z',
                state: 'paid',
                topUpNeeded: null,
                transferId: '0b8e4c1e-2f43-8a7d-9c11-5e3f2a9d7b60',
                recordedAt: '2027-02-28T12:00:02.000Z',
                triedAt: '2027-02-28T12:00:02.000Z',
                paidAt: '2027-02-28T12:00:02.000Z',
              },
            ],
          },
        },
      ),
      ...LEDGER_ERRORS,
      '404': NO_SUCH_ID,
    },
    parameters: [SUBSCRIPTION_ID_PARAMETER],
  },
  cancel: {
    operationId: 'cancelSubscription',
    summary: 'Cancel a subscription (merchant or payer)',
    description:
      "By the merchant (API key) or by the subscriber without one: `signature`, the payer's EIP-191 (personal_sign) signature over exactly `mp-subscription:cancel:<at>:<id>:<deadline>`, and `deadline`, unix seconds in the future and at most 600 s ahead (EOA payers only). `at` is `period_end` by default: the paid period (or the trial) is served to its end, nothing more is charged. `immediately` ends access now and, when the plan's `cancelRefund` is `unused_part`, refunds the unused part of the paid period to the payer through the facilitator (`cancel.refund`: `refund_requested`, then `refunded` when the facilitator reports it executed, or `refund_failed` when its rail did not move the money; a refund the facilitator denies, e.g. without a refund wallet for the merchant, stays `refund_requested`). The facilitator is told on `subscription-commands`. Cancelling again answers the first cancel; `immediately` after `period_end` upgrades it. A renewal already in flight completes and counts (with an immediate cancel its unused part is added to the refund).",
    responses: {
      '200': jsonResponse(
        SUBSCRIPTION_RESPONSE,
        { type: 'object' },
        {
          example: {
            ...SUBSCRIPTION_EXAMPLE,
            cancel: { at: 'period_end', requestedAt: '2027-02-10T08:00:00.000Z', by: 'payer', reason: null, confirmedAt: null, refund: null },
          },
        },
      ),
      ...LEDGER_ERRORS,
      '401': PAYER_PROOF_401,
      '404': NO_SUCH_ID,
      '409': problemResponse('The subscription ended without a cancel (`subscription_ended`): nothing to cancel.'),
    },
    requestBody: { required: false, content: { 'application/json': { schema: { type: 'object' } } } },
    parameters: [SUBSCRIPTION_ID_PARAMETER],
  },
  status: {
    operationId: 'subscriptionStatus',
    summary: "The subscriber's view of a subscription",
    description:
      'For the payer, without an API key: `signature` over exactly `mp-subscription:status:<id>:<deadline>` and `deadline` (unix seconds, future, at most 600 s ahead). Answers the subscription as the merchant sees it, without charges and transitions, plus `entitled` now.',
    security: [],
    responses: {
      '200': jsonResponse(SUBSCRIPTION_RESPONSE, { type: 'object' }),
      '400': LEDGER_ERRORS['400'],
      '401': PAYER_PROOF_401,
      '404': problemResponse('No such subscription.'),
    },
    parameters: [
      SUBSCRIPTION_ID_PARAMETER,
      { name: 'signature', in: 'query', required: true, schema: { type: 'string' }, description: '0x hex, 65 bytes' },
      { name: 'deadline', in: 'query', required: true, schema: { type: 'string' }, description: 'unix seconds' },
    ],
  },
  entitlements: {
    operationId: 'getEntitlement',
    summary: 'Whether a payer may be served a product',
    description:
      "From the merchant's subscriptions of `payer` to `product` at `at` (default now): `{entitled, subscriptionId, state, paidThrough, reason}`. Only the trial or the period recorded as paid entitles, never the state alone (`reason`: `paid_period`, `trial`, `no_subscription`, `not_paid`, `canceled`, `ended`). An immediate cancel ends it at once; a cancel at period end lets the paid period run out.",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse(
        'The entitlement.',
        { type: 'object' },
        {
          example: { entitled: true, subscriptionId: 'sub_9b2fQm4xT1kPz7Lw', state: 'active', paidThrough: '2027-02-28T12:00:00.000Z', reason: 'paid_period' },
        },
      ),
      ...LEDGER_ERRORS,
    },
    parameters: [
      { name: 'payer', in: 'query', required: true, schema: { type: 'string' }, description: 'The payer (an address in any case)' },
      { name: 'product', in: 'query', required: true, schema: { type: 'string' }, description: "The plan's product" },
      { name: 'at', in: 'query', required: false, schema: { type: 'string', format: 'date-time' }, description: 'Default now' },
    ],
  },
} satisfies Record<string, OperationDoc>;
