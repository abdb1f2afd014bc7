import { OPENAPI_CONVENTIONS, type OpenApiOptions, zodComponentSchemas } from '@mp/platform';
import { LEDGER_BATCH_SCHEMAS } from './http/requests';
import { COMPONENTS, WEBHOOKS } from './openapi.components';

/** What the ledger says about itself in its OpenAPI document; its routes say the rest (see @ApiDoc). */
export const LEDGER_OPENAPI: OpenApiOptions = {
  title: 'Ledger',
  version: '0.1.0',
  description: `${"Ledger: double-entry accounts and transfers with TigerBeetle's semantics on PostgreSQL, statements, subscription plans; scoped by merchant API key."}\n\n${OPENAPI_CONVENTIONS}`,
  components: {
    ...COMPONENTS,
    schemas: {
      ...COMPONENTS.schemas,
      // the batch items as the ledger parses them (http/requests.ts)
      ...zodComponentSchemas(LEDGER_BATCH_SCHEMAS),
    },
  },
  webhooks: WEBHOOKS,
};
