import './tracing';
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ConfigError, configureHttpApp, createLogger, listen } from '@mp/platform';
import { mountA2a } from './a2a/mount-a2a';
import { AppModule } from './app.module';
import { loadMerchantConfig } from './merchant.config';
import { createMcpHandler } from './mcp/mcp-handler';
import { createMppPaywall } from './mpp/mpp-paywall';
import { createBatchPaywall } from './paid-http/batch-paywall';
import { createPaywall } from './paid-http/paywall';
import { createSubscriptionPaywall } from './subscriptions/subscription-paywall';

async function main(): Promise<void> {
  const logger = createLogger('merchant-agent');
  const config = loadMerchantConfig();
  const app = await NestFactory.create<NestExpressApplication>(AppModule.forConfig(config), { bodyParser: false, logger });
  mountA2a(app); // before the platform's JSON reader (see mountA2a)
  configureHttpApp(app);
  app.use(createPaywall(config));
  // the vouchers are kept on disk (MERCHANT_BATCH_STORAGE_DIR): what a stop leaves unclaimed, the next start claims
  if (config.batchSettlement) app.use(createBatchPaywall({ ...config, batchSettlement: config.batchSettlement }).middleware);
  app.use('/mcp', createMcpHandler(config));
  app.use(createMppPaywall(config));
  app.use(createSubscriptionPaywall(config));
  await listen(app, config.port, config.host, 'merchant-agent');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else createLogger('merchant-agent').fatal('the merchant agent stopped', error instanceof Error ? error.stack : String(error));
  process.exit(1);
});
