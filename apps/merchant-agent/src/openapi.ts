import { OPENAPI_CONVENTIONS, zodComponentSchemas, type OpenApiOptions } from '@mp/platform';
import { X402_WIRE_SCHEMAS, X402Reason } from '@mp/x402';
import { A2A_PATHS, COMPONENTS } from './openapi.components';

/** What the merchant-agent says about itself in its OpenAPI document; its routes say the rest (see @ApiDoc). */
export const MERCHANT_AGENT_OPENAPI: OpenApiOptions = {
  title: 'Merchant agent',
  version: '0.1.0',
  description: `${"Sample merchant: a route behind the official @x402/express middleware, an MPP-paid route (evm and stripe) with its discovery document, and paid MCP tools at POST /mcp (Streamable HTTP, documented in docs/api/mcp.md; not an OpenAPI operation). And an A2A server (mounted outside Nest with @a2a-js/sdk's Express routers): the agent card at `GET /.well-known/agent-card.json`, JSON-RPC at `POST /a2a/jsonrpc` and HTTP+JSON under `/a2a/rest` (A2A 1.0, plus the v0.3 compatibility routes under `/a2a/rest/v1`), selling paid skills through the a2a-x402 extension."}\n\n${OPENAPI_CONVENTIONS}`,
  components: {
    ...COMPONENTS,
    schemas: {
      ...COMPONENTS.schemas,
      X402Reason: { ...COMPONENTS.schemas.X402Reason, enum: Object.values(X402Reason) },
      ...zodComponentSchemas(X402_WIRE_SCHEMAS),
    },
  },
  paths: A2A_PATHS,
};
