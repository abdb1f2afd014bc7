import type { RequestHandler } from 'express';
import { BatchSettlementEvmScheme, type BatchSettlementChannelManager } from '@x402/evm/batch-settlement/server';
import { FileChannelStorage } from '@x402/evm/batch-settlement/server/file-storage';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { Logger } from '@nestjs/common';
import type { BatchSettlementConfig, MerchantConfig } from '../merchant.config';
import { facilitatorClient } from './paywall';

export const PAID_METERED_FORECAST_ROUTE = '/paid/metered-forecast';

export interface BatchPaywall {
  middleware: RequestHandler;
  /** The official channel manager: claims the vouchers it holds and settles the claimed total to the merchant. */
  channels: BatchSettlementChannelManager;
  /** Stops the settle timer after one last claim and settle (the vouchers are kept either way). */
  close(): Promise<void>;
}

/**
 * The official @x402/express middleware for x402 `batch-settlement` in front of GET /paid/metered-forecast, settling
 * through our facilitator (which sends the transactions and, as receiverAuthorizer, signs the claims). A payer's first
 * call deposits into a channel; every later call is a voucher the official server scheme checks and keeps in
 * MERCHANT_BATCH_STORAGE_DIR; nothing goes on chain per call. Every MERCHANT_BATCH_SETTLE_EVERY_SECONDS the official
 * channel manager claims the vouchers and settles the claimed total to the merchant's address.
 */
export function createBatchPaywall(config: MerchantConfig & { batchSettlement: BatchSettlementConfig }): BatchPaywall {
  const { batchSettlement: batch, price } = config;
  const receiver = price.payTo as `0x${string}`;
  const { facilitator, scheme, channels } = batchChannels(config);
  const server = new x402ResourceServer(facilitator).register(price.network, scheme);
  const middleware = paymentMiddleware(
    {
      [`GET ${PAID_METERED_FORECAST_ROUTE}`]: {
        accepts: {
          scheme: 'batch-settlement',
          network: price.network,
          payTo: receiver,
          price: {
            amount: batch.price,
            asset: price.asset,
            extra: { name: price.eip712.name, version: price.eip712.version, minDeposit: batch.minDeposit },
          },
          maxTimeoutSeconds: 120,
        },
        description: 'A machine-readable weather forecast, paid per call from one deposit',
        mimeType: 'application/json',
      },
    },
    server,
  );
  if (batch.settleEverySeconds > 0) {
    const logger = new Logger('BatchSettlement');
    channels.start({
      claimIntervalSecs: batch.settleEverySeconds,
      settleIntervalSecs: batch.settleEverySeconds,
      onClaim: (r) => logger.log(`claimed ${r.vouchers} voucher(s) in ${r.transaction}`),
      onSettle: (r) => logger.log(`settled the claimed total to ${receiver} in ${r.transaction}`),
      // the vouchers stay in storage: the next round claims them
      onError: (error) => logger.warn(`claim or settle failed (tried again next round): ${(error as Error).message}`),
    });
  }
  return { middleware, channels, close: () => channels.stop({ flush: batch.settleEverySeconds > 0 }) };
}

/**
 * The official server scheme over the channels kept in MERCHANT_BATCH_STORAGE_DIR, and its channel manager: the
 * paywall's, or a one-off claim and settle from another process (the file storage locks across processes).
 */
export function batchChannels(config: MerchantConfig & { batchSettlement: BatchSettlementConfig }) {
  const { batchSettlement: batch, price } = config;
  const facilitator = facilitatorClient(config);
  const scheme = new BatchSettlementEvmScheme(price.payTo as `0x${string}`, {
    withdrawDelay: batch.withdrawDelaySeconds,
    storage: new FileChannelStorage({ directory: batch.storageDir }),
  });
  const channels = scheme.createChannelManager(facilitator, price.network, price.asset as `0x${string}`);
  return { facilitator, scheme, channels };
}
