import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import type { MerchantConfig } from '../merchant.config';
import { mppTerms } from '../mpp/mpp-terms';
import { INVALID_PARAMS } from './payment-errors';
import { RECEIPT_META_KEY, type ToolPayments } from './tool-payments';
import { toolResource, toolsFor } from './tools';

/**
 * The MCP server of the paid tools. The low-level `Server`, not `McpServer`: McpServer turns a thrown error into an
 * `isError` text result and drops `error.data` (all but -32042), and the payment binding needs both on the wire.
 */
export function createPaidToolsServer(config: MerchantConfig, payments: ToolPayments): Server {
  const tools = toolsFor(config);
  const server = new Server(
    { name: 'merchant-agent', version: '0.1.0' },
    {
      capabilities: { tools: {}, experimental: { payment: { methods: paymentMethods(config) } } },
      instructions: `forecast is paid per call with MPP (the error -32042 carries the challenges); ping is free${config.subscription ? '; subscription_status is free with your payer signature' : ''}${config.prepaid ? '; wordcount is metered from your prepaid balance (sign each call)' : ''}.`,
    },
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...tools.values()].map((tool) => tool.listing) }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name, arguments: args } = request.params;
    const tool = tools.get(name);
    if (!tool) throw new McpError(INVALID_PARAMS, `unknown tool: ${name}`);
    const run = tool.prepare(args);
    if (!tool.paid) return run();
    // Settle first, then run: a client never gets paid output for a credential that did not settle, and these
    // tools are local and cannot fail once started, so a settled payment always gets its result.
    const receipt = await payments.charge(mppTerms(config, toolResource(name)), extra._meta);
    const result = await run();
    return { ...result, _meta: { ...result._meta, [RECEIPT_META_KEY]: receipt } };
  });

  return server;
}

function paymentMethods(config: MerchantConfig): Record<string, { intents: string[] }> {
  return { evm: { intents: ['charge'] }, ...(config.mpp.stripe && { stripe: { intents: ['charge'] } }) };
}
