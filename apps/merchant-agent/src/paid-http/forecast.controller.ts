import { Controller, Get } from '@nestjs/common';

/** The resource for sale. Reaching this handler means the paywall verified the payment; it settles after we answer. */
@Controller('paid')
export class ForecastController {
  @Get('forecast')
  forecast() {
    return {
      location: 'Lisbon',
      issuedAt: new Date().toISOString(),
      hours: [
        { in: 1, tempC: 19, sky: 'clear' },
        { in: 2, tempC: 18, sky: 'clear' },
        { in: 3, tempC: 17, sky: 'cloudy' },
      ],
    };
  }
}
