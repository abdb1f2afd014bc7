import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DefaultExecutionEventBus, ResultManager, ServerCallContext, type AgentExecutionEvent } from '@a2a-js/sdk/server';
import { MERCHANT_CONFIG, type MerchantConfig } from '../../merchant.config';
import { PgTaskStore } from '../pg-task-store';
import { TaskTurn } from '../task-turn';
import { X402_EXTENSION_URIS } from './extension';
import { PaymentFlow } from './payment-flow';
import { TaskPayments } from './payment.repository';

/** Settling payments one sweep takes at most. */
const ROUND = 20;

/**
 * Finishes the tasks whose settlement outcome the facilitator could not tell when they were paid (payment `settling`,
 * task working): every MERCHANT_A2A_SETTLE_RETRY_MS it asks again about each, and once the outcome is known the task
 * completes (artifacts and receipt) or fails, written to the task store as the SDK writes an execution's events. The
 * state is in PostgreSQL, so a restart or another replica picks them up.
 */
@Injectable()
export class PendingSettlements implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('A2A');
  private timer?: NodeJS.Timeout;
  private running?: Promise<number>;

  constructor(
    @Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig,
    private readonly payments: TaskPayments,
    private readonly flow: PaymentFlow,
    private readonly tasks: PgTaskStore,
  ) {}

  onApplicationBootstrap(): void {
    const every = this.config.a2a.settleRetryMs;
    if (every <= 0) return;
    this.timer = setInterval(() => void this.sweep().catch((error: unknown) => this.logger.warn(`pending settlements: ${(error as Error).message}`)), every);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One sweep (none while another runs in this process); returns how many tasks it finished. */
  sweep(): Promise<number> {
    if (this.running) return Promise.resolve(0);
    this.running = this.finishDue().finally(() => (this.running = undefined));
    return this.running;
  }

  private async finishDue(): Promise<number> {
    let finished = 0;
    for (const payment of await this.payments.takeSettling(this.config.a2a.settleRetryMs, ROUND)) {
      const scope = await this.tasks.scopeOf(payment.taskId);
      if (!scope || !payment.payload) continue;
      const events: AgentExecutionEvent[] = [];
      const bus = new DefaultExecutionEventBus().on('event', (event) => void events.push(event));
      const turn = new TaskTurn({ id: payment.taskId, contextId: scope.contextId, history: [], metadata: {} }, bus, [X402_EXTENSION_URIS.v02]);
      if (!(await this.flow.followUp(turn, payment, payment.payload))) continue;
      const results = new ResultManager(this.tasks.within(scope), new ServerCallContext({ tenant: scope.tenant }));
      for (const event of events) await results.processEvent(event);
      this.logger.log(`task ${payment.taskId}: its settlement is known now; the task is ${events.some((e) => e.kind === 'artifactUpdate') ? 'completed' : 'failed'}`);
      finished++;
    }
    return finished;
  }
}
