import { NO_STORE_HEADERS, jsonResponse, type OperationDoc } from '@mp/platform';

const PROBLEM = { 'application/problem+json': { schema: { type: 'object' } } };

/** What the OpenAPI document says about BriefingController's route (see @ApiDoc). */
export const BRIEFING_DOCS = {
  briefing: {
    operationId: 'getMppBriefing',
    summary: 'A briefing sold by subscription (MPP `subscription` intent); mounted when MERCHANT_SUBSCRIPTION_PLAN_ID is set',
    description:
      'Without a credential or proof: 402 with a `WWW-Authenticate: Payment` challenge of intent `subscription` (MERCHANT_SUBSCRIPTION_AMOUNT per MERCHANT_SUBSCRIPTION_PERIOD_COUNT × MERCHANT_SUBSCRIPTION_PERIOD_UNIT, bound to the ledger plan in `opaque.plan`). With `Authorization: Payment …`: the facilitator activates the subscription (period 0 settled) and the answer carries `Payment-Receipt` with its `subscriptionId`. Later, with `Payer-Proof: payer="0x…", deadline="<unix s>", signature="0x…"` (EIP-191 over `mp-subscription:access:<product>:GET /mpp/briefing:<deadline>`, the deadline at most 600 s ahead): served while the ledger says the payer is entitled (GET /entitlements), 409 `Retry-After: 1` while a renewal is not paid yet, 402 with a fresh challenge otherwise.',
    parameters: [
      { name: 'Authorization', in: 'header', required: false, schema: { type: 'string' }, description: '`Payment <base64url JSON credential>`: subscribes.' },
      {
        name: 'Payer-Proof',
        in: 'header',
        required: false,
        schema: { type: 'string' },
        description: "The subscribed payer's signature: served without payment while entitled.",
      },
    ],
    responses: {
      '200': jsonResponse(
        'Subscribed (with Payment-Receipt) or entitled: the briefing.',
        {
          type: 'object',
          properties: {
            subscriptionId: { type: ['string', 'null'] },
            payer: { type: ['string', 'null'] },
            paidThrough: { type: ['string', 'null'], format: 'date-time' },
            issuedAt: { type: 'string', format: 'date-time' },
            items: { type: 'array', items: { type: 'string' } },
          },
        },
        {
          headers: {
            'Payment-Receipt': { schema: { type: 'string' }, description: 'On activation only: base64url JSON receipt carrying `subscriptionId`.' },
            'Cache-Control': { schema: { type: 'string', const: 'private' } },
          },
        },
      ),
      '400': { description: '`bad-request`: more than one credential; a fresh challenge in WWW-Authenticate.', content: PROBLEM },
      '402': {
        description:
          "`payment-required` (no credential, a proof that proves nothing, a payer not entitled) or the facilitator's payment problem; a fresh challenge in WWW-Authenticate.",
        headers: { 'WWW-Authenticate': { description: 'One field per fresh challenge.', schema: { type: 'string' } }, ...NO_STORE_HEADERS },
        content: PROBLEM,
      },
      '409': {
        description:
          '`settlement_in_progress`: the subscription is active but its current period is not paid yet (a renewal in flight); retry after `Retry-After`.',
        headers: { 'Retry-After': { schema: { type: 'string', const: '1' } }, ...NO_STORE_HEADERS },
        content: PROBLEM,
      },
      '503': { description: '`upstream_unavailable`: the facilitator or the ledger did not answer.', content: PROBLEM },
    },
  },
} satisfies Record<string, OperationDoc>;
