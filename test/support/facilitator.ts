import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { ChainManifest } from '@mp/chain';
import { configureHttpApp, serveHotRoutes } from '@mp/platform';
import { AppModule } from '../../apps/facilitator/src/app.module';
import { loadFacilitatorConfig, type FacilitatorConfig } from '../../apps/facilitator/src/config/facilitator.config';
import { x402HotRoutes } from '../../apps/facilitator/src/x402/x402.hot-routes';

export const TEST_DATABASE_URL = process.env.DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/machine_payments_test';

// Tests run the facilitator in open mode (no API key needed on /verify and /settle) unless they pass
// FACILITATOR_OPEN_MODE themselves; set here too, so facilitators that tests spawn as processes inherit it.
process.env.FACILITATOR_OPEN_MODE ??= 'true';
// Open mode is rate-limited per client address, and every test client is 127.0.0.1: a budget no suite reaches.
process.env.OPEN_MODE_RATE_LIMIT_PER_MINUTE ??= '1000000';
// Test receivers listen on 127.0.0.1, which webhooks may reach only when the operator allows private destinations;
// the merchants CLI that tests run reads it too. A test of the refusal passes WEBHOOK_ALLOW_PRIVATE: 'false'.
process.env.WEBHOOK_ALLOW_PRIVATE ??= 'true';

/** The operator token test facilitators start with (the operator API is off without one); OPERATOR_TOKEN: '' turns it off. */
export const TEST_OPERATOR_TOKEN = process.env.OPERATOR_TOKEN || 'test-operator-token-0123456789abcdefghij';

export interface RunningFacilitator {
  url: string;
  app: INestApplication;
  config: FacilitatorConfig;
  close(): Promise<void>;
}

/** Boots the real facilitator app on a free port against the test database and the test chain. */
export async function startFacilitator(env: Record<string, string> = {}): Promise<RunningFacilitator> {
  const config = loadFacilitatorConfig({
    ...process.env,
    DATABASE_URL: TEST_DATABASE_URL,
    LOG_LEVEL: 'error',
    FACILITATOR_OPEN_MODE: 'true',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    OPERATOR_TOKEN: TEST_OPERATOR_TOKEN,
    ...env,
  });
  const moduleRef = await Test.createTestingModule({ imports: [AppModule.forConfig(config)] }).compile();
  const app = moduleRef.createNestApplication({ bodyParser: false, logger: ['error'] });
  configureHttpApp(app, { bodyLimitBytes: config.bodyLimitBytes, trustProxy: config.trustProxy });
  serveHotRoutes(app, x402HotRoutes(app), { bodyLimitBytes: config.bodyLimitBytes });
  await app.listen(0, '127.0.0.1');
  const address = app.getHttpServer().address() as { port: number };
  return { url: `http://127.0.0.1:${address.port}`, app, config, close: () => app.close() };
}

export async function postJson(url: string, body: unknown): Promise<{ status: number; body: any; contentType: string | null }> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // keep the text
  }
  return { status: response.status, body: parsed, contentType: response.headers.get('content-type') };
}

/**
 * A FACILITATOR_NETWORKS_FILE with the manifest's network reached through `rpcUrl` (a fault-injecting proxy) and one
 * signer whose key is read from `signerKeyEnv`; `sessionEscrow` for a chain whose escrow is not the manifest's default.
 */
export function proxiedNetworksFile(manifest: ChainManifest, options: { rpcUrl: string; signerKeyEnv: string; label: string; sessionEscrow?: string }): string {
  const usdc = manifest.tokens.usdc;
  const file = join(mkdtempSync(join(tmpdir(), `${options.label}-`)), 'networks.json');
  const network = {
    network: manifest.network,
    displayName: 'anvil behind a misbehaving RPC',
    rpcUrls: [options.rpcUrl],
    pollingIntervalMs: 50,
    signerKeyEnv: [options.signerKeyEnv],
    ...(options.sessionEscrow && { sessionEscrow: options.sessionEscrow }),
    assets: [{ address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } }],
  };
  writeFileSync(file, JSON.stringify({ networks: [network] }));
  return file;
}
