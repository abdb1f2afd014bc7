import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Hex } from 'viem';
import { buy } from '../apps/merchant-agent/src/buyer/buyer';
import { appEntry, buildIfStale } from '../scripts/lib/build.mjs';
import { testChain } from './support/chain';
import { TEST_DATABASE_URL } from './support/facilitator';
import { createMerchant } from './support/merchants';
import { freePort } from './support/net';

/**
 * OpenTelemetry end to end, with the three apps as real processes exporting OTLP/HTTP JSON to a receiver of the
 * test's own: one x402 purchase at the merchant agent is one trace, from the agent's request through the
 * facilitator's /settle and its settlement job to the ledger booking the payment's events (through the outbox).
 */

interface ReceivedSpan {
  service: string;
  scope: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
}

// OTLP's span kinds (SPAN_KIND_*)
const SERVER = 2;
const CLIENT = 3;
const PRODUCER = 4;
const CONSUMER = 5;

/** A tiny OTLP/HTTP receiver: every span of every POST /v1/traces (JSON encoding). */
class OtlpReceiver {
  readonly spans: ReceivedSpan[] = [];
  private readonly server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.method === 'POST' && req.url === '/v1/traces') this.collect(JSON.parse(body));
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });

  async listen(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  close(): Promise<void> {
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private collect(request: { resourceSpans?: OtlpResourceSpans[] }): void {
    for (const resourceSpans of request.resourceSpans ?? []) {
      const service = String(attributesOf(resourceSpans.resource?.attributes)['service.name']);
      for (const scopeSpans of resourceSpans.scopeSpans ?? []) {
        for (const span of scopeSpans.spans ?? []) {
          this.spans.push({
            service,
            scope: scopeSpans.scope?.name ?? '',
            traceId: hexId(span.traceId),
            spanId: hexId(span.spanId),
            ...(span.parentSpanId ? { parentSpanId: hexId(span.parentSpanId) } : {}),
            name: span.name,
            kind: span.kind,
            attributes: attributesOf(span.attributes),
          });
        }
      }
    }
  }
}

interface OtlpAttribute {
  key: string;
  value: Record<string, unknown>;
}
interface OtlpResourceSpans {
  resource?: { attributes?: OtlpAttribute[] };
  scopeSpans?: {
    scope?: { name: string };
    spans?: { traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: OtlpAttribute[] }[];
  }[];
}

function attributesOf(attributes: OtlpAttribute[] = []): Record<string, unknown> {
  return Object.fromEntries(attributes.map(({ key, value }) => [key, Object.values(value)[0]]));
}

/** Ids are hex in OTLP/JSON; base64 (as protobuf's JSON mapping has them) is read too. */
function hexId(id: string): string {
  return /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

const urlPath = (span: ReceivedSpan) => String(span.attributes['url.path'] ?? span.attributes['http.target'] ?? '').split('?')[0];

describe('OpenTelemetry traces across merchant agent → facilitator → queue → ledger', () => {
  const { manifest } = testChain();
  const receiver = new OtlpReceiver();
  const children: { name: string; child: ChildProcess; output: string[] }[] = [];

  function start(app: 'facilitator' | 'ledger' | 'merchant-agent', env: Record<string, string>): void {
    const child = spawn(process.execPath, [appEntry(app)], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    const output: string[] = [];
    child.stdout!.on('data', (d: Buffer) => output.push(d.toString()));
    child.stderr!.on('data', (d: Buffer) => output.push(d.toString()));
    children.push({ name: app, child, output });
  }

  async function healthy(url: string): Promise<void> {
    for (let i = 0; i < 600; i++) {
      if (
        await fetch(`${url}/health`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return;
      const dead = children.find(({ child }) => child.exitCode !== null);
      if (dead) throw new Error(`${dead.name} exited: ${dead.output.join('')}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`${url} did not start`);
  }

  beforeAll(() => {
    buildIfStale();
  }, 600_000);

  afterAll(async () => {
    await Promise.all(
      children.map(({ child }) => {
        if (child.exitCode !== null) return undefined;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        return Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))]).finally(() => child.kill('SIGKILL'));
      }),
    );
    await receiver.close();
  });

  it('follows one x402 purchase in one trace, from the agent to the ledger booking its events', async () => {
    const collector = await receiver.listen();
    const [facilitatorPort, ledgerPort, merchantPort] = [await freePort(), await freePort(), await freePort()];
    const facilitatorUrl = `http://127.0.0.1:${facilitatorPort}`;
    const common = {
      DATABASE_URL: TEST_DATABASE_URL,
      LOG_LEVEL: 'warn',
      // the facilitator publishes the payment events on these queues, the ledger consumes them: no other test's
      QUEUE_PREFIX: `mp:tracing-${randomBytes(4).toString('hex')}`,
      OTEL_EXPORTER_OTLP_ENDPOINT: collector,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_BSP_SCHEDULE_DELAY: '100',
    };
    // a merchant's payments are booked by the ledger (open mode's belong to no merchant's book)
    const merchant = createMerchant('tracing');
    start('facilitator', { ...common, FACILITATOR_PORT: String(facilitatorPort), FACILITATOR_INSTANCE_ID: 'tracing-test' });
    start('ledger', { ...common, LEDGER_PORT: String(ledgerPort), LEDGER_INGEST: 'true', RECON_SCHEDULE: 'off', FACILITATOR_URL: facilitatorUrl });
    await Promise.all([facilitatorUrl, `http://127.0.0.1:${ledgerPort}`].map(healthy));
    // the agent asks the facilitator what it supports as it starts
    start('merchant-agent', { ...common, MERCHANT_PORT: String(merchantPort), FACILITATOR_URL: facilitatorUrl, FACILITATOR_API_KEY: merchant.apiKey });
    const merchantUrl = `http://127.0.0.1:${merchantPort}`;
    await healthy(merchantUrl);

    const payer = manifest.accounts.payers[2];
    const purchase = await buy({
      url: `${merchantUrl}/paid/forecast`,
      privateKey: payer.privateKey as Hex,
      network: manifest.network as `${string}:${string}`,
      asset: manifest.tokens.usdc.address,
      maxAmountPerPayment: '100000',
    });
    expect(purchase.status, children.map(({ name, output }) => `${name}: ${output.join('')}`).join('\n')).toBe(200);
    // a secret-looking query parameter (as a report link's token) is masked in the spans, as in the access log
    expect((await fetch(`${merchantUrl}/paid/forecast?token=tracing-secret-0123`)).status).toBe(402);

    // The purchase's trace: the agent's server span for the paid request (the 200, after the 402 of its first try) is its root.
    const root = () =>
      receiver.spans.find(
        (s) => s.service === 'merchant-agent' && s.kind === SERVER && urlPath(s) === '/paid/forecast' && s.attributes['http.response.status_code'] === 200,
      );
    const inTrace = () => receiver.spans.filter((s) => s.traceId === root()?.traceId);
    const ledgerConsumes = () => inTrace().filter((s) => s.service === 'ledger' && s.kind === CONSUMER && s.name === 'process payment-events');
    for (let i = 0; i < 300 && ledgerConsumes().length < 3; i++) await new Promise((r) => setTimeout(r, 100));

    const trace = inTrace();
    const byId = new Map(trace.map((s) => [s.spanId, s]));
    /** The span's ancestors, nearest first, up to the root; throws where a parent is missing from the trace. */
    const ancestors = (span: ReceivedSpan): ReceivedSpan[] => {
      const chain: ReceivedSpan[] = [];
      for (let current = span; current.parentSpanId !== undefined;) {
        const parent = byId.get(current.parentSpanId);
        if (!parent) throw new Error(`the parent of ${current.service} "${current.name}" is not in the trace`);
        chain.push(parent);
        current = parent;
      }
      return chain;
    };
    const summary = trace.map((s) => `${s.service} ${s.kind} ${s.name} ${urlPath(s)}`).join('\n');

    expect(root(), summary).toBeDefined();
    expect(root()!.parentSpanId).toBeUndefined();
    // merchant agent → facilitator: the agent's fetch to /settle is the parent of the facilitator's server span
    const settle = trace.find((s) => s.service === 'facilitator' && s.kind === SERVER && urlPath(s) === '/settle');
    expect(settle, summary).toBeDefined();
    const settleCaller = byId.get(settle!.parentSpanId!);
    expect(settleCaller).toMatchObject({ service: 'merchant-agent', kind: CLIENT });
    expect(ancestors(settle!).at(-1)).toBe(root());

    // facilitator → facilitator: a lone /settle is sent by the worker of its own process (LocalSettlement), within the
    // request's trace; a settlement handed to the queue instead is consumed under the /settle request that added it
    const settlementJob = trace.find((s) => s.service === 'facilitator' && s.kind === CONSUMER && s.name === 'process settlement');
    if (settlementJob) {
      const jobAncestors = ancestors(settlementJob);
      expect(jobAncestors[0]).toMatchObject({ service: 'facilitator', kind: PRODUCER, name: 'add settlement.submit' });
      expect(jobAncestors).toContain(settle);
    }

    // facilitator → outbox → ledger: every event of the payment is booked in its trace (under /settle, or under the
    // settlement job when there was one), with the ledger's database writes inside the consume span
    expect(ledgerConsumes().length, summary).toBeGreaterThanOrEqual(3);
    for (const consume of ledgerConsumes()) {
      const chain = ancestors(consume);
      expect(chain[0].service).toBe('facilitator');
      expect(chain.at(-1)).toBe(root());
      expect(chain.includes(settle!) || (settlementJob !== undefined && chain.includes(settlementJob))).toBe(true);
    }
    const ledgerWrites = trace.filter(
      (s) => s.service === 'ledger' && s.scope.includes('pg') && ledgerConsumes().some((consume) => ancestors(s).includes(consume)),
    );
    expect(ledgerWrites.length, summary).toBeGreaterThan(0);

    // the probes the test made while the apps booted were not traced
    expect(receiver.spans.some((s) => urlPath(s) === '/health')).toBe(false);
    const unpaid = () => receiver.spans.find((s) => s.service === 'merchant-agent' && s.kind === SERVER && s.attributes['url.query'] !== undefined);
    for (let i = 0; i < 50 && !unpaid(); i++) await new Promise((r) => setTimeout(r, 100));
    expect(unpaid()?.attributes['url.query']).toBe('token=[REDACTED]');
    expect(JSON.stringify(receiver.spans)).not.toContain('tracing-secret-0123');
  }, 120_000);
});
