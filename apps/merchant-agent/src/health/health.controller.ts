import { Controller, Get } from '@nestjs/common';
import { ApiDoc } from '@mp/platform';
import { HEALTH_DOCS } from './health.openapi';

/** Liveness: the process runs and answers HTTP. Dependencies are checked by GET /ready. */
@Controller('health')
export class HealthController {
  @ApiDoc(HEALTH_DOCS.health)
  @Get()
  health() {
    return { status: 'ok' };
  }
}
