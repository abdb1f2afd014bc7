import 'reflect-metadata';
import { ConfigError, createHttpApp, listen } from '@mp/platform';
import { AppModule } from './app.module';
import { loadMerchantConfig } from './merchant.config';
import { createPaywall } from './paid-http/paywall';

async function main(): Promise<void> {
  const config = loadMerchantConfig();
  const app = await createHttpApp(AppModule.forConfig(config));
  app.use(createPaywall(config));
  await listen(app, config.port, config.host, 'merchant-agent');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
