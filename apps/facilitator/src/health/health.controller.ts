import { Controller, Get, HttpException } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { NetworkRegistry } from '../networks/network-registry';

/** Liveness plus a shallow readiness check of the database and every chain RPC. */
@Controller('health')
export class HealthController {
  constructor(
    private readonly db: PrismaService,
    private readonly networks: NetworkRegistry,
  ) {}

  @Get()
  async health() {
    const checks: Record<string, string> = {};
    await this.db.$queryRawUnsafe('SELECT 1').then(
      () => (checks.database = 'ok'),
      (e: Error) => (checks.database = `down: ${e.message}`),
    );
    await Promise.all(
      this.networks.all().map((n) =>
        n.client.getBlockNumber().then(
          (block) => (checks[n.config.network] = `ok (block ${block})`),
          (e: Error) => (checks[n.config.network] = `down: ${e.message.split('\n')[0]}`),
        ),
      ),
    );
    const ok = Object.values(checks).every((v) => v.startsWith('ok'));
    const body = { status: ok ? 'ok' : 'degraded', checks };
    if (!ok) throw new HttpException(body, 503);
    return body;
  }
}
