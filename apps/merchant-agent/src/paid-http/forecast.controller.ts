import { Controller, Get } from '@nestjs/common';
import { forecastFor } from './forecast';

/** The resource for sale. Reaching this handler means the paywall verified the payment; it settles after we answer. */
@Controller('paid')
export class ForecastController {
  @Get('forecast')
  forecast() {
    return forecastFor('Lisbon');
  }
}
