import { Controller, Delete, Get, HttpCode, Inject, Logger, Post, Req, Res, UseGuards } from '@nestjs/common';
import type { Clock } from '@mp/billing';
import { ApiDoc } from '@mp/platform';
import type { Request, Response } from 'express';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema, McpError } from '@modelcontextprotocol/sdk/types.js';
import { CurrentMerchant } from '../auth/current-merchant';
import { MerchantAuthGuard } from '../auth/merchant-auth.guard';
import type { Merchant } from '../auth/merchant-directory';
import { BILLING_CLOCK } from '../billing/billing.clock';
import { SubscriptionsRepository } from '../billing/subscriptions.repository';
import { LedgerService } from '../core/ledger.service';
import { LEDGER_MCP_DOCS } from './ledger-mcp.openapi';
import { LEDGER_TOOLS } from './ledger-tools';

const INVALID_PARAMS = -32602;

/**
 * `POST /mcp`: the merchant's books as MCP tools (balances, how a payment was booked, a subscription's status), for the merchant's own agents.
 * The same API key as the REST API, so a tool reads only that merchant's ledger. Stateless Streamable HTTP answering
 * JSON (a server and transport per request, the SDK's stateless pattern).
 */
@Controller('mcp')
@UseGuards(MerchantAuthGuard)
export class LedgerMcpController {
  private readonly logger = new Logger(LedgerMcpController.name);

  constructor(
    private readonly ledger: LedgerService,
    private readonly subscriptions: SubscriptionsRepository,
    @Inject(BILLING_CLOCK) private readonly clock: Clock,
  ) {}

  @ApiDoc(LEDGER_MCP_DOCS.post)
  @Post()
  @HttpCode(200)
  async handle(@CurrentMerchant() merchant: Merchant, @Req() req: Request, @Res() res: Response): Promise<void> {
    const server = this.serverFor(merchant.merchantId);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res, req.body);
    } catch (error) {
      this.logger.error(`an MCP request failed: ${error instanceof Error ? error.message : String(error)}`);
      if (!res.headersSent) res.status(500).json({ jsonrpc: '2.0', error: { code: -32603, message: 'Internal error' }, id: null });
    }
  }

  /** Stateless: no SSE stream to open (GET) and no session to end (DELETE); the SDK's client takes the 405. */
  @ApiDoc(LEDGER_MCP_DOCS.get)
  @Get()
  stream(@Res() res: Response): void {
    this.refuse(res);
  }

  @ApiDoc(LEDGER_MCP_DOCS.delete)
  @Delete()
  endSession(@Res() res: Response): void {
    this.refuse(res);
  }

  private refuse(res: Response): void {
    res
      .status(405)
      .setHeader('allow', 'POST')
      .json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed: this MCP endpoint is stateless, POST JSON-RPC messages' }, id: null });
  }

  private serverFor(merchantId: string): Server {
    const server = new Server(
      { name: 'ledger', version: '0.1.0' },
      { capabilities: { tools: {} }, instructions: "Read-only tools over the calling merchant's ledger." },
    );
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: [...LEDGER_TOOLS.values()].map((tool) => tool.listing) }));
    server.setRequestHandler(CallToolRequestSchema, async (request) => {
      const tool = LEDGER_TOOLS.get(request.params.name);
      if (!tool) throw new McpError(INVALID_PARAMS, `unknown tool: ${request.params.name}`);
      return tool.run({ merchantId, ledger: this.ledger, subscriptions: this.subscriptions, clock: this.clock }, request.params.arguments);
    });
    return server;
  }
}
