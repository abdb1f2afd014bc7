import { jsonResponse, problemBody, problemResponse, type OperationDoc } from '@mp/platform';
import { JSON_BODY_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about StripeWebhooksController's routes (see @ApiDoc). */
export const STRIPE_WEBHOOKS_DOCS = {
  receive: {
    operationId: 'receiveStripeWebhook',
    summary: "Stripe's webhooks (configure this URL in Stripe)",
    description:
      'Verified on the raw body with `Stripe-Signature` and STRIPE_WEBHOOK_SECRET (5-minute tolerance), handled once per event id (a redelivery answers `duplicate`). `payment_intent.succeeded` / `payment_intent.payment_failed` with `metadata.challenge_id` settle or fail the MPP payment whose PaymentIntent answer was lost; `refund.*` and `charge.refunded` finish pending refunds; for MPP subscriptions on Stripe, `invoice.paid` (the invoice re-read and validated, recorded once per invoice and per period) pays a period, `invoice.payment_failed` fails the charge in flight, and `customer.subscription.deleted` not asked for by a cancel revokes the subscription. No API key: the signature authenticates Stripe.',
    requestBody: { required: true, content: { 'application/json': { schema: { type: 'object', description: 'A Stripe Event.' } } } },
    responses: {
      '200': jsonResponse(
        'Received.',
        { $ref: '#/components/schemas/StripeWebhookAck' },
        { examples: { first: { value: { received: true } }, again: { value: { received: true, duplicate: true } } } },
      ),
      '400': problemResponse('No or a wrong `Stripe-Signature`, or a body that is not the signed one.', {
        example: problemBody(
          'webhook_signature_invalid',
          'the Stripe-Signature does not verify: No signatures found matching the expected signature for payload.',
          '/stripe/webhooks',
        ),
      }),
      '404': problemResponse('Stripe webhooks are not configured (no STRIPE_SECRET_KEY or STRIPE_WEBHOOK_SECRET).', {
        example: problemBody('not_found', 'Stripe webhooks are not configured on this facilitator (set STRIPE_WEBHOOK_SECRET)', '/stripe/webhooks'),
      }),
      ...JSON_BODY_ERRORS,
      '500': { $ref: '#/components/responses/InternalError' },
      '503': problemResponse('The database is unavailable; Stripe retries.', {
        example: problemBody('upstream_unavailable', 'a backing service (database or queue) is unavailable; retry shortly', '/stripe/webhooks'),
      }),
    },
  },
} satisfies Record<string, OperationDoc>;
