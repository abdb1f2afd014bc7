import { Inject, Injectable } from '@nestjs/common';
import { TaskState, type Message } from '@a2a-js/sdk';
import { AgentEvent, type AgentExecutor, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { MERCHANT_CONFIG, type MerchantConfig } from '../merchant.config';
import { A2A_REST_PATH } from './a2a-paths';
import { PgTaskStore } from './pg-task-store';
import { PrepaidFlow } from './prepaid-flow';
import { routeMessage, skillMenu, SKILLS, type Skill, type SkillRoute } from './skills';
import { MPP_METADATA, SUBSCRIBE_SKILL, SubscriptionFlow } from './subscription-flow';
import { agentMessage, taskStatus } from './task-events';
import { TaskTurn } from './task-turn';
import { activatedX402Uris, X402_METADATA } from './x402/extension';
import { paymentOffer } from './x402/offer';
import { PaymentFlow } from './x402/payment-flow';
import { TaskPayments } from './x402/payment.repository';

/**
 * The merchant's skills behind A2A. A message is routed to a skill (routeMessage); one that names none, or several,
 * opens a task that waits in input-required listing the skills, and its follow-up may name one. A free skill answers
 * with a message (or completes that task). A paid one waits in input-required for its x402 payment; the follow-up
 * messages on that task pay, decline or ask again (PaymentFlow). Whether the caller activated the x402 extension and
 * the input's length are checked before this runs (PaidSkillsRequestHandler), where it can still be answered with an
 * A2A error.
 */
@Injectable()
export class MerchantExecutor implements AgentExecutor {
  constructor(
    @Inject(MERCHANT_CONFIG) private readonly config: MerchantConfig,
    @Inject(SKILLS) private readonly skills: ReadonlyMap<string, Skill>,
    private readonly payments: TaskPayments,
    private readonly flow: PaymentFlow,
    private readonly tasks: PgTaskStore,
    private readonly subscriptions: SubscriptionFlow,
    private readonly prepaid: PrepaidFlow,
  ) {}

  async execute(ctx: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const extensions = activatedX402Uris(ctx.context.requestedExtensions);
    const route = routeMessage(ctx.userMessage, this.skills);
    if (!ctx.task) return this.start(ctx, route, bus, extensions);

    const turn = new TaskTurn(ctx.task, bus, extensions);
    const payment = await this.payments.find(ctx.task.id, ctx.context);
    if (!payment) {
      const waiting = ctx.task.status?.state === TaskState.TASK_STATE_INPUT_REQUIRED;
      // A subscribe task waits for its credential (no x402 payment row: MPP, settled by the facilitator once).
      if (ctx.task.metadata?.skill === SUBSCRIBE_SKILL) {
        if (waiting) return this.subscriptions.answer(turn, ctx.userMessage);
        return turn.reply('This subscribe task is closed: this message changed nothing.');
      }
      // A task without payment that waits for input is one waiting for its skill to be named.
      if (waiting) return this.chosen(turn, route, ctx.userMessage);
      return turn.reply('This task takes no payment and no further messages.');
    }
    switch (ctx.userMessage.metadata?.[X402_METADATA.status]) {
      case 'payment-submitted':
        return this.flow.submit(turn, payment, ctx.userMessage, ctx.context);
      case 'payment-rejected':
        return this.flow.reject(turn, payment);
      default:
        return this.flow.remind(turn, payment);
    }
  }

  /** Only a task waiting for its payment is ever canceled here (PaidSkillsRequestHandler holds the others back). */
  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const scope = { taskId, contextId: await this.tasks.contextIdOf(taskId) };
    bus.publish(
      AgentEvent.statusUpdate({
        ...scope,
        status: taskStatus(TaskState.TASK_STATE_CANCELED, agentMessage(scope, 'Canceled; nothing was charged.')),
        metadata: undefined,
      }),
    );
  }

  private async start(ctx: RequestContext, route: SkillRoute, bus: ExecutionEventBus, extensions: string[]): Promise<void> {
    if (route.kind === 'skill' && !route.skill.paid && !route.skill.subscription && !route.skill.metered) {
      bus.publish(AgentEvent.message(agentMessage({ taskId: '', contextId: ctx.contextId }, [route.skill.run(route.input).part], undefined, extensions)));
      return;
    }
    const task = { id: ctx.taskId, contextId: ctx.contextId, history: [ctx.userMessage], metadata: route.kind === 'skill' ? { skill: route.skill.id } : {} };
    return this.chosen(new TaskTurn(task, bus, extensions), route, ctx.userMessage);
  }

  /** A task's skill, as its message named it: the payment asked for, the free work done, or the skills listed again. */
  private async chosen(turn: TaskTurn, route: SkillRoute, message: Message): Promise<void> {
    if (route.kind === 'choose') {
      const menu = skillMenu(route, this.config.price);
      return turn.start(TaskState.TASK_STATE_INPUT_REQUIRED, menu.text, { skills: menu.skills });
    }
    const { skill, input } = route;
    if (skill.metered)
      return this.prepaid.serve(turn.withMetadata({ ...turn.task.metadata, skill: skill.id }), { ...skill, metered: skill.metered }, input, message);
    if (skill.subscription) return this.subscriptions.ask(turn.withMetadata({ ...turn.task.metadata, skill: skill.id }), true);
    // A subscriber to a covered skill is served without paying per call; any other caller pays as usual.
    const subscriber = skill.paid ? await this.subscriptions.subscriber(skill, message) : undefined;
    if (!skill.paid || subscriber?.served) {
      const { name, part } = skill.run(input);
      turn.start(TaskState.TASK_STATE_WORKING, `Running ${skill.id}.`);
      turn.artifact(name, part);
      if (!subscriber?.served) return turn.status(TaskState.TASK_STATE_COMPLETED, `Your ${skill.id} is in the artifacts.`);
      const served = { subscriptionId: subscriber.subscriptionId, payer: subscriber.payer };
      return turn.status(TaskState.TASK_STATE_COMPLETED, `Your ${skill.id} is in the artifacts, served to subscription ${served.subscriptionId}.`, {
        [MPP_METADATA.subscription]: served,
      });
    }
    if (subscriber && !turn.extensions.length) {
      // Not a subscriber now, and no x402 to pay per call with: nothing to wait for.
      return turn.start(
        TaskState.TASK_STATE_FAILED,
        `Not served as a subscriber: ${subscriber.why}. Subscribe with the ${SUBSCRIBE_SKILL} skill, or pay per call with x402.`,
        {
          [MPP_METADATA.error]: 'not_entitled',
        },
      );
    }
    const { task } = turn;
    const offer = paymentOffer(this.config.price, skill.paid.amount, {
      url: `${this.config.publicUrl}${A2A_REST_PATH}/tasks/${task.id}`,
      description: `${skill.card.name}: ${input}`,
    });
    // Stored before the buyer can see it: a payment always finds the offer it answers.
    const payment = await this.payments.offer({ taskId: task.id, skill: skill.id, input, settleTiming: skill.paid.settleTiming, offer });
    return this.flow.remind(turn.withMetadata({ ...task.metadata, skill: skill.id }), payment);
  }
}
