import { McpError, type CallToolResult, type Tool as ToolListing } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { fetchWithTimeout } from '../facilitator-fetch';
import type { MerchantConfig } from '../merchant.config';
import { forecastFor } from '../paid-http/forecast';
import { meteredCall } from '../prepaid/metered-call';
import { PrepaidLedger } from '../prepaid/prepaid-ledger';
import { countWords, WORDCOUNT_MAX_UNITS } from '../prepaid/wordcount';
import { INTERNAL_ERROR, INVALID_PARAMS, PAYMENT_REQUIRED, PaymentRpcError } from './payment-errors';

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

/** The metered tool's receipt in the result's `_meta` (our key, beside the MPP binding's). */
export const PREPAID_RECEIPT_META_KEY = 'mp/prepaid-receipt';

/**
 * Word count, metered and paid from the caller's prepaid balance (meteredCall): no payment step per call. The payer
 * signs this one call: `signature` over `mp-prepaid:spend:mcp:tools/wordcount:<callId>:<deadline>`; the same callId
 * again is charged once. A short balance is the -32042 error with `data.shortfall` (top up with the A2A top-up skill).
 */
function wordcount(ledger: PrepaidLedger, unitPrice: string): McpTool {
  return defineTool({
    name: 'wordcount',
    description: `Counts the words of a text. Metered: ${unitPrice} atomic units per word (at most ${WORDCOUNT_MAX_UNITS}), paid from your prepaid balance with this merchant. Sign the call: \`signature\` is your EIP-191 signature over \`mp-prepaid:spend:mcp:tools/wordcount:<callId>:<deadline>\`, the deadline in unix seconds at most 600 s ahead; callId is yours, one per call.`,
    paid: false,
    args: z.strictObject({
      text: z.string().min(1).max(1000),
      payer: z.string().regex(/^0x[0-9a-fA-F]{40}$/, 'must be your 0x address'),
      callId: z.string().regex(/^[A-Za-z0-9_.:-]{1,100}$/, 'must be 1 to 100 letters, digits or _ . : -'),
      deadline: z.string().regex(/^[0-9]{1,12}$/, 'must be unix seconds'),
      signature: z.string().regex(/^0x[0-9a-fA-F]+$/, 'must be 0x hex'),
    }),
    async run({ text, payer, callId, deadline, signature }) {
      const outcome = await meteredCall(ledger, {
        resource: toolResource('wordcount'),
        callId,
        proof: { payer, deadline, signature },
        unitPrice: BigInt(unitPrice),
        maxUnits: WORDCOUNT_MAX_UNITS,
        run: () => {
          const counted = countWords(text);
          return { output: { words: counted.words }, units: counted.units };
        },
      });
      if (outcome.served) return { ...json(outcome.output), _meta: { [PREPAID_RECEIPT_META_KEY]: outcome.receipt } };
      switch (outcome.error) {
        case 'insufficient_balance':
          throw new PaymentRpcError(PAYMENT_REQUIRED, 'The prepaid balance is too low; top it up', { httpStatus: 402, shortfall: outcome.shortfall });
        case 'proof_invalid':
          throw new McpError(INVALID_PARAMS, outcome.detail);
        default:
          throw new McpError(INTERNAL_ERROR, outcome.detail);
      }
    },
  });
}

export const TOOLS: ReadonlyMap<string, McpTool> = new Map([forecast, ping].map((tool) => [tool.listing.name, tool]));

/** The tools this agent serves: TOOLS, subscription_status when it sells a subscription, wordcount with prepaid balances. */
export function toolsFor(config: MerchantConfig): ReadonlyMap<string, McpTool> {
  const tools = new Map(TOOLS);
  if (config.subscription) {
    const status = subscriptionStatus(config.subscription.ledgerUrl, config.facilitatorTimeoutMs);
    tools.set(status.listing.name, status);
  }
  if (config.prepaid) {
    const metered = wordcount(new PrepaidLedger(config.prepaid, config.facilitatorTimeoutMs), config.prepaid.unitPrice);
    tools.set(metered.listing.name, metered);
  }
  return tools;
}
