import { MERCHANT_API_KEY_SECURITY, NO_STORE_HEADERS, jsonResponse, problemBody, problemResponse, type OperationDoc } from '@mp/platform';
import { MERCHANT_KEY_ERRORS } from '../../openapi.shared';

/** The answer of both routes: the webhook URL as stored. */
const WEBHOOK_SETTING = {
  type: 'object',
  required: ['merchantId', 'webhookUrl'],
  additionalProperties: false,
  properties: {
    merchantId: { type: 'string', format: 'uuid' },
    webhookUrl: { type: ['string', 'null'], format: 'uri', description: 'Where webhooks go; null: none are sent.' },
  },
};
const WEBHOOK_SETTING_EXAMPLE = { merchantId: '0b6f2f0e-6c1d-4f3a-9d8e-2a7c5b4e1f90', webhookUrl: 'https://weather.example/hooks/x402' };

/** What the OpenAPI document says about WebhookSettingsController's routes (see @ApiDoc). */
export const WEBHOOK_SETTINGS_DOCS = {
  get: {
    operationId: 'getMerchantWebhook',
    summary: "The calling merchant's webhook URL",
    description:
      "Where this merchant's webhooks (see `webhooks`) are sent. The signing secret is never shown here: the operator hands it over once, when the merchant is created. Requires an API key, even in open mode.",
    security: MERCHANT_API_KEY_SECURITY,
    responses: {
      '200': jsonResponse('The webhook URL as stored.', WEBHOOK_SETTING, { headers: NO_STORE_HEADERS, example: WEBHOOK_SETTING_EXAMPLE }),
      ...MERCHANT_KEY_ERRORS,
    },
  },
  set: {
    operationId: 'setMerchantWebhook',
    summary: "Set or clear the calling merchant's webhook URL",
    description:
      '`{ "webhookUrl": "https://…" }` sends this merchant\'s future webhooks there (deliveries already queued keep their URL); `null` stops new ones. An http(s) URL of at most 2048 characters. Unless the operator set WEBHOOK_ALLOW_PRIVATE, a URL whose host is a loopback, private (RFC 1918, CGNAT, ULA), link-local, unspecified, multicast or cloud-metadata address or name (IPv4-mapped IPv6 included) is refused with `webhook_destination_not_allowed`; names are not resolved here, but every send resolves the host and refuses (fails the delivery, without retrying) when any address is such an address. Requires an API key, even in open mode.',
    security: MERCHANT_API_KEY_SECURITY,
    requestBody: {
      required: true,
      content: {
        'application/json': {
          schema: {
            type: 'object',
            required: ['webhookUrl'],
            additionalProperties: false,
            properties: { webhookUrl: { type: ['string', 'null'], format: 'uri', maxLength: 2048 } },
          },
          example: { webhookUrl: 'https://weather.example/hooks/x402' },
        },
      },
    },
    responses: {
      '200': jsonResponse('The webhook URL as stored (normalized as a URL).', WEBHOOK_SETTING, { headers: NO_STORE_HEADERS, example: WEBHOOK_SETTING_EXAMPLE }),
      '400': problemResponse(
        "`validation_failed`: the field is missing, not a string or null, not an http(s) URL, too long, or an unknown field was sent. `webhook_destination_not_allowed`: the URL's host may not receive webhooks.",
        {
          examples: {
            private: {
              summary: 'A loopback address',
              value: problemBody(
                'webhook_destination_not_allowed',
                '127.0.0.1 is a loopback address; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)',
                '/merchants/me/webhook',
                {
                  invalidParams: [
                    {
                      name: 'webhookUrl',
                      reason: '127.0.0.1 is a loopback address; webhooks go to public addresses only (the operator may set WEBHOOK_ALLOW_PRIVATE=true)',
                    },
                  ],
                },
              ),
            },
            invalid: {
              summary: 'Not an http(s) URL',
              value: problemBody('validation_failed', 'invalid field(s): webhookUrl', '/merchants/me/webhook', {
                invalidParams: [{ name: 'webhookUrl', reason: 'the webhook URL must be http:// or https://' }],
              }),
            },
          },
        },
      ),
      ...MERCHANT_KEY_ERRORS,
    },
  },
} satisfies Record<string, OperationDoc>;
