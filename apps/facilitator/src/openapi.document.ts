import path from 'node:path';
import { generateOpenApiJson } from '@mp/platform';
import { AppModule } from './app.module';
import { loadFacilitatorConfig } from './config/facilitator.config';
import { FACILITATOR_OPENAPI } from './openapi';

/**
 * docs/api/facilitator.openapi.json as `npm run docs:openapi` writes it (run from the repository root). The routes do
 * not depend on the configuration; the example networks file with placeholder keys only lets the module load
 * without a chain.
 */
export function facilitatorOpenApiJson(): Promise<string> {
  const placeholderKey = `0x${'11'.repeat(32)}`;
  const config = loadFacilitatorConfig({
    FACILITATOR_NETWORKS_FILE: path.resolve('docs/examples/networks.base-sepolia.json'),
    BASE_SEPOLIA_SIGNER_KEY_1: placeholderKey,
    BASE_SEPOLIA_SIGNER_KEY_2: `0x${'22'.repeat(32)}`,
  });
  return generateOpenApiJson(AppModule.forConfig(config), FACILITATOR_OPENAPI);
}
