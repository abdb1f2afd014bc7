import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Controller, Get, type INestApplication, Module } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import type { Address } from 'viem';
import { AppLogger, configureHttpApp, createHttpApp, METRIC_NAMES, ObservabilityModule, privateKeyForms, registerLogSecrets } from '@mp/platform';
import { AppModule as FacilitatorModule } from '../apps/facilitator/src/app.module';
import { loadFacilitatorConfig } from '../apps/facilitator/src/config/facilitator.config';
import { AppModule as LedgerModule } from '../apps/ledger/src/app.module';
import { loadLedgerConfig } from '../apps/ledger/src/ledger.config';
import { AppModule as MerchantModule } from '../apps/merchant-agent/src/app.module';
import { loadMerchantConfig } from '../apps/merchant-agent/src/merchant.config';
import { createPaywall } from '../apps/merchant-agent/src/paid-http/paywall';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from './support/chain';
import { postJson, startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from './support/facilitator';
import { createMerchant } from './support/merchants';
import { parseYamlSubset } from './support/yaml-subset';

/** /metrics, request ids and JSON logs, /ready and /health, /docs: the observability of the three apps, end to end. */
const ROOT = path.resolve(__dirname, '..');
const CLOSED_REDIS = 'redis://127.0.0.1:6390';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

function parseExposition(text: string): Sample[] {
  return text
    .split('\n')
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
      if (!m) throw new Error(`unparsable exposition line: ${line}`);
      const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
      return { name: m[1], labels, value: Number(m[3]) };
    });
}

/** The value of the one sample with exactly these labels (0 if absent). */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter(
    (s) => s.name === name && Object.keys(s.labels).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  expect(found.length, `${name}${JSON.stringify(labels)}`).toBeLessThanOrEqual(1);
  return found[0]?.value ?? 0;
}

async function scrape(url: string): Promise<{ text: string; samples: Sample[]; contentType: string | null }> {
  const response = await fetch(`${url}/metrics`);
  expect(response.status).toBe(200);
  const text = await response.text();
  return { text, samples: parseExposition(text), contentType: response.headers.get('content-type') };
}

async function getJson(url: string): Promise<{ status: number; body: any; contentType: string | null; headers: Headers }> {
  const response = await fetch(url);
  const text = await response.text();
  return { status: response.status, body: text ? JSON.parse(text) : undefined, contentType: response.headers.get('content-type'), headers: response.headers };
}

/** A port nothing listens on (fetch refuses well-known "bad" ports such as 9, so take one the OS handed out). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

@Controller('failing')
class FailingController {
  @Get()
  fail(): never {
    throw new Error('a handler that fails');
  }
}

/** An app whose one route fails: what the ProblemFilter logs for a 500. */
@Module({ imports: [ObservabilityModule.forRoot({ service: 'failing' })], controllers: [FailingController] })
class FailingModule {}

