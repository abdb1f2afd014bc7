import { type BeforeApplicationShutdown, Inject, Injectable, Logger, type OnApplicationBootstrap } from '@nestjs/common';
import { DefaultExecutionEventBus, ResultManager, ServerCallContext, type AgentExecutionEvent } from '@a2a-js/sdk/server';
import { MERCHANT_CONFIG, type MerchantConfig } from '../../merchant.config';
import { PgTaskStore } from '../pg-task-store';
import { TaskTurn } from '../task-turn';
import { X402_EXTENSION_URIS } from './extension';
import { PaymentFlow, PaymentMovedError } from './payment-flow';
import { TaskPayments } from './payment.repository';

/** Payments of each kind one sweep takes at most. */
const ROUND = 20;

/**
 * Finishes the tasks whose payment no live turn will finish, every MERCHANT_A2A_SETTLE_RETRY_MS and once at boot:
 * - payments left `submitted` or `verified` longer than MERCHANT_A2A_RECOVER_AFTER_MS (the agent stopped in the middle
 *   of their turn): taken (moved to `settling`, one replica only) and settled with the authorization they were paid
 *   with; one without a usable authorization has its attempt failed, and the buyer may pay again;
 * - payments `settling` (the facilitator could not tell the outcome): asked about again.
 * Once the outcome is known the task completes (artifacts and receipt) or fails, written to the task store as the SDK
 * writes an execution's events. The state is in PostgreSQL, so a restart or another replica picks them up.
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
    const sweep = () => void this.sweep().catch((error: unknown) => this.logger.warn(`pending settlements: ${(error as Error).message}`));
    // At boot: what a stopped process left is finished now, not one period later.
    sweep();
    this.timer = setInterval(sweep, every);
    this.timer.unref();
  }

  async beforeApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.running?.catch(() => undefined);
  }

  /** One sweep (none while another runs in this process); returns how many tasks it finished or asked to pay again. */
  sweep(): Promise<number> {
    if (this.running) return Promise.resolve(0);
    this.running = this.finishDue().finally(() => (this.running = undefined));
    return this.running;
  }

  private async finishDue(): Promise<number> {
    const { recoverAfterMs, settleRetryMs } = this.config.a2a;
    let finished = 0;
    for (const payment of await this.payments.strandedAttempts(recoverAfterMs, ROUND)) {
      if (await this.inTask(payment.taskId, (turn) => this.flow.abandonAttempt(turn, payment).then(() => true))) {
        this.logger.warn(`task ${payment.taskId}: its payment was left submitted without a usable authorization; the attempt failed`);
        finished++;
      }
    }
    const stranded = await this.payments.takeStranded(recoverAfterMs, ROUND);
    for (const { taskId, strandedIn } of stranded) this.logger.warn(`task ${taskId}: its payment was left ${strandedIn} by a stopped turn; settling it`);
    const taken = new Set(stranded.map((payment) => payment.taskId));
    const settling = (await this.payments.takeSettling(settleRetryMs, ROUND)).filter((payment) => !taken.has(payment.taskId));
    for (const payment of [...stranded, ...settling]) {
      if (!payment.payload) continue;
      // One payment's trouble (the database away) leaves it settling for the next sweep, not the others behind it.
      const events = await this.inTask(payment.taskId, (turn) => this.flow.followUp(turn, payment, payment.payload)).catch((error: unknown) => {
        this.logger.warn(`task ${payment.taskId}: ${(error as Error).message}`);
        return undefined;
      });
      if (!events) continue;
      this.logger.log(
        `task ${payment.taskId}: its settlement is known now; the task is ${events.some((e) => e.kind === 'artifactUpdate') ? 'completed' : 'failed'}`,
      );
      finished++;
    }
    return finished;
  }

  /**
   * Runs `act` on a turn of the task outside any request, then writes what it published through the SDK's
   * ResultManager; the events, or undefined when `act` changed nothing (false) or another replica moved the payment.
   */
  private async inTask(taskId: string, act: (turn: TaskTurn) => Promise<boolean>): Promise<AgentExecutionEvent[] | undefined> {
    const scope = await this.tasks.scopeOf(taskId);
    if (!scope) return undefined;
    const events: AgentExecutionEvent[] = [];
    const bus = new DefaultExecutionEventBus().on('event', (event) => void events.push(event));
    const turn = new TaskTurn({ id: taskId, contextId: scope.contextId, history: [], metadata: {} }, bus, [X402_EXTENSION_URIS.v02]);
    try {
      if (!(await act(turn))) return undefined;
    } catch (error) {
      if (error instanceof PaymentMovedError) return undefined;
      throw error;
    }
    const results = new ResultManager(this.tasks.within(scope), new ServerCallContext({ tenant: scope.tenant }));
    for (const event of events) await results.processEvent(event);
    return events;
  }
}
