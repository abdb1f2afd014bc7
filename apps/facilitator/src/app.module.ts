import { type DynamicModule, Module } from '@nestjs/common';
import { DbModule } from '@mp/db';
import { FACILITATOR_CONFIG, type FacilitatorConfig } from './config/facilitator.config';
import { HealthController } from './health/health.controller';
import { NetworksModule } from './networks/networks.module';
import { X402Module } from './x402/x402.module';

@Module({})
export class AppModule {
  static forConfig(config: FacilitatorConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [DbModule.forRoot({ url: config.databaseUrl, poolSize: config.databasePoolSize, applicationName: 'facilitator' }), NetworksModule, X402Module],
      controllers: [HealthController],
      providers: [{ provide: FACILITATOR_CONFIG, useValue: config }],
      exports: [FACILITATOR_CONFIG],
    };
  }
}
