import type { MppTerms } from '@mp/clients';
import type { MerchantConfig } from '../../merchant.config';

export const FORECAST_STREAM_ROUTE = '/mpp/forecast/stream';
/** what `opaque.resource` binds: the open (GET) and the vouchers, top-ups and close (POST) of one stream share it */
export const FORECAST_STREAM_RESOURCE = 'mpp/forecast/stream';
export const FORECAST_STREAM_UNIT = 'forecast_hour';

/** The session offer of the metered forecast stream: a price per forecast hour, paid by cumulative vouchers on a channel. */
export function sessionTerms(config: MerchantConfig): MppTerms {
  const { session, realm } = config.mpp;
  return {
    realm,
    offers: [
      {
        method: 'evm',
        intent: 'session',
        request: {
          amount: session.unitPrice,
          currency: config.price.asset,
          recipient: config.price.payTo,
          unitType: FORECAST_STREAM_UNIT,
          suggestedDeposit: session.suggestedDeposit,
          methodDetails: { chainId: Number(config.price.network.split(':')[1]) },
        },
      },
    ],
    opaque: { resource: FORECAST_STREAM_RESOURCE },
  };
}
