import { type DynamicModule, Inject, Module, type OnModuleInit } from '@nestjs/common';
import { DbModule, PrismaService } from '@mp/db';
import { FacilitatorMetrics, Metrics, ObservabilityModule, QueueModule, Readiness, redisCheck } from '@mp/platform';
import { AdminModule } from './admin/admin.module';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from './config/facilitator.config';
import { HealthController } from './health/health.controller';
import { MerchantsModule } from './merchants/merchants.module';
import { MppModule } from './mpp/mpp.module';
import { NetworkRegistry } from './networks/network-registry';
import { NetworksModule } from './networks/networks.module';
import { RefundsModule } from './refunds/refunds.module';
import { FacilitatorWorkersModule } from './workers.module';
import { X402Module } from './x402/x402.module';
import { FACILITATOR_OPENAPI } from './openapi';

/** FACILITATOR_ROLE worker and all run the background work; api only answers HTTP. */
export function runsWorkers(config: Pick<FacilitatorConfig, 'role'>): boolean {
  return config.role === 'worker' || config.role === 'all';
}

@Module({})
export class AppModule implements OnModuleInit {
  static forConfig(config: FacilitatorConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        DbModule.forRoot({ url: config.databaseUrl, poolSize: config.databasePoolSize, applicationName: 'facilitator' }),
        ObservabilityModule.forRoot({ service: 'facilitator', openapi: FACILITATOR_OPENAPI }),
        // every queue, worker and Redis client of the facilitator: one Redis connection factory, the prefix, one shutdown path
        QueueModule.forRootAsync({ inject: [FACILITATOR_CONFIG], useFactory: ({ redisUrl, queuePrefix }: FacilitatorConfig) => ({ redisUrl, queuePrefix }) }),
        NetworksModule,
        MerchantsModule,
        X402Module,
        MppModule,
        RefundsModule,
        AdminModule.forConfig(config),
        // Roles compose modules: an api process does not import the workers, so none of their providers exist there.
        ...(runsWorkers(config) ? [FacilitatorWorkersModule.forConfig(config)] : []),
      ],
      controllers: [HealthController],
      providers: [
        { provide: FACILITATOR_CONFIG, useValue: config },
        {
          provide: FacilitatorMetrics,
          inject: [Metrics, NetworkRegistry],
          // Labels name configured networks only (CAIP-2, v1 names mapped); anything a client invents is "unknown".
          useFactory: (metrics: Metrics, networks: NetworkRegistry) =>
            new FacilitatorMetrics(metrics, { resolveNetwork: (n) => networks.resolve(n, 1)?.config.network }),
        },
      ],
      exports: [FACILITATOR_CONFIG, FacilitatorMetrics],
    };
  }

  constructor(
    @Inject(FACILITATOR_CONFIG) private readonly config: FacilitatorConfig,
    private readonly readiness: Readiness,
    private readonly db: PrismaService,
    private readonly networks: NetworkRegistry,
    private readonly metrics: FacilitatorMetrics,
  ) {}

  /** GET /ready: the database, Redis and every chain RPC; signer balances are read when /metrics is scraped. */
  onModuleInit(): void {
    this.readiness.register('database', async () => {
      await this.db.$queryRawUnsafe('SELECT 1');
    });
    this.readiness.register('redis', redisCheck(this.config.redisUrl));
    for (const network of this.networks.all()) {
      this.readiness.register(network.config.network, async () => `block ${await network.client.getBlockNumber()}`);
    }
    this.metrics.trackSignerBalances(
      this.networks
        .all()
        .flatMap((network) =>
          network.signers.addresses.map((signer) => ({ network: network.config.network, signer, read: () => network.client.getBalance({ address: signer }) })),
        ),
    );
  }
}
