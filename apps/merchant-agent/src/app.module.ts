import { type DynamicModule, Module } from '@nestjs/common';
import { MERCHANT_CONFIG, type MerchantConfig } from './merchant.config';
import { HealthController } from './health/health.controller';
import { ForecastController } from './paid-http/forecast.controller';

@Module({})
export class AppModule {
  static forConfig(config: MerchantConfig): DynamicModule {
    return {
      module: AppModule,
      controllers: [HealthController, ForecastController],
      providers: [{ provide: MERCHANT_CONFIG, useValue: config }],
    };
  }
}