const PROMQL_KEYWORDS = new Set(['by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'bool', 'and', 'or', 'unless', 'offset', 'inf', 'nan']);

/**
 * The metric names a PromQL expression selects: what is left once strings, label matchers, ranges and grouping
 * clauses are removed, without function names (followed by `(`), keywords and numbers.
 */
function promqlMetricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ');
  const names = [...bare.matchAll(/(?<![\w:.$])([A-Za-z_:][\w:]*)\b(?!\s*\()/g)].map((m) => m[1]);
  return [...new Set(names.filter((name) => !PROMQL_KEYWORDS.has(name.toLowerCase())))];
}

/** Polls until `find` returns something (a log line written when a response finishes comes just after it). */
async function until<T>(find: () => T | undefined, timeoutMs = 10_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error('the expected log line was not written');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function listen(app: INestApplication): Promise<string> {
  await app.listen(0, '127.0.0.1');
  return `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
}

describe('observability', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const payer = payerAccount(manifest, 2);
  const amount = 10_000n;
  const requirements = (overrides = {}) => v2Requirements(manifest, usdc, amount, overrides);
  const network = manifest.network;

  describe('facilitator', () => {
    let facilitator: RunningFacilitator;
    beforeAll(async () => {
      facilitator = await startFacilitator({ SETTLE_BUDGET_MS: '10000' });
    });
    afterAll(() => facilitator?.close());

    it('GET /metrics is the Prometheus text format with the whole catalogue and the process metrics', async () => {
      const { text, contentType } = await scrape(facilitator.url);
      expect(contentType).toBe('text/plain; version=0.0.4; charset=utf-8');
      const types: Record<string, string> = {
        [METRIC_NAMES.verifyDuration]: 'histogram',
        [METRIC_NAMES.settleDuration]: 'histogram',
        [METRIC_NAMES.verifyTotal]: 'counter',
        [METRIC_NAMES.settleTotal]: 'counter',
        [METRIC_NAMES.queueDepth]: 'gauge',
        [METRIC_NAMES.settlementsPending]: 'gauge',
        [METRIC_NAMES.gasSpent]: 'counter',
        [METRIC_NAMES.signerBalance]: 'gauge',
        [METRIC_NAMES.httpRequestDuration]: 'histogram',
        [METRIC_NAMES.collectErrors]: 'counter',
        process_cpu_seconds_total: 'counter',
        nodejs_eventloop_lag_seconds: 'gauge',
      };
      for (const [name, type] of Object.entries(types)) {
        expect(text, name).toContain(`# HELP ${name} `);
        expect(text, name).toContain(`# TYPE ${name} ${type}`);
      }
    });

    it('reads every signer balance at scrape time', async () => {
      const { samples } = await scrape(facilitator.url);
      for (const signer of manifest.accounts.facilitatorSigners) {
        expect(valueOf(samples, METRIC_NAMES.signerBalance, { network, signer: signer.address }), signer.address).toBeGreaterThan(0);
      }
    });

    it('counts verify and settle answers by network, outcome and reason, and times them', async () => {
      const before = (await scrape(facilitator.url)).samples;
      const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount });
      const cheap = await signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount - 1n });

      expect((await postJson(`${facilitator.url}/verify`, v2Body(payload, requirements()))).body).toMatchObject({ isValid: true });
      expect((await postJson(`${facilitator.url}/verify`, v2Body(cheap, requirements()))).body).toMatchObject({ isValid: false });
      expect((await postJson(`${facilitator.url}/verify`, v2Body(payload, requirements({ network: 'eip155:424242' })))).body).toMatchObject({
        invalidReason: 'invalid_network',
      });
      expect((await postJson(`${facilitator.url}/verify`, { x402Version: 2 })).status).toBe(400);
      const settled = (await postJson(`${facilitator.url}/settle`, v2Body(payload, requirements()))).body;
      expect(settled).toMatchObject({ success: true });
      expect((await postJson(`${facilitator.url}/settle`, v2Body(cheap, requirements()))).body).toMatchObject({ success: false });

      const after = (await scrape(facilitator.url)).samples;
      const delta = (name: string, labels: Record<string, string>) => valueOf(after, name, labels) - valueOf(before, name, labels);
      expect(delta(METRIC_NAMES.verifyTotal, { network, outcome: 'valid', reason: 'none' })).toBe(1);
      expect(delta(METRIC_NAMES.verifyTotal, { network, outcome: 'invalid', reason: 'invalid_exact_evm_payload_authorization_value_mismatch' })).toBe(1);
      // A network nobody configured is not a label value: client input never reaches the label set.
      expect(delta(METRIC_NAMES.verifyTotal, { network: 'unknown', outcome: 'invalid', reason: 'invalid_network' })).toBe(1);
      expect(delta(METRIC_NAMES.verifyTotal, { network: 'unknown', outcome: 'invalid', reason: 'validation_failed' })).toBe(1);
      expect(after.some((s) => Object.values(s.labels).includes('eip155:424242'))).toBe(false);
      expect(delta(METRIC_NAMES.settleTotal, { network, outcome: 'success', reason: 'none' })).toBe(1);
      expect(delta(METRIC_NAMES.settleTotal, { network, outcome: 'invalid', reason: 'invalid_exact_evm_payload_authorization_value_mismatch' })).toBe(1);

      expect(delta(`${METRIC_NAMES.verifyDuration}_count`, { network, outcome: 'valid' })).toBe(1);
      expect(delta(`${METRIC_NAMES.verifyDuration}_sum`, { network, outcome: 'valid' })).toBeGreaterThan(0);
      expect(delta(`${METRIC_NAMES.verifyDuration}_bucket`, { network, outcome: 'valid', le: '+Inf' })).toBe(1);
      expect(delta(`${METRIC_NAMES.settleDuration}_count`, { network, outcome: 'success' })).toBe(1);
      expect(delta(`${METRIC_NAMES.settleDuration}_sum`, { network, outcome: 'success' })).toBeGreaterThan(0);
      expect(delta(`${METRIC_NAMES.settleDuration}_count`, { network, outcome: 'invalid' })).toBe(1);
    });

    it('labels HTTP requests by route template, never by raw URL, including bodies refused before routing', async () => {
      const before = (await scrape(facilitator.url)).samples;
      await fetch(`${facilitator.url}/supported`).then((r) => r.arrayBuffer());
      await fetch(`${facilitator.url}/no-such-route/secret-looking-path-123`).then((r) => r.arrayBuffer());
      const refused = await fetch(`${facilitator.url}/verify`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' });
      expect(refused.status).toBe(415);
      await refused.arrayBuffer();
      const after = await scrape(facilitator.url);
      const delta = (labels: Record<string, string>) =>
        valueOf(after.samples, `${METRIC_NAMES.httpRequestDuration}_count`, labels) - valueOf(before, `${METRIC_NAMES.httpRequestDuration}_count`, labels);
      expect(delta({ method: 'GET', route: '/supported', status: '200' })).toBe(1);
      expect(delta({ method: 'GET', route: 'unmatched', status: '404' })).toBe(1);
      expect(delta({ method: 'POST', route: '/verify', status: '415' })).toBe(1);
      expect(after.text).not.toContain('secret-looking-path-123');
    });

    it('echoes a sane x-request-id and replaces anything else with its own', async () => {
      const idOf = async (headers: Record<string, string>) => (await fetch(`${facilitator.url}/health`, { headers })).headers.get('x-request-id');
      expect(await idOf({ 'x-request-id': 'client-7f3a:retry.2' })).toBe('client-7f3a:retry.2');
      const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
      expect(await idOf({})).toMatch(uuid);
      expect(await idOf({ 'x-request-id': 'two words' })).toMatch(uuid);
      expect(await idOf({ 'x-request-id': 'a'.repeat(129) })).toMatch(uuid);
      expect(await idOf({ 'x-request-id': 'a'.repeat(128) })).toBe('a'.repeat(128));
      const refused = await fetch(`${facilitator.url}/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'refused-1' },
        body: '{',
      });
      expect(refused.status).toBe(400);
      expect(refused.headers.get('x-request-id')).toBe('refused-1');
    });

    it('GET /ready checks the database, Redis and every RPC; GET /health checks nothing', async () => {
      const ready = await getJson(`${facilitator.url}/ready`);
      expect(ready.status).toBe(200);
      expect(ready.body).toEqual({ status: 'ready', checks: { database: 'ok', redis: 'ok', [network]: expect.stringMatching(/^ok \(block \d+\)$/) } });
      expect(await getJson(`${facilitator.url}/health`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    });

    it('GET /docs is Swagger UI loading its assets from the app itself', async () => {
      const response = await fetch(`${facilitator.url}/docs`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8');
      const html = await response.text();
      expect(html).toContain('<div id="swagger-ui"></div>');
      expect(html).not.toMatch(/(?:src|href)="(?:https?:)?\/\//);
      const assets = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
      expect(assets).toEqual(expect.arrayContaining(['/docs/assets/swagger-ui.css', '/docs/assets/swagger-ui-bundle.js', '/docs/assets/init.js']));
      for (const asset of assets) {
        const r = await fetch(`${facilitator.url}${asset}`);
        const body = await r.text();
        expect(r.status, asset).toBe(200);
        expect(body.length, asset).toBeGreaterThan(100);
        if (asset.endsWith('.js')) expect(r.headers.get('content-type'), asset).toMatch(/javascript/);
        if (asset.endsWith('.css')) expect(r.headers.get('content-type'), asset).toMatch(/^text\/css/);
      }
      expect(await fetch(`${facilitator.url}/docs/assets/init.js`).then((r) => r.text())).toContain("'/docs/openapi.json'");
      for (const other of ['/docs/assets/index.html', '/docs/assets/package.json', '/docs/assets/..%2F..%2Fpackage.json']) {
        expect((await fetch(`${facilitator.url}${other}`)).status, other).toBe(404);
      }
    });

    it('GET /docs/openapi.json and GET /openapi.json are docs/api/facilitator.openapi.json, byte for byte', async () => {
      const response = await fetch(`${facilitator.url}/docs/openapi.json`);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(await response.text()).toBe(readFileSync(path.join(ROOT, 'docs/api/facilitator.openapi.json'), 'utf8'));
      expect(await fetch(`${facilitator.url}/openapi.json`).then((r) => r.text())).toBe(
        readFileSync(path.join(ROOT, 'docs/api/facilitator.openapi.json'), 'utf8'),
      );
    });
  });

  describe('facilitator with a dead RPC', () => {
    let facilitator: RunningFacilitator;
    beforeAll(async () => {
      const file = path.join(mkdtempSync(path.join(tmpdir(), 'observability-')), 'networks.json');
      const asset = { address: usdc.address, symbol: 'USDC', decimals: 6, eip712: { name: usdc.name, version: usdc.version } };
      writeFileSync(
        file,
        JSON.stringify({
          networks: [
            { network, displayName: 'anvil', rpcUrls: [manifest.rpcUrl], pollingIntervalMs: 25, signerKeyEnv: ['TEST_SIGNER_KEY'], assets: [asset] },
            { network: 'eip155:999999', displayName: 'dead rpc', rpcUrls: ['http://127.0.0.1:9'], signerKeyEnv: ['TEST_SIGNER_KEY'], assets: [asset] },
          ],
        }),
      );
      facilitator = await startFacilitator({
        FACILITATOR_NETWORKS_FILE: file,
        TEST_SIGNER_KEY: manifest.accounts.facilitatorSigners[3].privateKey,
        RPC_TIMEOUT_MS: '500',
      });
    });
    afterAll(() => facilitator?.close());

    it('GET /ready is 503 upstream_unavailable naming the network; GET /health stays 200', async () => {
      const ready = await getJson(`${facilitator.url}/ready`);
      expect(ready.status).toBe(503);
      expect(ready.contentType).toBe('application/problem+json; charset=utf-8');
      expect(ready.body).toMatchObject({
        type: 'urn:problem:upstream_unavailable',
        code: 'upstream_unavailable',
        status: 503,
        detail: 'not ready: eip155:999999 unavailable',
        instance: '/ready',
        health: 'degraded',
        checks: { database: 'ok', redis: 'ok', [network]: expect.stringMatching(/^ok \(block \d+\)$/), 'eip155:999999': expect.stringMatching(/^down: /) },
      });
      expect(ready.body.checks['eip155:999999']).not.toContain('http://');
      expect(await getJson(`${facilitator.url}/health`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    });

    it('a failed balance read is counted and does not break the scrape', async () => {
      const { samples } = await scrape(facilitator.url);
      expect(valueOf(samples, METRIC_NAMES.collectErrors, { collector: 'signer_balances' })).toBeGreaterThanOrEqual(1);
      expect(valueOf(samples, METRIC_NAMES.signerBalance, { network, signer: manifest.accounts.facilitatorSigners[3].address })).toBeGreaterThan(0);
    });
  });

  describe('facilitator with Redis unreachable', () => {
    let facilitator: RunningFacilitator;
    beforeAll(async () => {
      facilitator = await startFacilitator({ REDIS_URL: CLOSED_REDIS });
    });
    // Bounded: the settlement queue's shutdown waits for a Redis that never comes (reported; not what this tests).
    afterAll(() => Promise.race([facilitator?.close(), new Promise((resolve) => setTimeout(resolve, 5_000))]));

    it('GET /ready is 503 naming redis; GET /health stays 200', async () => {
      const ready = await getJson(`${facilitator.url}/ready`);
      expect(ready.status).toBe(503);
      expect(ready.body).toMatchObject({
        code: 'upstream_unavailable',
        detail: 'not ready: redis unavailable',
        checks: { database: 'ok', redis: expect.stringMatching(/^down: .*ECONNREFUSED/), [network]: expect.stringMatching(/^ok/) },
      });
      expect(await getJson(`${facilitator.url}/health`)).toMatchObject({ status: 200, body: { status: 'ok' } });
    });
  });

  describe('ledger and merchant agent', () => {
    const apps: INestApplication[] = [];
    let facilitator: RunningFacilitator;
    beforeAll(async () => {
      facilitator = await startFacilitator();
    });
    afterAll(async () => {
      for (const app of apps) await app.close();
      await facilitator?.close();
    });

    const ledger = async (env: Record<string, string> = {}) => {
      const config = loadLedgerConfig({ ...process.env, DATABASE_URL: TEST_DATABASE_URL, ...env });
      const app = (await Test.createTestingModule({ imports: [LedgerModule.forConfig(config)] }).compile()).createNestApplication({
        bodyParser: false,
        logger: ['error'],
      });
      configureHttpApp(app);
      apps.push(app);
      return listen(app);
    };
    const merchantAgent = async (facilitatorUrl: string) => {
      const config = loadMerchantConfig({ ...process.env, FACILITATOR_URL: facilitatorUrl });
      const app = (await Test.createTestingModule({ imports: [MerchantModule.forConfig(config)] }).compile()).createNestApplication({
        bodyParser: false,
        logger: ['error'],
      });
      configureHttpApp(app);
      apps.push(app);
      return listen(app);
    };

    it('ledger: /ready checks the database and Redis, /health is liveness, /metrics and /docs are served', async () => {
      const url = await ledger();
      expect(await getJson(`${url}/ready`)).toMatchObject({ status: 200, body: { status: 'ready', checks: { database: 'ok', redis: 'ok' } } });
      expect(await getJson(`${url}/health`)).toMatchObject({ status: 200, body: { status: 'ok' } });
      const { text } = await scrape(url);
      expect(text).toContain('# TYPE http_request_duration_seconds histogram');
      expect(text).not.toContain('x402_verify_total');
      expect((await fetch(`${url}/docs`)).status).toBe(200);
      expect(await fetch(`${url}/docs/openapi.json`).then((r) => r.text())).toBe(readFileSync(path.join(ROOT, 'docs/api/ledger.openapi.json'), 'utf8'));
    });

    it('ledger: /ready is 503 naming redis when Redis is unreachable', async () => {
      const url = await ledger({ REDIS_URL: CLOSED_REDIS });
      expect(await getJson(`${url}/ready`)).toMatchObject({
        status: 503,
        body: { code: 'upstream_unavailable', checks: { database: 'ok', redis: expect.stringMatching(/^down: /) } },
      });
      expect((await getJson(`${url}/health`)).status).toBe(200);
    });

    it('merchant agent: a 402 from the paywall, answered before routing, is labelled with its route', async () => {
      const config = loadMerchantConfig({ ...process.env, FACILITATOR_URL: facilitator.url });
      const app = (await Test.createTestingModule({ imports: [MerchantModule.forConfig(config)] }).compile()).createNestApplication({
        bodyParser: false,
        logger: ['error'],
      });
      configureHttpApp(app);
      app.use(createPaywall(config));
      apps.push(app);
      const url = await listen(app);
      const response = await fetch(`${url}/paid/forecast`);
      expect(response.status).toBe(402);
      expect(response.headers.get('x-request-id')).toBeTruthy();
      await response.arrayBuffer();
      const { samples } = await scrape(url);
      expect(valueOf(samples, `${METRIC_NAMES.httpRequestDuration}_count`, { method: 'GET', route: '/paid/forecast', status: '402' })).toBe(1);
    });

    it("merchant agent: /ready follows the facilitator's /health", async () => {
      const up = await merchantAgent(facilitator.url);
      expect(await getJson(`${up}/ready`)).toMatchObject({ status: 200, body: { status: 'ready', checks: { facilitator: 'ok' } } });
      const down = await merchantAgent(`http://127.0.0.1:${await closedPort()}`);
      expect(await getJson(`${down}/ready`)).toMatchObject({
        status: 503,
        body: {
          code: 'upstream_unavailable',
          detail: 'not ready: facilitator unavailable',
          checks: { facilitator: expect.stringMatching(/^down: .*ECONNREFUSED/) },
        },
      });
      expect((await getJson(`${down}/health`)).status).toBe(200);
    });
  });

  describe('docker/observability: Prometheus config, alert rules and the Grafana dashboard', () => {
    const DIR = path.join(ROOT, 'docker/observability');
    const yaml = (file: string) => parseYamlSubset(readFileSync(path.join(DIR, file), 'utf8')) as any;
    const apps: INestApplication[] = [];
    let facilitator: RunningFacilitator;
    /** Every series name the three apps expose (histograms as _bucket/_sum/_count), by service. */
    const exposed: Record<string, Set<string>> = {};

    const seriesNames = (text: string): Set<string> => {
      const names = new Set<string>();
      for (const [, name, type] of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
        if (type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
        else if (type === 'summary') for (const suffix of ['', '_sum', '_count']) names.add(name + suffix);
        else names.add(name);
      }
      return names;
    };

    beforeAll(async () => {
      // The facilitator in its default role `all`: API and worker metrics (outbox_*) in one registry.
      facilitator = await startFacilitator();
      const ledgerConfig = loadLedgerConfig({ ...process.env, DATABASE_URL: TEST_DATABASE_URL, RECON_SCHEDULE: 'off' });
      const ledgerApp = (await Test.createTestingModule({ imports: [LedgerModule.forConfig(ledgerConfig)] }).compile()).createNestApplication({
        bodyParser: false,
        logger: ['error'],
      });
      configureHttpApp(ledgerApp);
      apps.push(ledgerApp);
      const merchantConfig = loadMerchantConfig({ ...process.env, FACILITATOR_URL: facilitator.url });
      const merchantApp = (await Test.createTestingModule({ imports: [MerchantModule.forConfig(merchantConfig)] }).compile()).createNestApplication({
        bodyParser: false,
        logger: ['error'],
      });
      configureHttpApp(merchantApp);
      apps.push(merchantApp);
      const urls = { facilitator: facilitator.url, ledger: await listen(ledgerApp), 'merchant-agent': await listen(merchantApp) };
      for (const [service, url] of Object.entries(urls)) exposed[service] = seriesNames((await scrape(url)).text);
    });
    afterAll(async () => {
      for (const app of apps) await app.close();
      await facilitator?.close();
    });

    /** Every expression of the alert rules and the dashboard panels, named for the failure message. */
    const expressions = (): { where: string; expr: string }[] => {
      const rules = yaml('alerts.yml').groups.flatMap((g: any) => g.rules.map((r: any) => ({ where: `alerts.yml ${g.name}/${r.alert}`, expr: r.expr })));
      const dashboard = JSON.parse(readFileSync(path.join(DIR, 'grafana/dashboards/machine-payments.json'), 'utf8'));
      const panels = dashboard.panels.flatMap((p: any) => (p.targets ?? []).map((t: any) => ({ where: `dashboard "${p.title}" ${t.refId}`, expr: t.expr })));
      return [...rules, ...panels];
    };

    it('prometheus.yml scrapes the three apps by their compose names and loads alerts.yml', () => {
      const config = yaml('prometheus.yml');
      expect(config.rule_files).toEqual(['alerts.yml']);
      const jobs = Object.fromEntries(
        config.scrape_configs.map((c: any) => [c.job_name, { path: c.metrics_path, targets: c.static_configs.flatMap((s: any) => s.targets) }]),
      );
      expect(jobs).toEqual({
        facilitator: { path: '/metrics', targets: ['facilitator:4020'] },
        ledger: { path: '/metrics', targets: ['ledger:4030'] },
        'merchant-agent': { path: '/metrics', targets: ['merchant-agent:4040'] },
      });
    });

    it('every alert rule has a name, an expression, a severity and a summary', () => {
      const groups = yaml('alerts.yml').groups;
      const rules = groups.flatMap((g: any) => g.rules);
      expect(rules.length).toBeGreaterThanOrEqual(10);
      for (const rule of rules) {
        expect(rule, JSON.stringify(rule)).toMatchObject({
          alert: expect.stringMatching(/^[A-Z][A-Za-z]+$/),
          expr: expect.any(String),
          labels: { severity: expect.stringMatching(/^(page|warning)$/) },
          annotations: { summary: expect.any(String) },
        });
        if (rule.for !== undefined) expect(rule.for).toMatch(/^\d+[smh]$/);
      }
      expect(new Set(rules.map((r: any) => r.alert)).size).toBe(rules.length);
    });

    it('every metric an alert or a panel queries is one the apps expose', () => {
      const known = new Set(['up', ...Object.values(exposed).flatMap((names) => [...names])]);
      const all = expressions();
      expect(all.length).toBeGreaterThan(20);
      const unknown: string[] = [];
      for (const { where, expr } of all) {
        const names = promqlMetricNames(expr);
        expect(names.length, `${where}: no metric found in ${expr}`).toBeGreaterThan(0);
        for (const name of names) if (!known.has(name)) unknown.push(`${where}: ${name}`);
      }
      expect(unknown).toEqual([]);
      // The extraction itself: a misspelt name is caught, functions, labels and ranges are not names.
      expect(
        promqlMetricNames('histogram_quantile(0.95, sum by (le, network) (rate(x402_settle_duration_seconds_bucket{outcome="success"}[5m]))) > 1e16'),
      ).toEqual(['x402_settle_duration_seconds_bucket']);
      expect(known.has('x402_settle_duration_seconds')).toBe(false);
    });

    it("the facilitator-only metrics are the facilitator's, the ledger's the ledger's; the merchant agent has the HTTP ones", () => {
      for (const name of ['x402_settle_total', 'signer_balance_wei', 'settlement_queue_depth', 'outbox_oldest_unacknowledged_seconds'])
        expect(exposed.facilitator.has(name), name).toBe(true);
      for (const name of ['ledger_payment_events_total', 'ledger_ingestion_queue_jobs', 'reconciliation_runs_total', 'ledger_payment_event_lag_seconds_bucket'])
        expect(exposed.ledger.has(name), name).toBe(true);
      expect(exposed['merchant-agent'].has('http_request_duration_seconds_count')).toBe(true);
    });

    it('Grafana: the datasource and the dashboard provider are provisioned where compose mounts them', () => {
      const datasources = yaml('grafana/provisioning/datasources/prometheus.yml');
      expect(datasources).toMatchObject({ apiVersion: 1, datasources: [{ type: 'prometheus', uid: 'prometheus', url: 'http://prometheus:9090' }] });
      const providers = yaml('grafana/provisioning/dashboards/dashboards.yml');
      expect(providers).toMatchObject({ apiVersion: 1, providers: [{ type: 'file', options: { path: '/var/lib/grafana/dashboards' } }] });
      const dashboard = JSON.parse(readFileSync(path.join(DIR, 'grafana/dashboards/machine-payments.json'), 'utf8'));
      expect(dashboard).toMatchObject({ uid: 'machine-payments', title: expect.any(String), schemaVersion: expect.any(Number) });
      const ids = dashboard.panels.map((p: any) => p.id);
      expect(new Set(ids).size).toBe(ids.length);
      for (const panel of dashboard.panels.filter((p: any) => p.type !== 'row')) {
        expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: 'prometheus' });
        expect(panel.targets.length, panel.title).toBeGreaterThan(0);
      }
    });

    it('the YAML reader refuses what it does not understand', () => {
      expect(() => parseYamlSubset('a: 1\n  b: 2')).toThrow(/line 2/);
      expect(() => parseYamlSubset('a: {b: 1}')).toThrow(/unsupported/);
      expect(() => parseYamlSubset('a: b: c')).toThrow(/plain scalar/);
      expect(() => parseYamlSubset('a: 1\na: 2')).toThrow(/duplicate key/);
      expect(parseYamlSubset('k: v # note\nl: \'q # kept\'\nm: |\n  one\n    two\nn: [x, "y, z"]\no: 15s\np: 1\nq: false')).toEqual({
        k: 'v',
        l: 'q # kept',
        m: 'one\n  two\n',
        n: ['x', 'y, z'],
        o: '15s',
        p: 1,
        q: false,
      });
    });
  });

  // Last: createHttpApp installs its logger as Nest's global logger for the rest of this file.
  describe('JSON logs', () => {
    const lines: string[] = [];
    let app: INestApplication;
    let url: string;
    const config = loadFacilitatorConfig({ ...process.env, DATABASE_URL: TEST_DATABASE_URL });
    const keys = config.networks.flatMap((n) => n.signerKeys);

    beforeAll(async () => {
      registerLogSecrets(keys.flatMap(privateKeyForms));
      const logger = new AppLogger({
        service: 'facilitator',
        format: 'json',
        levels: ['fatal', 'error', 'warn', 'log', 'debug'],
        write: (line) => lines.push(line),
      });
      app = await createHttpApp(FacilitatorModule.forConfig(config), { bodyLimitBytes: config.bodyLimitBytes, logger });
      url = await listen(app);
    });
    afterAll(() => app?.close());

    it('writes one JSON object per line, with the request id of the request being handled', async () => {
      const response = await fetch(`${url}/supported`, {
        headers: { 'x-request-id': 'log-test-1', authorization: 'Bearer do-not-log-me', 'x-api-key': 'do-not-log-me-either' },
      });
      expect(response.headers.get('x-request-id')).toBe('log-test-1');
      await response.arrayBuffer();
      const access = await until(() => lines.map((line) => JSON.parse(line)).find((r) => r.requestId === 'log-test-1' && r.context === 'HTTP'));
      expect(access).toMatchObject({
        level: 'info',
        service: 'facilitator',
        context: 'HTTP',
        requestId: 'log-test-1',
        message: expect.stringContaining('GET /supported 200'),
      });
      expect(access.params).toMatchObject({
        method: 'GET',
        path: '/supported',
        route: '/supported',
        status: 200,
        client: '127.0.0.1',
        durationMs: expect.any(Number),
      });
      expect(access.params).not.toHaveProperty('headers');
      const records = lines.map((line) => JSON.parse(line));
      expect(records.find((r) => r.message === 'Nest application successfully started')).toMatchObject({ level: 'info', service: 'facilitator' });
    });

    it('a line logged deep inside the handler, after the body was read and the chain was asked, carries the request id', async () => {
      const zero = '0x0000000000000000000000000000000000000000' as Address;
      const payload = await signAuthorization(payer, usdc, manifest.chainId, { to: zero, value: amount });
      const response = await fetch(`${url}/verify`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'log-test-2' },
        body: JSON.stringify(v2Body(payload, requirements({ payTo: zero }))),
      });
      expect(await response.json()).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_transaction_simulation_failed' });
      const records = lines.map((line) => JSON.parse(line));
      expect(records.find((r) => r.context === 'EvmTransferRail')).toMatchObject({
        level: 'debug',
        requestId: 'log-test-2',
        message: expect.stringMatching(/^simulation failed for /),
      });
    });

    it('never writes a signer key or a redacted header value', () => {
      const all = lines.join('\n').toLowerCase();
      expect(all).not.toContain('do-not-log-me');
      for (const key of keys) for (const form of privateKeyForms(key)) expect(all).not.toContain(form.toLowerCase());
    });
  });
  // After 'JSON logs', for the same reason: createHttpApp installs this logger globally.
  describe('access log on stdout', () => {
    const captured: string[] = [];
    const apps: INestApplication[] = [];
    let facilitatorUrl: string;
    let ledgerUrl: string;
    let failingUrl: string;
    let merchantKey: string;
    let merchantId: string;
    let restore: () => void;

    /** The access line of the request with this id, as written to stdout. */
    const accessLine = (requestId: string) =>
      until(() => captured.map((line) => JSON.parse(line)).find((r) => r.context === 'HTTP' && r.requestId === requestId));

    beforeAll(async () => {
      // stdout (access lines) and stderr (errors): the JSON lines are kept, anything else goes through.
      const spies = [process.stdout, process.stderr].map((stream) => {
        const write = stream.write.bind(stream);
        return vi.spyOn(stream, 'write').mockImplementation(((chunk: string | Uint8Array, ...rest: unknown[]) => {
          const text = String(chunk);
          if (text.startsWith('{"level":')) captured.push(...text.split('\n').filter(Boolean));
          else return (write as (...args: unknown[]) => boolean)(chunk, ...rest);
          return true;
        }) as typeof stream.write);
      });
      restore = () => spies.forEach((spy) => spy.mockRestore());
      ({ apiKey: merchantKey, merchantId } = createMerchant(`access-log-${Date.now()}`));
      const levels = ['fatal', 'error', 'warn', 'log'] as const;
      const facilitatorConfig = loadFacilitatorConfig({ ...process.env, DATABASE_URL: TEST_DATABASE_URL, FACILITATOR_OPEN_MODE: 'true' });
      const facilitatorApp = await createHttpApp(FacilitatorModule.forConfig(facilitatorConfig), {
        logger: new AppLogger({ service: 'facilitator', format: 'json', levels: [...levels] }),
      });
      apps.push(facilitatorApp);
      facilitatorUrl = await listen(facilitatorApp);
      const ledgerConfig = loadLedgerConfig({ ...process.env, DATABASE_URL: TEST_DATABASE_URL, LEDGER_INGEST: 'false', RECON_SCHEDULE: 'off' });
      const ledgerApp = await createHttpApp(LedgerModule.forConfig(ledgerConfig), {
        logger: new AppLogger({ service: 'ledger', format: 'json', levels: [...levels] }),
      });
      apps.push(ledgerApp);
      ledgerUrl = await listen(ledgerApp);
      const failingApp = await createHttpApp(FailingModule, { logger: new AppLogger({ service: 'failing', format: 'json', levels: [...levels] }) });
      apps.push(failingApp);
      failingUrl = await listen(failingApp);
    });
    afterAll(async () => {
      for (const app of apps) await app.close();
      restore?.();
    });

    it('one info line per request with the merchant of the API key, never the key itself', async () => {
      const response = await fetch(`${facilitatorUrl}/merchants/me`, {
        headers: { authorization: `Bearer ${merchantKey}`, 'x-request-id': 'access-1', 'user-agent': 'access-test/1' },
      });
      expect(response.status).toBe(200);
      await response.arrayBuffer();
      const line = await accessLine('access-1');
      expect(line).toMatchObject({ level: 'info', context: 'HTTP', message: 'GET /merchants/me 200 ' + line.params.durationMs + ' ms' });
      expect(line.params).toEqual({
        method: 'GET',
        path: '/merchants/me',
        route: '/merchants/me',
        status: 200,
        durationMs: expect.any(Number),
        client: '127.0.0.1',
        merchantId,
        userAgent: 'access-test/1',
      });
      expect(captured.filter((l) => l.includes('"requestId":"access-1"') && l.includes('"context":"HTTP"'))).toHaveLength(1);
      expect(captured.join('\n')).not.toContain(merchantKey);
    });

    it('payment credential headers are never written, nor is a refused key', async () => {
      const credentials = {
        'x-payment': 'x-payment-credential-0001',
        'payment-signature': 'payment-signature-credential-0002',
        payment: 'payment-credential-0003',
        'x-api-key': 'mp_live_not-a-real-key-0004',
      };
      const response = await fetch(`${facilitatorUrl}/settle`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-request-id': 'access-2', ...credentials },
        body: '{}',
      });
      expect(response.status).toBe(401); // the X-API-Key is checked, and refused, even in open mode
      await response.arrayBuffer();
      const refused = await fetch(`${facilitatorUrl}/merchants/me`, {
        headers: { 'x-request-id': 'access-3', authorization: 'Bearer mp_live_refused-key-0005' },
      });
      expect(refused.status).toBe(401);
      await refused.arrayBuffer();
      expect((await accessLine('access-2')).params).toMatchObject({ method: 'POST', path: '/settle', status: 401 });
      expect((await accessLine('access-3')).params).toMatchObject({ path: '/merchants/me', status: 401 });
      expect((await accessLine('access-3')).params).not.toHaveProperty('merchantId');
      const all = captured.join('\n');
      for (const value of [...Object.values(credentials), 'refused-key-0005']) expect(all).not.toContain(value);
    });

    it("a report link's token is masked in the query; other parameters stay", async () => {
      const token = 'report-link-token-c2VjcmV0LXNpZ25hdHVyZQ';
      const runId = '00000000-0000-4000-8000-000000000000';
      const response = await fetch(`${ledgerUrl}/reconciliations/${runId}/report?token=${token}&view=all`, { headers: { 'x-request-id': 'access-4' } });
      expect(response.status).toBeGreaterThanOrEqual(400);
      expect(response.status).toBeLessThan(500);
      await response.arrayBuffer();
      const line = await accessLine('access-4');
      expect(line.params).toMatchObject({
        method: 'GET',
        path: `/reconciliations/${runId}/report`,
        query: 'token=[REDACTED]&view=all',
        route: '/reconciliations/:id/report',
        status: response.status,
      });
      expect(line.message).toBe(`GET /reconciliations/${runId}/report?token=[REDACTED]&view=all ${response.status} ${line.params.durationMs} ms`);
      expect(captured.join('\n')).not.toContain(token);
    });

    it("a 500 is logged with its stack, and neither that line nor the access line carries the query's token", async () => {
      const token = 'failing-link-token-dG9wLXNlY3JldA';
      const response = await fetch(`${failingUrl}/failing?token=${token}`, { headers: { 'x-request-id': 'access-5' } });
      expect(response.status).toBe(500);
      await response.arrayBuffer();
      expect((await accessLine('access-5')).params).toMatchObject({ path: '/failing', query: 'token=[REDACTED]', status: 500 });
      const error = await until(() => captured.map((line) => JSON.parse(line)).find((r) => r.context === 'ProblemFilter' && r.requestId === 'access-5'));
      expect(error).toMatchObject({
        level: 'error',
        message: 'unhandled error on GET /failing?token=[REDACTED]',
        stack: expect.stringContaining('a handler that fails'),
      });
      expect(captured.join('\n')).not.toContain(token);
    });
  });
});
