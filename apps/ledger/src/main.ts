import 'reflect-metadata';
import { ConfigError, createHttpApp, listen } from '@mp/platform';
import { AppModule } from './app.module';
import { loadLedgerConfig } from './ledger.config';

async function main(): Promise<void> {
  const config = loadLedgerConfig();
  const app = await createHttpApp(AppModule.forConfig(config));
  await listen(app, config.port, config.host, 'ledger');
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error);
  process.exit(1);
});
