import { type DynamicModule, Inject, Module, type OnModuleInit } from '@nestjs/common';
import { DbModule, PrismaService } from '@mp/db';
import { httpCheck, ObservabilityModule, Readiness } from '@mp/platform';
import { MERCHANT_CONFIG, type MerchantConfig } from './merchant.config';
import { A2aModule } from './a2a/a2a.module';
import { HealthController } from './health/health.controller';
import { ForecastController } from './paid-http/forecast.controller';
import { MeteredForecastController } from './paid-http/metered-forecast.controller';
import { DiscoveryController } from './mpp/discovery.controller';
import { MppForecastController } from './mpp/mpp-forecast.controller';
import { MppTopUpController } from './mpp/mpp-top-up.controller';
import { ForecastStreamController } from './mpp/session/forecast-stream.controller';
import { VoucherSignals } from './mpp/session/voucher-signals';
import { MERCHANT_AGENT_OPENAPI } from './openapi';
import { BriefingController } from './subscriptions/briefing.controller';

@Module({})
export class AppModule implements OnModuleInit {
  static forConfig(config: MerchantConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        DbModule.forRoot({ url: config.databaseUrl, poolSize: config.databasePoolSize, applicationName: 'merchant-agent' }),
        ObservabilityModule.forRoot({ service: 'merchant-agent', openapi: MERCHANT_AGENT_OPENAPI, openapiAtRoot: false }),
        A2aModule.forConfig(config),
      ],
      controllers: [
        HealthController,
        ForecastController,
        ...(config.batchSettlement ? [MeteredForecastController] : []),
        MppForecastController,
        ...(config.prepaid ? [MppTopUpController] : []),
        ForecastStreamController,
        DiscoveryController,
        ...(config.subscription ? [BriefingController] : []),
      ],
      providers: [{ provide: MERCHANT_CONFIG, useValue: config }, VoucherSignals],
    };
  }

  constructor(
    @Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig,
    private readonly readiness: Readiness,
    private readonly db: PrismaService,
  ) {}

  /** GET /ready: the database (the A2A tasks) and the facilitator's /health (nothing is verified or settled without it). */
  onModuleInit(): void {
    this.readiness.register('database', async () => {
      await this.db.$queryRawUnsafe('SELECT 1');
    });
    this.readiness.register('facilitator', httpCheck(new URL('/health', this.config.facilitatorUrl).toString()));
  }
}
