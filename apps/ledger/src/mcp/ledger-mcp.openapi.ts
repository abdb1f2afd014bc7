import { MERCHANT_API_KEY_SECURITY, jsonResponse, type OperationDoc } from '@mp/platform';
import { LEDGER_ERRORS } from '../openapi.shared';

/** What the OpenAPI document says about LedgerMcpController's routes (see @ApiDoc); the tools are in docs/api/mcp.md. */

const JSON_RPC = { type: 'object', required: ['jsonrpc'], properties: { jsonrpc: { const: '2.0' } } };
const NOT_STATELESS = {
  description: 'Stateless: there is no SSE stream to open and no session to end.',
  headers: { Allow: { schema: { type: 'string', const: 'POST' } } },
  content: { 'application/json': { schema: JSON_RPC } },
};

export const LEDGER_MCP_DOCS = {
  post: {
    operationId: 'mcp',
    summary: "The merchant's books as MCP tools",
    description:
      "Model Context Protocol over Streamable HTTP, stateless, answered as JSON: `initialize`, `tools/list`, `tools/call` of the read-only tools `balances`, `transaction` and `subscription_status` (docs/api/mcp.md). Every tool reads only the calling merchant's books and subscriptions. Accept `application/json, text/event-stream`.",
    security: MERCHANT_API_KEY_SECURITY,
    requestBody: { required: true, content: { 'application/json': { schema: JSON_RPC } } },
    responses: {
      '200': jsonResponse('A JSON-RPC response (or a batch of them).', JSON_RPC),
      '202': { description: 'A notification or response, accepted.' },
      ...LEDGER_ERRORS,
    },
  },
  get: { operationId: 'mcpStream', summary: 'No SSE stream (405)', security: MERCHANT_API_KEY_SECURITY, responses: { '405': NOT_STATELESS, ...LEDGER_ERRORS } },
  delete: {
    operationId: 'mcpEndSession',
    summary: 'No session to end (405)',
    security: MERCHANT_API_KEY_SECURITY,
    responses: { '405': NOT_STATELESS, ...LEDGER_ERRORS },
  },
} satisfies Record<string, OperationDoc>;
