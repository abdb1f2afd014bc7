import { Controller, Get, HttpException } from '@nestjs/common';
import { PrismaService } from '@mp/db';

@Controller('health')
export class HealthController {
  constructor(private readonly db: PrismaService) {}

  @Get()
  async health() {
    try {
      await this.db.$queryRawUnsafe('SELECT 1');
      return { status: 'ok', checks: { database: 'ok' } };
    } catch (error) {
      throw new HttpException({ status: 'degraded', checks: { database: `down: ${(error as Error).message}` } }, 503);
    }
  }
}
