import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { PrismaService } from '@mp/db';
import { configureHttpApp, serveHotRoutes } from '@mp/platform';
import { transfersHotRoutes } from '../../apps/ledger/src/http/transfers.hot-routes';
import type { Clock } from '@mp/billing';
import { AppModule } from '../../apps/ledger/src/app.module';
import { BILLING_CLOCK } from '../../apps/ledger/src/billing/billing.clock';
import { LedgerService } from '../../apps/ledger/src/core/ledger.service';
import { loadLedgerConfig, type LedgerConfig } from '../../apps/ledger/src/ledger.config';

export const TEST_DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';

export interface RunningLedger {
  url: string;
  app: INestApplication;
  config: LedgerConfig;
  ledger: LedgerService;
  db: PrismaService;
  close(): Promise<void>;
}

/**
 * Boots the real ledger app on a free port against the test database. Ingestion, the reconciliation schedule and the
 * renewal scan are off unless a test turns them on (LEDGER_INGEST, RECON_SCHEDULE, RENEWAL_SCAN_EVERY_MS): other
 * tests' payment events and subscriptions stay out of its way. `clock`: the billing clock (a ManualClock a test moves).
 */
export async function startLedger(env: Record<string, string> = {}, options: { clock?: Clock } = {}): Promise<RunningLedger> {
  const config = loadLedgerConfig({
    ...process.env,
    DATABASE_URL: TEST_DATABASE_URL,
    LOG_LEVEL: 'error',
    DATABASE_POOL_SIZE: '4',
    LEDGER_INGEST: 'false',
    RECON_SCHEDULE: 'off',
    RENEWAL_SCAN_EVERY_MS: '0',
    ...env,
  });
  const builder = Test.createTestingModule({ imports: [AppModule.forConfig(config)] });
  const moduleRef = await (options.clock ? builder.overrideProvider(BILLING_CLOCK).useValue(options.clock) : builder).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  configureHttpApp(app, { bodyLimitBytes: config.bodyLimitBytes, trustProxy: config.trustProxy });
  serveHotRoutes(app, transfersHotRoutes(app), { bodyLimitBytes: config.bodyLimitBytes });
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, app, config, ledger: app.get(LedgerService), db: app.get(PrismaService), close: () => app.close() };
}

/** A merchant id of its own for each test: merchants never see each other's accounts, so tests never collide. */
export const newMerchant = () => randomUUID();
