import type {
  AgentCard,
  CancelTaskRequest,
  DeleteTaskPushNotificationConfigRequest,
  GetExtendedAgentCardRequest,
  GetTaskPushNotificationConfigRequest,
  GetTaskRequest,
  ListTaskPushNotificationConfigsRequest,
  ListTaskPushNotificationConfigsResponse,
  ListTasksRequest,
  ListTasksResponse,
  Message,
  SendMessageRequest,
  StreamResponse,
  SubscribeToTaskRequest,
  Task,
  TaskPushNotificationConfig,
} from '@a2a-js/sdk';
import { ExtensionSupportRequiredError, RequestMalformedError, TaskNotCancelableError } from '@a2a-js/sdk/errors';
import type { A2ARequestHandler, ServerCallContext } from '@a2a-js/sdk/server';
import { inputProblem, routeMessage, type Skill } from './skills';
import { carriesSubscriberProof } from './subscription-flow';
import { activatedX402Uris, X402_EXTENSION_URIS } from './x402/extension';
import { PaymentFlow } from './x402/payment-flow';
import { TaskPayments } from './x402/payment.repository';

/**
 * The SDK's request handler, with what must be answered as an A2A error before a task exists or changes: a skill's
 * input too long (-32602), a paid skill or a paid task without the x402 extension activated (-32008; the card declares
 * it required: false because it has two URIs), and the cancellation of a task whose payment is already under way
 * (-32002). A message that names no skill is no error: the executor asks which one (input-required). It also echoes
 * the x402 extension the caller activated.
 */
export class PaidSkillsRequestHandler implements A2ARequestHandler {
  constructor(
    private readonly inner: A2ARequestHandler,
    private readonly skills: ReadonlyMap<string, Skill>,
    private readonly payments: TaskPayments,
    private readonly flow: PaymentFlow,
  ) {}

  async sendMessage(params: SendMessageRequest, context: ServerCallContext): Promise<Message | Task> {
    this.echoX402(context);
    await this.admit(params, context);
    return this.inner.sendMessage(params, context);
  }

  /** Not a generator itself: the echo must be recorded before the transport writes the stream's headers. */
  sendMessageStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    this.echoX402(context);
    return this.admitThenStream(params, context);
  }

  async cancelTask(params: CancelTaskRequest, context: ServerCallContext): Promise<Task> {
    await this.inner.getTask({ id: params.id, tenant: params.tenant, historyLength: 0 }, context);
    const payment = await this.payments.find(params.id);
    if (payment && payment.status !== 'canceled' && !(await this.payments.transition(params.id, ['required'], 'canceled'))) {
      const now = await this.payments.find(params.id);
      throw new TaskNotCancelableError(`task ${params.id} cannot be canceled: its payment is ${now?.status ?? payment.status}`);
    }
    return this.inner.cancelTask(params, context);
  }

  getAgentCard(): Promise<AgentCard> {
    return this.inner.getAgentCard();
  }

  getAuthenticatedExtendedAgentCard(params: GetExtendedAgentCardRequest, context: ServerCallContext): Promise<AgentCard> {
    return this.inner.getAuthenticatedExtendedAgentCard(params, context);
  }

  getTask(params: GetTaskRequest, context: ServerCallContext): Promise<Task> {
    return this.inner.getTask(params, context);
  }

  listTasks(params: ListTasksRequest, context: ServerCallContext): Promise<ListTasksResponse> {
    return this.inner.listTasks(params, context);
  }

  resubscribe(params: SubscribeToTaskRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    return this.inner.resubscribe(params, context);
  }

  createTaskPushNotificationConfig(params: TaskPushNotificationConfig, context: ServerCallContext): Promise<TaskPushNotificationConfig> {
    return this.inner.createTaskPushNotificationConfig(params, context);
  }

  getTaskPushNotificationConfig(params: GetTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<TaskPushNotificationConfig> {
    return this.inner.getTaskPushNotificationConfig(params, context);
  }

  listTaskPushNotificationConfigs(
    params: ListTaskPushNotificationConfigsRequest,
    context: ServerCallContext,
  ): Promise<ListTaskPushNotificationConfigsResponse> {
    return this.inner.listTaskPushNotificationConfigs(params, context);
  }

  deleteTaskPushNotificationConfig(params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext): Promise<void> {
    return this.inner.deleteTaskPushNotificationConfig(params, context);
  }

  private async *admitThenStream(params: SendMessageRequest, context: ServerCallContext): AsyncGenerator<StreamResponse, void, undefined> {
    await this.admit(params, context);
    yield* this.inner.sendMessageStream(params, context);
  }

  private echoX402(context: ServerCallContext): void {
    for (const uri of activatedX402Uris(context.requestedExtensions)) context.addActivatedExtension(uri);
  }

  /** A message that names a skill (opening a task, or on a task waiting for one): its input; if paid, the x402 extension. */
  private async admit({ message, tenant }: SendMessageRequest, context: ServerCallContext): Promise<void> {
    if (!message) return; // the SDK answers that
    const x402 = activatedX402Uris(context.requestedExtensions).length > 0;
    const route = routeMessage(message, this.skills);
    if (message.taskId) {
      // The executor reads the task's payment first thing, and verifies a payment: both while the SDK loads and saves the task.
      if (x402 && route.kind !== 'skill') this.flow.ahead(message, context);
      // An unknown task is the SDK's TaskNotFoundError (-32001), whatever the message says.
      if (!x402) await this.inner.getTask({ id: message.taskId, tenant, historyLength: 0 }, context);
      // With x402 activated, whether the task is paid only matters to a message that names a skill (a payment does not).
      if ((!x402 || route.kind === 'skill') && (await this.payments.find(message.taskId))) {
        if (!x402) throw extensionRequired(`task ${message.taskId} is paid`);
        return;
      }
    }
    if (route.kind !== 'skill') return;
    const problem = inputProblem(route);
    if (problem) throw new RequestMalformedError(problem);
    // A subscriber's proof may pay for it instead (checked by the executor against the ledger); a metered skill is
    // paid from the prepaid balance, without x402.
    if (route.skill.paid && !x402 && !carriesSubscriberProof(message)) throw extensionRequired(`skill ${route.skill.id} is paid`);
  }
}

function extensionRequired(why: string): ExtensionSupportRequiredError {
  return new ExtensionSupportRequiredError(`${why}: activate the x402 extension (A2A-Extensions: ${X402_EXTENSION_URIS.v02}, or ${X402_EXTENSION_URIS.v01})`);
}
