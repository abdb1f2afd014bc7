import { McpError, type CallToolResult, type Tool as ToolListing } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { fetchWithTimeout } from '../facilitator-fetch';
import type { MerchantConfig } from '../merchant.config';
import { forecastFor } from '../paid-http/forecast';
import { INTERNAL_ERROR, INVALID_PARAMS } from './payment-errors';

export interface McpTool {
  listing: ToolListing;
  paid: boolean;
  /** Checks the arguments (before any payment is asked for) and returns what runs the tool. */
  prepare(args: unknown): () => CallToolResult | Promise<CallToolResult>;
}

/** What a paid tool is sold as: bound into its challenges (`opaque`), so a challenge for one tool cannot pay for another. */
export function toolResource(name: string): string {
  return `mcp:tools/${name}`;
}

function defineTool<T>(tool: {
  name: string;
  description: string;
  paid: boolean;
  args: z.ZodType<T>;
  run(args: T): CallToolResult | Promise<CallToolResult>;
}): McpTool {
  return {
    listing: { name: tool.name, description: tool.description, inputSchema: z.toJSONSchema(tool.args) as ToolListing['inputSchema'] },
    paid: tool.paid,
    prepare(args) {
      const parsed = tool.args.safeParse(args ?? {});
      if (!parsed.success) throw new McpError(INVALID_PARAMS, `invalid arguments for ${tool.name}: ${z.prettifyError(parsed.error)}`);
      return () => tool.run(parsed.data);
    },
  };
}

const json = (value: unknown): CallToolResult => ({ content: [{ type: 'text', text: JSON.stringify(value) }] });

const forecast = defineTool({
  name: 'forecast',
  description: 'A machine-readable weather forecast for the next three hours. Paid per call (MPP).',
  paid: true,
  args: z.strictObject({ city: z.string().min(1).max(100).optional().describe('the city to forecast (default Lisbon)') }),
  run: ({ city }) => json(forecastFor(city ?? 'Lisbon')),
});

const ping = defineTool({
  name: 'ping',
  description: 'Answers pong. Free: for checking the connection.',
  paid: false,
  args: z.strictObject({}),
  run: () => ({ content: [{ type: 'text', text: 'pong' }] }),
});

/**
 * The subscriber's own view of its subscription (free): the ledger's payer-signed GET /subscriptions/{id}/status,
 * relayed. The payer signs `mp-subscription:status:<id>:<deadline>` (@mp/chain statusMessage); no key of the
 * merchant's is used, so a buyer sees only what its own signature opens.
 */
function subscriptionStatus(ledgerUrl: string, timeoutMs: number): McpTool {
  const fetchLedger = fetchWithTimeout(timeoutMs);
  return defineTool({
    name: 'subscription_status',
    description:
      "The status of your subscription (state, periods paid, cancel, entitled now), from the merchant's ledger. Free. Prove you are its payer: `signature` is your EIP-191 signature over `mp-subscription:status:<subscriptionId>:<deadline>`, the deadline in unix seconds at most 600 s ahead.",
    paid: false,
    args: z.strictObject({
      subscriptionId: z.string().regex(/^[A-Za-z0-9_-]{16,64}$/, 'must be a subscription id as the receipt carries it'),
      deadline: z.string().regex(/^[0-9]{1,12}$/, 'must be unix seconds'),
      signature: z.string().regex(/^0x[0-9a-fA-F]+$/, 'must be 0x hex'),
    }),
    async run({ subscriptionId, deadline, signature }) {
      const url = new URL(`/subscriptions/${encodeURIComponent(subscriptionId)}/status`, `${ledgerUrl}/`);
      url.searchParams.set('deadline', deadline);
      url.searchParams.set('signature', signature);
      let response: Response;
      try {
        response = await fetchLedger(url, { headers: { accept: 'application/json' } });
      } catch (error) {
        throw new McpError(INTERNAL_ERROR, `the ledger did not answer: ${(error as Error).message}`);
      }
      const body = (await response.json().catch(() => undefined)) as { detail?: string } | undefined;
      if (response.status === 200) return json(body);
      // its refusals (a proof that proves nothing, no such subscription) are the caller's to fix
      if (response.status >= 400 && response.status < 500) throw new McpError(INVALID_PARAMS, `the ledger refused: ${body?.detail ?? response.status}`);
      throw new McpError(INTERNAL_ERROR, `the ledger answered ${response.status}`);
    },
  });
}

export const TOOLS: ReadonlyMap<string, McpTool> = new Map([forecast, ping].map((tool) => [tool.listing.name, tool]));

/** The tools this agent serves: TOOLS, and subscription_status when it sells a subscription. */
export function toolsFor(config: MerchantConfig): ReadonlyMap<string, McpTool> {
  if (!config.subscription) return TOOLS;
  const status = subscriptionStatus(config.subscription.ledgerUrl, config.facilitatorTimeoutMs);
  return new Map([...TOOLS, [status.listing.name, status]]);
}
