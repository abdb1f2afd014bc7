import { Body, Controller, HttpCode, Post } from '@nestjs/common';
import { forecastFor } from '../paid-http/forecast';
import { ApiDoc } from '@mp/platform';
import { MPP_FORECAST_DOCS } from './mpp-forecast.openapi';

/** The MPP-paid resource. Reaching this handler means the MPP paywall has already settled the payment. */
@Controller('mpp')
export class MppForecastController {
  @ApiDoc(MPP_FORECAST_DOCS.forecast)
  @Post('forecast')
  @HttpCode(200)
  forecast(@Body() body: { city?: unknown } | undefined) {
    return forecastFor(typeof body?.city === 'string' ? body.city : 'Lisbon');
  }
}
