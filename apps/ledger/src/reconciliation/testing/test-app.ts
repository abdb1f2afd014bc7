import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Request } from 'express';
import { DbModule } from '@mp/db';
import { configureHttpApp, ProblemError } from '@mp/platform';
import { loadReconciliationConfig, type ReconciliationConfig } from '../reconciliation.config';
import { ReconciliationModule } from '../reconciliation.module';
import type { BreakNotice, BreakNotifier, LedgerSource, MerchantResolver } from '../reconciliation.ports';

/** For tests: API keys known up front, presented as the ledger's are (`Authorization: Bearer …` or `X-API-Key`). */
export class StaticMerchantResolver implements MerchantResolver {
  constructor(private readonly keys: Map<string, string>) {}

  async merchantOf(request: Request): Promise<string> {
    const bearer = /^Bearer\s+(\S+)$/i.exec(request.headers.authorization ?? '')?.[1];
    const key = bearer ?? request.headers['x-api-key'];
    const merchant = typeof key === 'string' ? this.keys.get(key) : undefined;
    if (!merchant) throw new ProblemError('unauthorized', 'a valid API key is required (Authorization: Bearer <key> or X-API-Key)');
    return merchant;
  }
}

/** For tests: keeps every notice. */
export class RecordingNotifier implements BreakNotifier {
  readonly notices: BreakNotice[] = [];

  async notify(notice: BreakNotice): Promise<void> {
    this.notices.push(notice);
  }
}

export interface RunningReconciliation {
  url: string;
  app: INestApplication;
  config: ReconciliationConfig;
  close(): Promise<void>;
}

/** The ReconciliationModule alone, as the ledger app mounts it, on a free port. */
export async function startReconciliationApp(options: { env: NodeJS.ProcessEnv; source: LedgerSource; keys: Map<string, string>; notifier?: BreakNotifier }): Promise<RunningReconciliation> {
  const config = loadReconciliationConfig(options.env);
  const moduleRef = await Test.createTestingModule({
    imports: [
      DbModule.forRoot({ url: options.env.DATABASE_URL, poolSize: 4, applicationName: 'ledger-reconciliation-test' }),
      ReconciliationModule.forRoot({
        config,
        ledgerSource: { useValue: options.source },
        merchantResolver: { useValue: new StaticMerchantResolver(options.keys) },
        ...(options.notifier && { breakNotifier: { useValue: options.notifier } }),
      }),
    ],
  }).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error', 'warn'] });
  configureHttpApp(app);
  await app.listen(0, '127.0.0.1');
  const { port } = app.getHttpServer().address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, app, config, close: () => app.close() };
}

