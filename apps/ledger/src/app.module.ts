import { type DynamicModule, Module } from '@nestjs/common';
import { DbModule } from '@mp/db';
import { HealthController } from './health/health.controller';
import { LEDGER_CONFIG, type LedgerConfig } from './ledger.config';

/** The ledger: for now it boots with its config and health; the double-entry core comes next (issue 5). */
@Module({})
export class AppModule {
  static forConfig(config: LedgerConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [DbModule.forRoot({ url: config.databaseUrl, poolSize: config.databasePoolSize, applicationName: 'ledger' })],
      controllers: [HealthController],
      providers: [{ provide: LEDGER_CONFIG, useValue: config }],
    };
  }
}
