import type { OperationDoc } from '@mp/platform';
import { FORECAST_DOCS } from './forecast.openapi';

const { parameters, responses } = FORECAST_DOCS.forecast;

/** What the OpenAPI document says about MeteredForecastController's route (see @ApiDoc). */
export const METERED_FORECAST_DOCS = {
  meteredForecast: {
    operationId: 'getPaidMeteredForecast',
    summary: 'A paid resource, per call from one deposit: a weather forecast for MERCHANT_BATCH_PRICE atomic units (x402 batch-settlement)',
    description:
      "Served only with MERCHANT_BATCH_PRICE set. Guarded by the official `@x402/express` `paymentMiddleware` with the official `@x402/evm` batch-settlement server scheme (x402 v2, `maxTimeoutSeconds` 120), settling through the facilitator at FACILITATOR_URL, which must serve `batch-settlement` (BATCH_SETTLEMENT_SENDER_KEY).\n\nFlow: a request without payment gets 402 with a PAYMENT-REQUIRED header whose `extra` carries the channel terms (`receiverAuthorizer`, `withdrawDelay`, `minDeposit`). The client's first payment is a deposit into its channel (an ERC-3009 authorization, settled on chain by the facilitator) with its first voucher; every later call carries only a signed voucher for the new cumulative total, checked here and kept in MERCHANT_BATCH_STORAGE_DIR (PAYMENT-RESPONSE `transaction` is then `\"\"`). A voucher that does not follow the channel's state gets a corrective 402 with `channelState` and `voucherState` in `extra`. The merchant claims the vouchers and settles the claimed total to its address every MERCHANT_BATCH_SETTLE_EVERY_SECONDS; a payer's refund request (the official client's `refund`) returns the unclaimed rest of its deposit.",
    parameters,
    responses,
  },
} satisfies Record<string, OperationDoc>;
