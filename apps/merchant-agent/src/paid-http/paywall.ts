import type { RequestHandler } from 'express';
import { HTTPFacilitatorClient } from '@x402/core/server';
import { ExactEvmScheme } from '@x402/evm/exact/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { registerLogSecrets } from '@mp/platform';
import type { MerchantConfig } from '../merchant.config';

export const PAID_FORECAST_ROUTE = '/paid/forecast';

/**
 * The official @x402/express middleware in front of the paid routes, settling through our facilitator.
 * It asks the facilitator for /supported on start, so the facilitator must be up first.
 */
export function createPaywall(config: MerchantConfig): RequestHandler {
  const server = new x402ResourceServer(facilitatorClient(config)).register(config.price.network, new ExactEvmScheme());
  return paymentMiddleware(
    {
      [`GET ${PAID_FORECAST_ROUTE}`]: {
        accepts: {
          scheme: 'exact',
          network: config.price.network,
          payTo: config.price.payTo,
          price: { amount: config.price.amount, asset: config.price.asset, extra: { name: config.price.eip712.name, version: config.price.eip712.version } },
          maxTimeoutSeconds: 120,
        },
        description: 'A machine-readable weather forecast',
        mimeType: 'application/json',
      },
    },
    server,
  );
}

/** The official facilitator client, with the merchant's API key on /verify and /settle. */
export function facilitatorClient(config: MerchantConfig): HTTPFacilitatorClient {
  const apiKey = config.facilitatorApiKey;
  registerLogSecrets([apiKey]);
  return new HTTPFacilitatorClient({
    url: config.facilitatorUrl,
    timeoutMs: config.facilitatorTimeoutMs,
    // @x402/core wants headers per facilitator path; /supported is public, so the key goes to /verify and /settle only.
    ...(apiKey ? { createAuthHeaders: async () => ({ verify: { authorization: `Bearer ${apiKey}` }, settle: { authorization: `Bearer ${apiKey}` } }) } : {}),
  });
}
