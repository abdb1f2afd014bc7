import { Logger } from '@nestjs/common';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { MppFacilitatorClient } from '@mp/clients';
import { registerLogSecrets } from '@mp/platform';
import { fetchWithTimeout } from '../facilitator-fetch';
import type { MerchantConfig } from '../merchant.config';
import { isObject } from './is-object';
import { INTERNAL_ERROR } from './payment-errors';
import { createPaidToolsServer } from './paid-tools-server';
import { ToolPayments } from './tool-payments';

/**
 * `POST /mcp`: the paid tools over MCP Streamable HTTP, stateless (a new server and transport per request, the SDK's
 * stateless pattern), answering JSON rather than SSE. Mount it after the JSON body reader, which has parsed `req.body`.
 */
export function createMcpHandler(config: MerchantConfig): RequestHandler {
  registerLogSecrets([config.facilitatorApiKey]);
  const payments = new ToolPayments(
    new MppFacilitatorClient({ url: config.facilitatorUrl, apiKey: config.facilitatorApiKey, fetch: fetchWithTimeout(config.facilitatorTimeoutMs) }),
  );
  const logger = new Logger('McpHandler');

  return async (req: Request, res: Response, next: NextFunction) => {
    if (req.path !== '/') return next();
    // Stateless: no SSE stream to open (GET) and no session to end (DELETE).
    if (req.method !== 'POST') {
      res.status(405).setHeader('allow', 'POST').json(jsonRpcError(-32000, 'Method not allowed: this MCP endpoint is stateless, POST JSON-RPC messages'));
      return;
    }
    const server = createPaidToolsServer(config, payments);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, liftRootMeta(req.body));
    } catch (error) {
      logger.error(`an MCP request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) res.status(500).json(jsonRpcError(INTERNAL_ERROR, 'Internal error'));
    }
  };
}

function jsonRpcError(code: number, message: string) {
  return { jsonrpc: '2.0', error: { code, message }, id: null };
}

/**
 * The generic JSON-RPC payment binding puts the credential in a root `_meta`, which the MCP SDK refuses (its request
 * schema is strict); moved under `params._meta`, where MCP carries it. Entries already in `params._meta` win.
 */
function liftRootMeta(body: unknown): unknown {
  if (Array.isArray(body)) return body.map(liftRootMeta);
  if (!isObject(body) || !isObject(body._meta)) return body;
  const { _meta: rootMeta, ...message } = body;
  const params = isObject(message.params) ? message.params : {};
  return { ...message, params: { ...params, _meta: { ...rootMeta, ...(isObject(params._meta) ? params._meta : {}) } } };
}
