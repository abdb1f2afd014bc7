import { McpError, type CallToolResult, type Tool as ToolListing } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { forecastFor } from '../paid-http/forecast';
import { INVALID_PARAMS } from './payment-errors';

export interface McpTool {
  listing: ToolListing;
  paid: boolean;
  /** Checks the arguments (before any payment is asked for) and returns what runs the tool. */
  prepare(args: unknown): () => CallToolResult;
}

/** What a paid tool is sold as: bound into its challenges (`opaque`), so a challenge for one tool cannot pay for another. */
export function toolResource(name: string): string {
  return `mcp:tools/${name}`;
}

function defineTool<T>(tool: { name: string; description: string; paid: boolean; args: z.ZodType<T>; run(args: T): CallToolResult }): McpTool {
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

export const TOOLS: ReadonlyMap<string, McpTool> = new Map([forecast, ping].map((tool) => [tool.listing.name, tool]));
