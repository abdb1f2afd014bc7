import type { OperationDoc } from '@mp/platform';

/** What the OpenAPI document says about StripeWebhooksController's routes (see @ApiDoc). */
export const STRIPE_WEBHOOKS_DOCS = {
  receive: {
    operationId: 'receiveStripeWebhook',
    summary: "Stripe's webhooks (configure this URL in Stripe)",
    description:
      'Verified on the raw body with `Stripe-Signature` and STRIPE_WEBHOOK_SECRET (5-minute tolerance), handled once per event id (a redelivery answers `duplicate`). `payment_intent.succeeded` / `payment_intent.payment_failed` with `metadata.challenge_id` settle or fail the MPP payment whose PaymentIntent answer was lost. No API key: the signature authenticates Stripe.',
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', description: 'A Stripe Event.' } } } },
    responses: {
      '200': {
        description: 'Received.',
        content: {
          'application/json': {
            schema: { $ref: '#/components/schemas/StripeWebhookAck' },
            examples: { first: { value: { received: true } }, again: { value: { received: true, duplicate: true } } },
          },
        },
      },
      '400': {
        description: 'No or a wrong `Stripe-Signature`, or a body that is not the signed one.',
        content: {
          'application/problem+json': {
            schema: { $ref: '#/components/schemas/Problem' },
            example: {
              type: 'urn:problem:webhook_signature_invalid',
              title: 'The webhook signature does not verify',
              status: 400,
              code: 'webhook_signature_invalid',
              detail: 'the Stripe-Signature does not verify: No signatures found matching the expected signature for payload.',
              instance: '/stripe/webhooks',
            },
          },
        },
      },
      '404': {
        description: 'Stripe webhooks are not configured (no STRIPE_SECRET_KEY or STRIPE_WEBHOOK_SECRET).',
        content: {
          'application/problem+json': {
            schema: { $ref: '#/components/schemas/Problem' },
            example: {
              type: 'urn:problem:not_found',
              title: 'Not found',
              status: 404,
              code: 'not_found',
              detail: 'Stripe webhooks are not configured on this facilitator (set STRIPE_WEBHOOK_SECRET)',
              instance: '/stripe/webhooks',
            },
          },
        },
      },
      '413': { $ref: '#/components/responses/PayloadTooLarge' },
      '415': { $ref: '#/components/responses/UnsupportedMediaType' },
      '500': { $ref: '#/components/responses/InternalError' },
      '503': {
        description: 'The database is unavailable; Stripe retries.',
        content: {
          'application/problem+json': {
            schema: { $ref: '#/components/schemas/Problem' },
            example: {
              type: 'urn:problem:upstream_unavailable',
              title: 'An upstream service is unavailable',
              status: 503,
              code: 'upstream_unavailable',
              detail: 'a backing service (database or queue) is unavailable; retry shortly',
              instance: '/stripe/webhooks',
            },
          },
        },
      },
    },
  },
} satisfies Record<string, OperationDoc>;
