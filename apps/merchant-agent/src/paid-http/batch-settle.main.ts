import 'reflect-metadata';
import { ConfigError } from '@mp/platform';
import { loadMerchantConfig } from '../merchant.config';
import { batchChannels } from './batch-paywall';

/**
 * `node dist/.../paid-http/batch-settle.main.js`: claims every voucher the agent holds for GET /paid/metered-forecast
 * (MERCHANT_BATCH_STORAGE_DIR) and settles the claimed total to the merchant, now, through the facilitator; prints
 * `{claims: [{vouchers, transaction}], settle?: {transaction}}`. What the agent does by itself every
 * MERCHANT_BATCH_SETTLE_EVERY_SECONDS, for an operator (or a scheduler of its own) to run, with the agent's environment.
 */
async function main(): Promise<void> {
  const config = loadMerchantConfig();
  if (!config.batchSettlement) throw new ConfigError(['MERCHANT_BATCH_PRICE: not set, so the agent sells nothing with batch-settlement']);
  const { channels } = batchChannels({ ...config, batchSettlement: config.batchSettlement });
  console.log(JSON.stringify(await channels.claimAndSettle()));
}

main().catch((error: unknown) => {
  console.error('claim and settle failed:', error instanceof Error ? error.message : error);
  process.exit(1);
});
