import { execFile } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import path from 'node:path';
import { parseEnv, promisify } from 'node:util';
import { startFakeStripe, type FakeStripe } from '@mp/stripe';
import { loadFacilitatorConfig } from '../apps/facilitator/src/config/facilitator.config';
import { loadLedgerConfig } from '../apps/ledger/src/ledger.config';
import { loadReconciliationConfig } from '../apps/ledger/src/reconciliation/reconciliation.config';
import { loadMerchantConfig } from '../apps/merchant-agent/src/merchant.config';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';

/** Keeps .env.example and the Docker image true to the code: the variables the apps read, and the image's HEALTHCHECK. */
const ROOT = path.resolve(__dirname, '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const envExample = read('.env.example');
const dockerfile = read('docker/Dockerfile');

const CONFIG_FILES = [
  'apps/facilitator/src/config/facilitator.config.ts',
  'apps/ledger/src/ledger.config.ts',
  'apps/ledger/src/reconciliation/reconciliation.config.ts',
  'apps/merchant-agent/src/merchant.config.ts',
];
/** Read by the apps but not to be set by anyone outside the crash tests (docs/configuration.md says so). */
const TEST_ONLY = ['CRASH_POINTS'];
/** Read for the apps by the OpenTelemetry SDK that libs/platform/src/tracing.ts starts (the ones it reads itself are found below). */
const READ_BY_OPENTELEMETRY = [
  'OTEL_EXPORTER_OTLP_PROTOCOL',
  'OTEL_EXPORTER_OTLP_HEADERS',
  'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_TRACES_SAMPLER',
  'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_PROPAGATORS',
];
/** The networks file .env.example shows; its signer-key variables are listed with it. */
const EXAMPLE_NETWORKS_FILE = 'docs/examples/networks.base-sepolia.json';

/** Keys of `const envSchema = z.object({ … })` in a config source file (as test/docs.e2e-spec.ts reads them). */
function envSchemaKeys(file: string): string[] {
  const block = /const envSchema = z\.object\(\{([\s\S]*?)\n\}\);/.exec(read(file));
  expect(block, `envSchema in ${file}`).not.toBeNull();
  return [...block![1].matchAll(/^\s+([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]);
}

/** Non-test TypeScript sources of the apps and libraries. */
function appSources(dir: string): string[] {
  return readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
    const rel = path.join(dir, entry.name);
    if (entry.isDirectory()) return ['generated', 'node_modules', 'test'].includes(entry.name) ? [] : appSources(rel);
    return entry.name.endsWith('.ts') && !/\.(e2e-)?spec\.ts$/.test(entry.name) ? [rel] : [];
  });
}

/** `process.env.NAME`, and `env.NAME` where `env` stands for process.env (`const env = process.env`, or a parameter defaulting to it). */
function variablesReadIn(file: string): string[] {
  const text = read(file);
  const names = [...text.matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]);
  if (/\benv(: NodeJS\.ProcessEnv)? = process\.env\b/.test(text)) names.push(...[...text.matchAll(/\benv\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1]));
  return names;
}

