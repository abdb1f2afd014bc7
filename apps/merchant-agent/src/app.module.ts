import { type DynamicModule, Inject, Module, type OnModuleInit } from '@nestjs/common';
import { httpCheck, ObservabilityModule, Readiness } from '@mp/platform';
import { MERCHANT_CONFIG, type MerchantConfig } from './merchant.config';
import { HealthController } from './health/health.controller';
import { ForecastController } from './paid-http/forecast.controller';
import { DiscoveryController } from './mpp/discovery.controller';
import { MppForecastController } from './mpp/mpp-forecast.controller';

@Module({})
export class AppModule implements OnModuleInit {
  static forConfig(config: MerchantConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [ObservabilityModule.forRoot({ service: 'merchant-agent' })],
      controllers: [HealthController, ForecastController, MppForecastController, DiscoveryController],
      providers: [{ provide: MERCHANT_CONFIG, useValue: config }],
    };
  }

  constructor(
    @Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig,
    private readonly readiness: Readiness,
  ) {}

  /** GET /ready: the facilitator answers its /health (the paywall cannot verify or settle without it). */
  onModuleInit(): void {
    this.readiness.register('facilitator', httpCheck(new URL('/health', this.config.facilitatorUrl).toString()));
  }
}
