import 'reflect-metadata';
import { ConfigError, createHttpApp, createLogger, listen, privateKeyForms, registerLogSecrets, urlSecrets } from '@mp/platform';
import { AppModule } from './app.module';
import { loadFacilitatorConfig } from './config/facilitator.config';

async function main(): Promise<void> {
  const logger = createLogger('facilitator');
  const config = loadFacilitatorConfig();
  // Whatever a library puts in an error message, these never reach the log.
  registerLogSecrets([
    ...config.networks.flatMap((n) => [...n.signerKeys.flatMap(privateKeyForms), ...n.rpcUrls.flatMap(urlSecrets)]),
    ...urlSecrets(config.databaseUrl),
    ...urlSecrets(config.redisUrl),
  ]);
  const app = await createHttpApp(AppModule.forConfig(config), { bodyLimitBytes: config.bodyLimitBytes, logger });
  await listen(app, config.port, config.host, 'facilitator');
}

main().catch((error: unknown) => {
  if (error instanceof ConfigError) console.error(error.message);
  else createLogger('facilitator').fatal('the facilitator stopped', error instanceof Error ? error.stack : String(error));
  process.exit(1);
});
