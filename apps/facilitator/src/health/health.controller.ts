import { Controller, Get } from '@nestjs/common';
import { PrismaService } from '@mp/db';
import { ProblemError } from '@mp/platform';
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
    const down = Object.entries(checks).filter(([, v]) => !v.startsWith('ok')).map(([name]) => name);
    if (down.length) throw new ProblemError('upstream_unavailable', `degraded: ${down.join(', ')} unavailable`, { health: 'degraded', checks });
    return { status: 'ok', checks };
  }
}
