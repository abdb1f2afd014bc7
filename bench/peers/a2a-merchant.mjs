#!/usr/bin/env node
// The A2A peer for bench/paid-requests.mjs: a minimal paid A2A merchant made of the official @a2a-js/sdk 1.3 server
// pieces (AgentExecutor, DefaultRequestHandler, InMemoryTaskStore, the SDK's Express handlers agentCardHandler and
// jsonRpcHandler), selling one skill (`forecast`) with the a2a-x402 extension flow, settled through the reference x402
// facilitator (bench/reference-facilitator.mjs) with @x402/core's HTTPFacilitatorClient:
//
//   first message            → task input-required, x402.payment.status payment-required + x402.payment.required
//   payment-submitted + x402.payment.payload on the task
//                            → working (payment-submitted) → /verify → working (payment-verified) → /settle
//                            → artifact + completed (payment-completed, x402.payment.receipts)
//   a failed verify/settle   → failed (payment-failed, x402.payment.error)
//
// It speaks the same wire as our merchant agent (apps/merchant-agent/src/a2a/x402/), so our buyer (buyFromAgent) pays
// both unchanged: the card's JSON-RPC interface in A2A 1.0, the x402 v0.2 extension URI, the same metadata keys. Like
// the reference facilitator, deliberately untuned and minimal: the tasks live in memory, nothing is written to a
// database, and the offer of a task is kept in a Map.
//
// Usage:
//   node bench/peers/a2a-merchant.mjs --port 9804 --facilitator-url http://127.0.0.1:9803 \
//     --network eip155:31337 --asset 0x… --asset-name USDC --asset-version 2 --pay-to 0x… --price 10000
import { randomUUID } from 'node:crypto';
import { parseArgs } from 'node:util';
import express from 'express';
import { AgentCard, Role, TaskState } from '@a2a-js/sdk';
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { HTTPFacilitatorClient } from '@x402/core/server';

const X402_URI = 'https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2';
const KEY = {
  status: 'x402.payment.status',
  required: 'x402.payment.required',
  payload: 'x402.payment.payload',
  receipts: 'x402.payment.receipts',
  error: 'x402.payment.error',
};

const { values: args } = parseArgs({
  options: {
    port: { type: 'string', default: '9804' },
    host: { type: 'string', default: '127.0.0.1' },
    'facilitator-url': { type: 'string' },
    network: { type: 'string' },
    asset: { type: 'string' },
    'asset-name': { type: 'string', default: 'USDC' },
    'asset-version': { type: 'string', default: '2' },
    'pay-to': { type: 'string' },
    price: { type: 'string', default: '10000' },
  },
});
for (const required of ['facilitator-url', 'network', 'asset', 'pay-to']) {
  if (!args[required]) {
    console.error(`a2a peer: --${required} is required`);
    process.exit(2);
  }
}
const port = Number(args.port);
const publicUrl = `http://${args.host}:${port}`;
const facilitator = new HTTPFacilitatorClient({ url: args['facilitator-url'] });

