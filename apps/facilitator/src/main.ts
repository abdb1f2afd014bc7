import 'reflect-metadata';
import { createHttpApp, listen, ConfigError } from '@mp/platform';
import { AppModule } from './app.module';
import { loadFacilitatorConfig } from './config/facilitator.config';

async function main(): Promise<void> {
  const config = loadFacilitatorConfig();
  const app = await createHttpApp(AppModule.forConfig(config), { bodyLimitBytes: config.bodyLimitBytes });
  await listen(app, config.port, config.host, 'facilitator');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
