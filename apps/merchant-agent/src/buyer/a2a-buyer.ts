import { randomUUID } from 'node:crypto';
import { Role, TaskState, taskStateToJSON, type AgentCard, type Message, type Part, type SendMessageRequest, type Task } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
  ServiceParameters,
  withA2AExtensions,
  type Client,
} from '@a2a-js/sdk/client';
import { x402Client } from '@x402/core/client';
import type { PaymentRequired, SettleResponse } from '@x402/core/types';
import { toClientEvmSigner } from '@x402/evm';
import { ExactEvmScheme } from '@x402/evm/exact/client';
import type { Hex } from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { X402_EXTENSION_URIS, X402_METADATA } from '../a2a/x402/extension';

export interface A2aBuyerOptions {
  /** where the agent card is: `<agentUrl>/.well-known/agent-card.json` */
  agentUrl: string;
  privateKey: Hex;
  network: `${string}:${string}`;
  /** The token the buyer agrees to pay in, and the most it pays per task (atomic units); a dearer offer is declined. */
  asset: string;
  maxAmountPerPayment: string;
  /** the card's interface to use: binding and A2A version (default JSONRPC, 1.0) */
  binding?: 'JSONRPC' | 'HTTP+JSON';
  protocolVersion?: '1.0' | '0.3';
  log?: (line: string) => void;
}

export interface A2aPurchase {
  /** the task's final state (TASK_STATE_COMPLETED…), or `message` when the skill answered directly */
  outcome: string;
  taskId?: string;
  /** the artifacts' (or the direct answer's) parts: text, or JSON data */
  output: unknown[];
  payer: string;
  price?: { amount: string; asset: string; payTo: string; network: string };
  /** the successful settlement, from x402.payment.receipts */
  receipt?: SettleResponse;
  /** x402.payment.error, when the payment failed */
  error?: string;
}

/**
 * A buyer agent on the official A2A client: it discovers the merchant's card, asks a skill (`forecast Porto`), and
 * when the task asks for payment (a2a-x402) signs the offered requirements with the official x402 EVM client
 * (EIP-3009), sends them on the same task, and reads the outcome, receipt included. An offer beyond the buyer's spend
 * controls is declined with payment-rejected.
 */
export async function buyFromAgent(options: A2aBuyerOptions, request: string): Promise<A2aPurchase> {
  const log = options.log ?? (() => undefined);
  const account = privateKeyToAccount(options.privateKey);
  const wallet = new x402Client()
    .register(options.network, new ExactEvmScheme(toClientEvmSigner(account)))
    .setSpendControls({ allowedAssets: [{ network: options.network, asset: options.asset, maxAmountPerPayment: options.maxAmountPerPayment }] });
  const client = await connect(options);
  log(`connected to ${options.agentUrl} over ${client.transport.protocolName} (A2A ${client.protocolVersion})`);
  const x402 = { serviceParameters: ServiceParameters.create(withA2AExtensions(X402_EXTENSION_URIS.v02)) };

  const first = await client.sendMessage(sendRequest(userMessage(request)), x402);
  if (!isTask(first)) return { outcome: 'message', output: first.parts.map(partValue), payer: account.address };
  const metadata = first.status?.message?.metadata ?? {};
  const required = metadata[X402_METADATA.required] as PaymentRequired | undefined;
  if (first.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED || metadata[X402_METADATA.status] !== 'payment-required' || !required) {
    return outcomeOf(first, account.address);
  }
  const [offer] = required.accepts;
  const price = { amount: offer.amount, asset: offer.asset, payTo: offer.payTo, network: offer.network };
  log(`task ${first.id}: payment required: ${offer.amount} atomic units of ${offer.asset} to ${offer.payTo} on ${offer.network}`);

  const payload = await wallet.createPaymentPayload(required).catch((error: unknown) => {
    log(`declining: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  });
  if (payload) log(`signed an EIP-3009 authorization as ${account.address}; submitting it on task ${first.id}`);
  const answer = payload
    ? userMessage('Here is the payment authorization.', first, { [X402_METADATA.status]: 'payment-submitted', [X402_METADATA.payload]: payload })
    : userMessage('No, thank you.', first, { [X402_METADATA.status]: 'payment-rejected' });
  for await (const event of client.sendMessageStream(sendRequest(answer), x402)) {
    const update = event.payload;
    if (update?.$case === 'statusUpdate')
      log(
        `task ${first.id}: ${taskStateToJSON(update.value.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED)} ${update.value.status?.message?.metadata?.[X402_METADATA.status] ?? ''}`,
      );
  }
  // The stream told the story; the task is the record (streams are not a reliable delivery).
  const final = await client.getTask({ tenant: '', id: first.id, historyLength: 0 }, x402);
  const purchase = { ...outcomeOf(final, account.address), price };
  log(
    purchase.receipt
      ? `paid: transaction ${purchase.receipt.transaction} on ${purchase.receipt.network}`
      : `not paid: ${purchase.outcome} ${purchase.error ?? ''}`,
  );
  return purchase;
}

async function connect(options: A2aBuyerOptions): Promise<Client> {
  const card: AgentCard = await new DefaultAgentCardResolver().resolve(options.agentUrl);
  const version = options.protocolVersion ?? '1.0';
  const binding = options.binding ?? 'JSONRPC';
  const supportedInterfaces = card.supportedInterfaces.filter((i) => i.protocolVersion === version && i.protocolBinding === binding);
  if (!supportedInterfaces.length) throw new Error(`the agent at ${options.agentUrl} has no ${binding} interface for A2A ${version}`);
  const legacyCompat = { enabled: true };
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [new JsonRpcTransportFactory({ legacyCompat }), new RestTransportFactory({ legacyCompat })],
    }),
  );
  return factory.createFromAgentCard({ ...card, supportedInterfaces });
}

function outcomeOf(task: Task, payer: string): A2aPurchase {
  const metadata = task.status?.message?.metadata ?? {};
  const receipts = (metadata[X402_METADATA.receipts] ?? []) as SettleResponse[];
  return {
    outcome: taskStateToJSON(task.status?.state ?? TaskState.TASK_STATE_UNSPECIFIED),
    taskId: task.id,
    output: task.artifacts.flatMap((a) => a.parts.map(partValue)),
    payer,
    receipt: receipts.find((r) => r.success),
    error: metadata[X402_METADATA.error] as string | undefined,
  };
}

function userMessage(text: string, task?: Pick<Task, 'id' | 'contextId'>, metadata?: Record<string, unknown>): Message {
  return {
    messageId: randomUUID(),
    taskId: task?.id ?? '',
    contextId: task?.contextId ?? '',
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined }],
    metadata,
    extensions: metadata ? [X402_EXTENSION_URIS.v02] : [],
    referenceTaskIds: [],
  };
}

function sendRequest(message: Message): SendMessageRequest {
  return { tenant: '', message, configuration: undefined, metadata: undefined };
}

function isTask(result: Message | Task): result is Task {
  return 'status' in result;
}

function partValue(part: Part): unknown {
  return part.content?.value;
}
