import { Controller, Get } from '@nestjs/common';
import { ApiDoc } from '@mp/platform';
import { forecastFor } from './forecast';
import { METERED_FORECAST_DOCS } from './metered-forecast.openapi';

/** The resource sold per call from one deposit (x402 batch-settlement); the batch paywall verified the voucher. */
@Controller('paid')
export class MeteredForecastController {
  @ApiDoc(METERED_FORECAST_DOCS.meteredForecast)
  @Get('metered-forecast')
  meteredForecast() {
    return forecastFor('Lisbon');
  }
}
