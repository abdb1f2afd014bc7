import { BullModule } from '@nestjs/bullmq';
import { type DynamicModule, type InjectionToken, Module, type ModuleMetadata, type Provider, type Type } from '@nestjs/common';
import { ReportBuilder } from '../reports/report.builder';
import { ReportsController } from '../reports/reports.controller';
import { AssetDirectory } from './asset-directory';
import { ChainScanner } from './chain/chain-scanner';
import { LoggingBreakNotifier } from './logging-break-notifier';
import { RECON_CONFIG, type ReconciliationConfig } from './reconciliation.config';
import { ReconciliationController } from './reconciliation.controller';
import {
  LEDGER_SOURCE,
  RECON_BREAK_NOTIFIER,
  RECON_CLOCK,
  RECON_MERCHANT,
  type BreakNotifier,
  type LedgerSource,
  type MerchantResolver,
  type ReconClock,
} from './reconciliation.ports';
import { RECONCILIATION_JOB_OPTIONS, RECONCILIATION_QUEUE, ReconciliationQueue } from './reconciliation.queue';
import { ReconciliationRunner } from './reconciliation.runner';
import { ReconciliationProcessor, ReconciliationWorker } from './reconciliation.worker';
import { ReportLinks } from './report-links';
import { RunAccess } from './run-access';
import { RunRepository } from './run.repository';
import { StripeScanner } from '../stripe/stripe-scanner';

/** How a port is bound: a class, another provider, a factory or a value (Nest's provider forms without `provide`). */
export type Binding<T> =
  { useClass: Type<T> } | { useExisting: InjectionToken } | { useFactory: (...args: any[]) => T | Promise<T>; inject?: InjectionToken[] } | { useValue: T };

export interface ReconciliationModuleOptions {
  config: ReconciliationConfig;
  /** modules whose providers the bindings need */
  imports?: ModuleMetadata['imports'];
  ledgerSource: Binding<LedgerSource>;
  merchantResolver: Binding<MerchantResolver>;
  /** default: a warning in the log */
  breakNotifier?: Binding<BreakNotifier>;
  /** default: the wall clock */
  clock?: Binding<ReconClock>;
}

/**
 * Reconciliation of the ledger against the chain and Stripe: the API (POST/GET /reconciliations…, CSV and HTML
 * reports), the `reconciliation` queue with its worker and schedule. Needs PrismaService (the app's global DbModule).
 * Global, so that the rest of the ledger can describe assets (AssetDirectory: symbols and decimals) the way reports do.
 */
@Module({})
export class ReconciliationModule {
  static forRoot(options: ReconciliationModuleOptions): DynamicModule {
    const bind = <T>(provide: symbol, binding: Binding<T>) => ({ provide, ...binding }) as Provider;
    return {
      module: ReconciliationModule,
      global: true,
      imports: [
        ...(options.imports ?? []),
        // on the app's QueueModule (its connection and prefix)
        BullModule.registerQueue({ name: RECONCILIATION_QUEUE, defaultJobOptions: RECONCILIATION_JOB_OPTIONS }),
      ],
      // ReportsController first: its `:id.csv` route must be matched before `:id`.
      controllers: [ReportsController, ReconciliationController],
      providers: [
        { provide: RECON_CONFIG, useValue: options.config },
        bind(LEDGER_SOURCE, options.ledgerSource),
        bind(RECON_MERCHANT, options.merchantResolver),
        bind(RECON_BREAK_NOTIFIER, options.breakNotifier ?? { useClass: LoggingBreakNotifier }),
        bind(RECON_CLOCK, options.clock ?? { useValue: { now: () => new Date() } }),
        ChainScanner,
        AssetDirectory,
        StripeScanner,
        RunRepository,
        ReportLinks,
        RunAccess,
        ReconciliationQueue,
        ReconciliationRunner,
        ReconciliationWorker,
        // RECON_WORKER: this process takes reconciliation jobs
        ...(options.config.worker ? [ReconciliationProcessor] : []),
        ReportBuilder,
      ],
      exports: [ReconciliationRunner, ReconciliationWorker, RunRepository, AssetDirectory],
    };
  }
}
