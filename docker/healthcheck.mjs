#!/usr/bin/env node
// The image's HEALTHCHECK: GET /health of the app this container runs, on 127.0.0.1 at the port it listens on
// (its *_PORT variable, else the default). The fake Stripe has no /health: its event list answers instead.
//   node docker/healthcheck.mjs [facilitator|ledger|merchant-agent|fake-stripe]
// Without an argument, the app is the one docker/entrypoint.sh recorded when it started it (a HEALTHCHECK cannot
// see the container's command). Exit 0: healthy; 1: no 2xx answer within the timeout; 2: which app is unknown.
// Plain node, no curl: the slim image has none.
import { readFileSync } from 'node:fs';

export const APP_FILE = '/tmp/machine-payments-app';
const TIMEOUT_MS = 4_000;

const APPS = {
  facilitator: { portVariable: 'FACILITATOR_PORT', defaultPort: 4020, path: '/health' },
  ledger: { portVariable: 'LEDGER_PORT', defaultPort: 4030, path: '/health' },
  'merchant-agent': { portVariable: 'MERCHANT_PORT', defaultPort: 4040, path: '/health' },
  // any sk_test_ key is accepted by the fake
  'fake-stripe': { portVariable: 'FAKE_STRIPE_PORT', defaultPort: 12111, path: '/v1/events?limit=1', headers: { authorization: 'Bearer sk_test_healthcheck' } },
};

function recordedApp() {
  try {
    return readFileSync(APP_FILE, 'utf8').trim();
  } catch {
    return undefined;
  }
}

const app = process.argv[2] ?? recordedApp();
const target = app === undefined ? undefined : APPS[app];
if (!target) {
  console.error(`healthcheck: unknown app ${JSON.stringify(app)}; expected one of ${Object.keys(APPS).join(', ')}`);
  process.exit(2);
}
const port = process.env[target.portVariable] || String(target.defaultPort);
const url = `http://127.0.0.1:${port}${target.path}`;
try {
  const response = await fetch(url, { headers: target.headers, signal: AbortSignal.timeout(TIMEOUT_MS) });
  if (!response.ok) throw new Error(`HTTP ${response.status}`);
  process.exit(0);
} catch (error) {
  console.error(`healthcheck: ${app} at ${url}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
