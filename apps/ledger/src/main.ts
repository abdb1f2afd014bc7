import './tracing';
import 'reflect-metadata';
import { ConfigError, createHttpApp, createLogger, listen, registerLogSecrets, serveHotRoutes, urlSecrets } from '@mp/platform';
import { AppModule } from './app.module';
import { transfersHotRoutes } from './http/transfers.hot-routes';
import { loadLedgerConfig } from './ledger.config';

async function main(): Promise<void> {
  const logger = createLogger('ledger');
  const config = loadLedgerConfig();
  registerLogSecrets([...urlSecrets(config.databaseUrl), ...urlSecrets(config.redisUrl)]);
  const app = await createHttpApp(AppModule.forConfig(config), { bodyLimitBytes: config.bodyLimitBytes, trustProxy: config.trustProxy, logger });
  serveHotRoutes(app, transfersHotRoutes(app), { bodyLimitBytes: config.bodyLimitBytes });
  await listen(app, config.port, config.host, 'ledger');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else createLogger('ledger').fatal('the ledger stopped', error instanceof Error ? error.stack : String(error));
  process.exit(1);
});
