import 'reflect-metadata';
import { ConfigError, createHttpApp, createLogger, listen } from '@mp/platform';
import { AppModule } from './app.module';
import { loadMerchantConfig } from './merchant.config';
import { createMcpHandler } from './mcp/mcp-handler';
import { createMppPaywall } from './mpp/mpp-paywall';
import { createPaywall } from './paid-http/paywall';

async function main(): Promise<void> {
  const logger = createLogger('merchant-agent');
  const config = loadMerchantConfig();
  const app = await createHttpApp(AppModule.forConfig(config), { logger });
  app.use(createPaywall(config));
  app.use('/mcp', createMcpHandler(config));
  app.use(createMppPaywall(config));
  await listen(app, config.port, config.host, 'merchant-agent');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else createLogger('merchant-agent').fatal('the merchant agent stopped', error instanceof Error ? error.stack : String(error));
  process.exit(1);
});
