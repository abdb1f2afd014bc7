import { Controller, Get } from '@nestjs/common';
import { forecastFor } from './forecast';
import { ApiDoc } from '@mp/platform';
import { FORECAST_DOCS } from './forecast.openapi';

/** The resource for sale. Reaching this handler means the paywall verified the payment; it settles after we answer. */
@Controller('paid')
export class ForecastController {
  @ApiDoc(FORECAST_DOCS.forecast)
  @Get('forecast')
  forecast() {
    return forecastFor('Lisbon');
  }
}
