import { Controller, Get } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { ProblemError } from '@mp/platform';

@Controller('health')
export class HealthController {
  constructor(private readonly db: PrismaService) {}

  @Get()
  async health() {
    try {
      await this.db.$queryRawUnsafe('SELECT 1');
      return { status: 'ok', checks: { database: 'ok' } };
    } catch (error) {
      const checks = { database: `down: ${(error as Error).message}` };
      throw new ProblemError('upstream_unavailable', 'degraded: database unavailable', { health: 'degraded', checks });
    }
  }
}
