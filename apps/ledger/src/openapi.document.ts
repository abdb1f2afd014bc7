import { generateOpenApiJson } from '@mp/platform';
import { AppModule } from './app.module';
import { loadLedgerConfig } from './ledger.config';
import { LEDGER_OPENAPI } from './openapi';

/** docs/api/ledger.openapi.json as `npm run docs:openapi` writes it (the routes do not depend on the configuration). */
export function ledgerOpenApiJson(): Promise<string> {
  return generateOpenApiJson(AppModule.forConfig(loadLedgerConfig({})), LEDGER_OPENAPI);
}
