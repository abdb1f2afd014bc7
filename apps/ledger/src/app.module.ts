import { type DynamicModule, Inject, Module, type OnModuleInit } from '@nestjs/common';
import { DbModule, PrismaService } from '@mp/db';
import { ObservabilityModule, Readiness, redisCheck } from '@mp/platform';
import { HealthController } from './health/health.controller';
import { LedgerHttpModule } from './http/ledger-http.module';
import { LEDGER_CONFIG, type LedgerConfig } from './ledger.config';

/** The ledger: double-entry accounts and transfers over PostgreSQL (issue 5), with health, readiness and metrics. */
@Module({})
export class AppModule implements OnModuleInit {
  static forConfig(config: LedgerConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        DbModule.forRoot({ url: config.databaseUrl, poolSize: config.databasePoolSize, applicationName: 'ledger' }),
        ObservabilityModule.forRoot({ service: 'ledger' }),
        LedgerHttpModule,
      ],
      controllers: [HealthController],
      providers: [{ provide: LEDGER_CONFIG, useValue: config }],
      exports: [LEDGER_CONFIG],
    };
  }

  constructor(
    @Inject(LEDGER_CONFIG) private readonly config: LedgerConfig,
    private readonly readiness: Readiness,
    private readonly db: PrismaService,
  ) {}

  /** GET /ready: the database and Redis. */
  onModuleInit(): void {
    this.readiness.register('database', async () => {
      await this.db.$queryRawUnsafe('SELECT 1');
    });
    this.readiness.register('redis', redisCheck(this.config.redisUrl));
  }
}
