import { Controller, Get } from '@nestjs/common';

/** Liveness: the process runs and answers HTTP. Dependencies are checked by GET /ready. */
@Controller('health')
export class HealthController {
  @Get()
  health() {
    return { status: 'ok' };
  }
}
