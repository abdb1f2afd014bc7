import { MERCHANT_API_KEY_SECURITY, jsonResponse, problemBody, problemResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS, LEDGER_ID_PARAMETER, NO_SUCH_ID } from '../openapi.shared';

/** What the OpenAPI document says about PlansController's routes (see @ApiDoc). */

const PLAN_EXAMPLE = {
  id: '5d0b3c58-3a57-4a7e-9d55-0c6f5f8f2b11',
  name: 'Pro monthly',
  product: 'pro',
  amount: '10000000',
  asset: 'eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
  periodUnit: 'month',
  periodCount: 1,
  trialDays: 14,
  endsAt: null,
  onDunningExhausted: 'canceled',
  cancelRefund: 'none',
  usage: [{ key: 'tokens', meterKey: 'llm-tokens', unitAmount: '0.25', description: 'LLM tokens, per token' }],
  archived: false,
  archivedAt: null,
  createdAt: '2026-12-01T21:30:00.000Z',
};

const PLAN_RESPONSE =
  'The plan: `{id, name, product, amount (atomic units, decimal string), asset, periodUnit, periodCount, trialDays, endsAt, onDunningExhausted, cancelRefund, usage: [{key, meterKey, unitAmount, description}], archived, archivedAt, createdAt}`.';

export const PLANS_DOCS = {
  create: {
    operationId: 'createPlan',
    summary: 'Create a subscription plan',
    description:
      "A plan charges `amount` atomic units of `asset` every `periodCount` `periodUnit`s (day, week or month; at most ten years of them), after `trialDays` free days, until `endsAt` if given. The caller chooses the `id`: sending the same id with the same terms again answers the plan (200), with different terms it is a 409 `plan_conflict` naming them (`conflictingFields`); so is a second open plan of the same `product` and `name` (`planId` names the first). Plans are never changed: archive one and create another, which may take the archived plan's name.\n\n**Usage components** (`usage`, up to 20): each bills, at the end of every period, the aggregate of one of the merchant's meters (POST /usage/meters) over the subscription's usage events (CloudEvents whose `subject` is the subscription id) with `periodStart <= time < periodEnd`, times `unitAmount` (atomic units per unit of the aggregate, > 0, up to 18 decimals), rounded up to whole atomic units: ceil(aggregate × unitAmount), exact (an average is priced before it is rounded). The charge is drawn from the payer's prepaid balance (POST /balances/top-ups funds it) by the renewal scan, and listed on GET /subscriptions/{id}. EVM plans only: the Stripe rail charges what its Price says, so a `stripe/…` asset with usage is refused. Refusals beyond a field's shape are `validation_failed` with a `reasonCode` per component: `meter_not_found` (no such meter of the merchant), `duplicate_component_key`, `usage_not_supported_on_stripe`.",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '201': jsonResponse(PLAN_RESPONSE, { type: 'object' }, { example: PLAN_EXAMPLE }),
      '200': jsonResponse('The plan already created under this id with the same terms (a retry).', { type: 'object' }, { example: PLAN_EXAMPLE }),
      ...LEDGER_ERRORS,
      '400': problemResponse('A field is missing or malformed, or a usage component cannot be billed; nothing is written.', {
        examples: {
          meterNotFound: {
            summary: 'A usage component names no meter of the merchant',
            value: problemBody('validation_failed', 'invalid field(s): usage.0.meterKey', undefined, {
              invalidParams: [
                { name: 'usage.0.meterKey', reason: 'the merchant has no meter llm-tokens (POST /usage/meters first)', reasonCode: 'meter_not_found' },
              ],
            }),
          },
        },
      }),
      '409': problemResponse('The id is taken by a plan with other terms, or the product and name by another open plan; nothing is written.', {
        examples: {
          otherTerms: {
            summary: 'Same id, other terms',
            value: problemBody('plan_conflict', 'plan 5d0b3c58-3a57-4a7e-9d55-0c6f5f8f2b11 exists with other terms: amount', undefined, {
              planId: '5d0b3c58-3a57-4a7e-9d55-0c6f5f8f2b11',
              conflictingFields: ['amount'],
            }),
          },
        },
      }),
    },
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object' } } } },
  },
  list: {
    operationId: 'listPlans',
    summary: "The merchant's plans, newest first",
    description: 'Filters `product` and `archived`; `limit` (1–1000, default 100) and an opaque `cursor`.',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('`{data: Plan[], nextCursor}`'), ...LEDGER_ERRORS },
    parameters: [
      { name: 'product', in: 'query', required: false, schema: { type: 'string' }, description: 'Only plans of this product' },
      {
        name: 'archived',
        in: 'query',
        required: false,
        schema: { type: 'string', enum: ['true', 'false'] },
        description: 'Only archived plans, or only open ones',
      },
      { name: 'limit', in: 'query', required: false, schema: { type: 'string' }, description: '1–1000' },
      { name: 'cursor', in: 'query', required: false, schema: { type: 'string' }, description: 'From nextCursor' },
    ],
  },
  get: {
    operationId: 'getPlan',
    summary: 'One plan',
    description: '',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse(PLAN_RESPONSE, { type: 'object' }, { example: PLAN_EXAMPLE }), ...LEDGER_ERRORS, '404': NO_SUCH_ID },
    parameters: [LEDGER_ID_PARAMETER],
  },
  archive: {
    operationId: 'archivePlan',
    summary: 'Archive a plan: no new subscriptions',
    description: 'Existing subscriptions go on. Archiving an archived plan answers it unchanged (its first `archivedAt`).',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '200': jsonResponse('The archived plan.', { type: 'object' }), ...LEDGER_ERRORS, '404': NO_SUCH_ID },
    parameters: [LEDGER_ID_PARAMETER],
  },
} satisfies Record<string, OperationDoc>;