const card = AgentCard.fromJSON({
  name: 'a2a-js peer merchant',
  description: 'Sells a forecast for x402 (a2a-x402 v0.2), settled through the reference facilitator.',
  version: '0.1.0',
  supportedInterfaces: [{ url: `${publicUrl}/a2a/jsonrpc`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  capabilities: {
    streaming: true,
    pushNotifications: false,
    extendedAgentCard: false,
    extensions: [{ uri: X402_URI, description: 'x402 payments', required: false, params: {} }],
  },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['application/json'],
  skills: [{ id: 'forecast', name: 'Weather forecast', description: 'A forecast, paid with x402.', tags: ['x402'], examples: ['forecast Lisbon'] }],
});

const textPart = (text) => ({ content: { $case: 'text', value: text }, mediaType: 'text/plain', filename: '', metadata: undefined });
const dataPart = (value) => ({ content: { $case: 'data', value }, mediaType: 'application/json', filename: '', metadata: undefined });
const message = (task, text, metadata) => ({
  messageId: randomUUID(),
  taskId: task.id,
  contextId: task.contextId,
  role: Role.ROLE_AGENT,
  parts: [textPart(text)],
  metadata,
  extensions: [X402_URI],
  referenceTaskIds: [],
});
const status = (state, msg) => ({ state, message: msg, timestamp: new Date().toISOString() });

/** The offer each open task asks for (x402 v2 PaymentRequired), by task id. */
const offers = new Map();

function forecastFor(city) {
  return { location: city, hours: [0, 1, 2].map((h) => ({ hour: h, temperatureC: 18 + h, condition: 'clear' })) };
}

class PaidForecastExecutor {
  /** Each turn ends its bus, as the SDK's samples do: the blocking SendMessage of an input-required task returns then. */
  async execute(ctx, bus) {
    try {
      await this.turn(ctx, bus);
    } finally {
      bus.finished();
    }
  }

  async turn(ctx, bus) {
    const text = ctx.userMessage.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(' ');
    if (!ctx.task) {
      const task = { id: ctx.taskId, contextId: ctx.contextId };
      const required = {
        x402Version: 2,
        error: 'Payment required',
        resource: { url: `${publicUrl}/tasks/${task.id}`, description: `forecast: ${text}`, mimeType: 'application/json' },
        accepts: [
          {
            scheme: 'exact',
            network: args.network,
            asset: args.asset,
            amount: args.price,
            payTo: args['pay-to'],
            maxTimeoutSeconds: 300,
            extra: { name: args['asset-name'], version: args['asset-version'] },
          },
        ],
      };
      offers.set(task.id, { required, city: text.replace(/^forecast\s*/i, '') || 'Lisbon' });
      const msg = message(task, `Payment required: ${args.price} atomic units.`, { [KEY.status]: 'payment-required', [KEY.required]: required });
      bus.publish(
        AgentEvent.task({ ...task, status: status(TaskState.TASK_STATE_INPUT_REQUIRED, msg), artifacts: [], history: [ctx.userMessage, msg], metadata: {} }),
      );
      return;
    }
    const task = ctx.task;
    const offer = offers.get(task.id);
    const submitted = ctx.userMessage.metadata?.[KEY.status] === 'payment-submitted' ? ctx.userMessage.metadata?.[KEY.payload] : undefined;
    if (!offer || !submitted || task.status?.state !== TaskState.TASK_STATE_INPUT_REQUIRED) {
      bus.publish(AgentEvent.message(message(task, 'This task takes one payment-submitted message while it waits for its payment.')));
      return;
    }
    offers.delete(task.id); // one payment per task: a second submission finds no offer
    const update = (state, text, metadata) =>
      bus.publish(
        AgentEvent.statusUpdate({ taskId: task.id, contextId: task.contextId, status: status(state, message(task, text, metadata)), metadata: undefined }),
      );
    const submittedMsg = message(task, 'Payment received; verifying it.', { [KEY.status]: 'payment-submitted' });
    bus.publish(AgentEvent.task({ ...task, status: status(TaskState.TASK_STATE_WORKING, submittedMsg), history: [...(task.history ?? []), submittedMsg] }));
    const [requirements] = offer.required.accepts;
    const fail = (error, text, receipts = []) =>
      update(TaskState.TASK_STATE_FAILED, text, { [KEY.status]: 'payment-failed', [KEY.error]: error, [KEY.receipts]: receipts });
    let verified;
    try {
      verified = await facilitator.verify(submitted, requirements);
    } catch (error) {
      return fail('verify_failed', `verify failed: ${error.message}`);
    }
    if (!verified.isValid) return fail(verified.invalidReason ?? 'invalid_payload', `the payment is not valid: ${verified.invalidReason}`);
    update(TaskState.TASK_STATE_WORKING, 'Payment verified.', { [KEY.status]: 'payment-verified' });
    let settled;
    try {
      settled = await facilitator.settle(submitted, requirements);
    } catch (error) {
      return fail('settlement_failed', `settle failed: ${error.message}`);
    }
    if (!settled.success) return fail(settled.errorReason ?? 'settlement_failed', `the payment did not settle: ${settled.errorReason}`, [settled]);
    bus.publish(
      AgentEvent.artifactUpdate({
        taskId: task.id,
        contextId: task.contextId,
        artifact: {
          artifactId: randomUUID(),
          name: 'forecast',
          description: '',
          parts: [dataPart(forecastFor(offer.city))],
          metadata: undefined,
          extensions: [],
        },
        append: false,
        lastChunk: true,
        metadata: undefined,
      }),
    );
    update(TaskState.TASK_STATE_COMPLETED, `Paid in transaction ${settled.transaction}.`, { [KEY.status]: 'payment-completed', [KEY.receipts]: [settled] });
  }

  async cancelTask() {}
}

const requestHandler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new PaidForecastExecutor());
const app = express();
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: requestHandler }));
app.use('/a2a/jsonrpc', jsonRpcHandler({ requestHandler, userBuilder: UserBuilder.noAuthentication }));
app.get('/health', (_req, res) => res.json({ ok: true }));

const server = app.listen(port, args.host, (error) => {
  if (error) {
    console.error(`a2a peer: cannot listen on ${args.host}:${port}: ${error.message}`);
    process.exit(1);
  }
  console.log(`a2a peer merchant on ${publicUrl} (facilitator ${args['facilitator-url']})`);
});
const shutdown = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.once('SIGTERM', shutdown);
process.once('SIGINT', shutdown);
