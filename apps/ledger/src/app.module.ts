import { type DynamicModule, Inject, Module, type OnModuleInit } from '@nestjs/common';
import { DbModule, PrismaService } from '@mp/db';
import { ObservabilityModule, QueueModule, Readiness, redisCheck } from '@mp/platform';
import { MerchantAuthGuard } from './auth/merchant-auth.guard';
import { MerchantAuthModule } from './auth/merchant-auth.module';
import { BalancesModule } from './balances/balances.module';
import { BillingModule } from './billing/billing.module';
import { ChannelBooksModule, ChannelsModule } from './channels/channels.module';
import { LedgerModule } from './core/ledger.module';
import { HealthController } from './health/health.controller';
import { LedgerHttpModule } from './http/ledger-http.module';
import { IngestionModule } from './ingestion/ingestion.module';
import { LedgerMcpModule } from './mcp/ledger-mcp.module';
import { BILLING_CLOCK } from './billing/billing.clock';
import { LEDGER_CONFIG, type LedgerConfig } from './ledger.config';
import { LedgerMetrics } from './ledger.metrics';
import { LedgerBookSource } from './reconciliation/ledger-book.source';
import { ReconciliationModule } from './reconciliation/reconciliation.module';
import { MerchantNoticesQueueModule, WebhookBreakNotifier } from './reconciliation/webhook-break-notifier';
import { LEDGER_OPENAPI } from './openapi';
import { UsageModule } from './usage/usage.module';

/**
 * The ledger: double-entry accounts and transfers over PostgreSQL, the facilitator's payments booked from its
 * events, reconciliation against the chain and Stripe, subscription plans, with health, readiness and metrics.
 */
@Module({})
export class AppModule implements OnModuleInit {
  static forConfig(config: LedgerConfig): DynamicModule {
    return {
      module: AppModule,
      global: true,
      imports: [
        DbModule.forRoot({ url: config.databaseUrl, poolSize: config.databasePoolSize, applicationName: 'ledger' }),
        ObservabilityModule.forRoot({ service: 'ledger', openapi: LEDGER_OPENAPI }),
        // every queue and worker of the ledger: one Redis connection factory, the prefix, one shutdown path
        QueueModule.forRootAsync({ inject: [LEDGER_CONFIG], useFactory: ({ redisUrl, queuePrefix }: LedgerConfig) => ({ redisUrl, queuePrefix }) }),
        LedgerHttpModule,
        LedgerMcpModule,
        BillingModule,
        BalancesModule,
        UsageModule,
        IngestionModule.forRoot({ consume: config.ingest }),
        ChannelsModule.forRoot({ consume: config.ingest }),
        ReconciliationModule.forRoot({
          config: config.reconciliation,
          imports: [MerchantAuthModule, LedgerModule, MerchantNoticesQueueModule, BillingModule, ChannelBooksModule],
          ledgerSource: { useClass: LedgerBookSource },
          merchantResolver: { useExisting: MerchantAuthGuard },
          breakNotifier: { useClass: WebhookBreakNotifier },
          // the ledger's clock (CLOCK_RPC_URL in development), so a run's "now" is the subscriptions' too
          clock: { useExisting: BILLING_CLOCK },
        }),
      ],
      controllers: [HealthController],
      providers: [{ provide: LEDGER_CONFIG, useValue: config }, LedgerMetrics],
      exports: [LEDGER_CONFIG, LedgerMetrics],
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