interface ExampleLine {
  name: string;
  set: boolean;
  line: number;
}
const lines = envExample.split('\n');
/** `NAME=value` (set) and `# NAME=value` (an optional one, shown unset). */
const exampleLines: ExampleLine[] = lines.flatMap((text, line) => {
  const match = /^(# )?([A-Z][A-Z0-9_]*)=/.exec(text);
  return match ? [{ name: match[2], set: !match[1], line }] : [];
});
const exampleNames = exampleLines.map((l) => l.name);
const setValues = parseEnv(envExample);

describe('.env.example', () => {
  it("names exactly the variables the apps read: their config schemas, process.env, and the example networks file's signer keys", () => {
    const schemaKeys = CONFIG_FILES.flatMap(envSchemaKeys);
    const readDirectly = ['apps', 'libs'].flatMap(appSources).flatMap(variablesReadIn);
    const signerKeys = (JSON.parse(read(EXAMPLE_NETWORKS_FILE)).networks as { signerKeyEnv: string[] }[]).flatMap((n) => n.signerKeyEnv);
    expect(readDirectly).toEqual(expect.arrayContaining(['LOG_LEVEL', 'NODE_ENV', 'FAKE_STRIPE_PORT', 'BUYER_PRIVATE_KEY', ...TEST_ONLY]));
    const expected = new Set([...schemaKeys, ...readDirectly, ...signerKeys, ...READ_BY_OPENTELEMETRY].filter((name) => !TEST_ONLY.includes(name)));
    expect([...new Set(exampleNames)].sort()).toEqual([...expected].sort());
  });

  it('lists each variable once, after a one-line comment of its own, and every one is documented in docs/configuration.md', () => {
    const duplicates = exampleNames.filter((name, i) => exampleNames.indexOf(name) !== i);
    expect(duplicates).toEqual([]);
    const documented = new Set([...read('docs/configuration.md').matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]));
    expect(exampleNames.filter((name) => !documented.has(name))).toEqual([]);
    for (const { name, line } of exampleLines) {
      const above = lines[line - 1];
      expect(above, `the line above ${name}`).toMatch(/^# \S/);
      expect(above, `the line above ${name}`).not.toMatch(/^# [A-Z][A-Z0-9_]*=/);
    }
  });

  it("sets only safe values, and they load through every app's config", () => {
    expect(Object.keys(setValues).sort()).toEqual(
      exampleLines
        .filter((l) => l.set)
        .map((l) => l.name)
        .sort(),
    );
    expect(envExample).not.toMatch(/_live_|0x[0-9a-fA-F]{64}\b/);
    // the test chain's manifest, in place of the example's .local/chain.json
    const env = { ...setValues, CHAIN_MANIFEST: process.env.CHAIN_MANIFEST };
    expect(loadFacilitatorConfig(env)).toMatchObject({ port: 4020, host: '127.0.0.1' });
    expect(loadLedgerConfig(env)).toMatchObject({ port: 4030, host: '127.0.0.1' });
    expect(loadReconciliationConfig(env)).toBeDefined();
    expect(loadMerchantConfig(env)).toMatchObject({ port: 4040, host: '127.0.0.1' });
  });
});

describe('docker/Dockerfile', () => {
  const runtime = dockerfile.slice(dockerfile.indexOf('AS runtime'));

  it('makes every app of the image listen on 0.0.0.0, exposes their default ports and has a HEALTHCHECK', () => {
    const hostVariables = [...CONFIG_FILES.flatMap(envSchemaKeys), 'FAKE_STRIPE_HOST'].filter((name) => name.endsWith('_HOST'));
    expect(hostVariables.sort()).toEqual(['FACILITATOR_HOST', 'FAKE_STRIPE_HOST', 'LEDGER_HOST', 'MERCHANT_HOST']);
    for (const name of hostVariables) expect(runtime).toMatch(new RegExp(`^ENV .*\\b${name}=0\\.0\\.0\\.0\\b`, 'm'));
    expect(runtime).toMatch(/^EXPOSE 4020 4030 4040$/m);
    expect(runtime).toMatch(/^HEALTHCHECK .*CMD \["node", "\/app\/docker\/healthcheck\.mjs"\]$/m);
    expect(runtime).toMatch(/^COPY docker\/healthcheck\.mjs \.\/docker\/healthcheck\.mjs$/m);
  });
});

describe("docker/healthcheck.mjs (the image's HEALTHCHECK command)", () => {
  let facilitator: RunningFacilitator;
  let fakeStripe: FakeStripe;

  beforeAll(async () => {
    facilitator = await startFacilitator();
    fakeStripe = await startFakeStripe({ port: 0 });
  });
  afterAll(async () => {
    await facilitator?.close();
    await fakeStripe?.stop();
  });

  /** Runs it as HEALTHCHECK does; asynchronously, so this process keeps answering the requests it sends. */
  async function healthcheck(args: string[], env: Record<string, string>): Promise<{ code: number; stderr: string }> {
    try {
      const { stderr } = await promisify(execFile)(process.execPath, ['docker/healthcheck.mjs', ...args], {
        cwd: ROOT,
        env: { PATH: process.env.PATH ?? '', ...env },
      });
      return { code: 0, stderr };
    } catch (error) {
      const failed = error as { code?: number; stderr?: string };
      return { code: failed.code ?? -1, stderr: failed.stderr ?? '' };
    }
  }

  const portOf = (url: string) => new URL(url).port;
  /** A port nothing listens on: bound by us, then released. */
  async function closedPort(): Promise<string> {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as { port: number };
    await new Promise<void>((resolve) => server.close(() => resolve()));
    return String(port);
  }

  it('passes for a running facilitator at its FACILITATOR_PORT', async () => {
    expect(await healthcheck(['facilitator'], { FACILITATOR_PORT: portOf(facilitator.url) })).toEqual({ code: 0, stderr: '' });
  });

  it('passes for a running fake Stripe at its FAKE_STRIPE_PORT', async () => {
    expect(await healthcheck(['fake-stripe'], { FAKE_STRIPE_PORT: portOf(fakeStripe.url) })).toEqual({ code: 0, stderr: '' });
  });

  it("fails, naming the URL, when nothing answers at the app's port", async () => {
    const port = await closedPort();
    const result = await healthcheck(['ledger'], { LEDGER_PORT: port });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`ledger at http://127.0.0.1:${port}/health`);
  });

  it('fails when the port answers but not with a 2xx', async () => {
    // the fake Stripe wants a key on every path, /health included: 401
    const result = await healthcheck(['merchant-agent'], { MERCHANT_PORT: portOf(fakeStripe.url) });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('HTTP 401');
  });

  it('refuses an unknown app with exit code 2', async () => {
    const result = await healthcheck(['postgres'], {});
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown app "postgres"');
  });
});
