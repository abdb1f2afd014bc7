import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { PrismaService } from '@mp/db';
import { configureHttpApp } from '@mp/platform';
import { freePort } from '../../../test/support/net';
import { mountA2a } from '../src/a2a/mount-a2a';
import { X402_EXTENSION_URIS } from '../src/a2a/x402/extension';
import { AppModule } from '../src/app.module';
import { createMcpHandler } from '../src/mcp/mcp-handler';
import { loadMerchantConfig, type MerchantConfig } from '../src/merchant.config';
import { createMppPaywall } from '../src/mpp/mpp-paywall';

/** Test helpers of the A2A specs: the merchant agent as main.ts wires it, and the JSON-RPC binding on the wire. */

export interface RunningMerchant {
  url: string;
  app: INestApplication;
  config: MerchantConfig;
  db: PrismaService;
  close(): Promise<void>;
}

/** Boots the merchant agent on the test database, as main.ts wires it (with its MCP tools at /mcp and its MPP routes when asked). */
export async function startA2aMerchant(env: Record<string, string>, options: { mcp?: boolean; mpp?: boolean } = {}): Promise<RunningMerchant> {
  const listenOn = await freePort();
  const config = loadMerchantConfig({ ...process.env, MERCHANT_PORT: String(listenOn), ...env });
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  mountA2a(app);
  configureHttpApp(app);
  if (options.mcp) app.use('/mcp', createMcpHandler(config));
  if (options.mpp) app.use(createMppPaywall(config));
  await app.listen(listenOn, '127.0.0.1');
  return { url: `http://127.0.0.1:${listenOn}`, app, config, db: app.get(PrismaService), close: () => app.close() };
}

export const X402_V02 = X402_EXTENSION_URIS.v02;

export interface RpcAnswer {
  status: number;
  headers: Headers;
  body: any;
}

/** One JSON-RPC call as a client sends it: A2A 1.0 and the x402 extension unless the headers say otherwise. */
export async function rpc(baseUrl: string, method: string, params: unknown, headers: Record<string, string> = {}): Promise<RpcAnswer> {
  const response = await fetch(`${baseUrl}/a2a/jsonrpc`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'a2a-version': '1.0', 'a2a-extensions': X402_V02, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, body: text ? JSON.parse(text) : undefined };
}

/** A v1.0 user message (ProtoJSON). */
export function userMessage(text: string, fields: { taskId?: string; contextId?: string; metadata?: Record<string, unknown> } = {}) {
  return { messageId: crypto.randomUUID(), role: 'ROLE_USER', parts: [{ text }], ...fields };
}
