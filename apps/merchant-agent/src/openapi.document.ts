import { generateOpenApiJson } from '@mp/platform';
import { AppModule } from './app.module';
import { loadMerchantConfig } from './merchant.config';
import { MERCHANT_AGENT_OPENAPI } from './openapi';

/**
 * docs/api/merchant-agent.openapi.json as `npm run docs:openapi` writes it. The routes do not depend on the
 * configuration, except GET /mpp/briefing (mounted when a subscription is sold: example plan, ledger and key here)
 * GET /paid/metered-forecast (mounted with MERCHANT_BATCH_PRICE) and POST /mpp/balance/top-up (with
 * MERCHANT_PREPAID_TOP_UP_AMOUNT);
 * an example asset and wallet only let the module load without a chain.
 */
export function merchantAgentOpenApiJson(): Promise<string> {
  const config = loadMerchantConfig({
    MERCHANT_NETWORK: 'eip155:84532',
    MERCHANT_ASSET: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
    MERCHANT_ASSET_NAME: 'USDC',
    MERCHANT_ASSET_VERSION: '2',
    MERCHANT_PAY_TO: '0xCdaF545f03D8dA01C298d8604f29d4c80493f6b2',
    MERCHANT_SUBSCRIPTION_PLAN_ID: '4b0d6f3e-8c1a-4e55-9a7b-2f4c6d8e0a13',
    LEDGER_URL: 'http://127.0.0.1:4030',
    FACILITATOR_API_KEY: 'mpk_example',
    MERCHANT_BATCH_PRICE: '1000',
    MERCHANT_PREPAID_TOP_UP_AMOUNT: '5000000',
  });
  return generateOpenApiJson(AppModule.forConfig(config), MERCHANT_AGENT_OPENAPI);
}
