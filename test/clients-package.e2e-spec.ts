import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { getAddress, type Hex } from 'viem';
import { Mppx, evm } from 'mppx/client';
import { decodeReceipt } from '@mp/mpp';
import { packClients } from '../scripts/pack-clients.mjs';
import { payerAccount, testChain } from './support/chain';
import { paymentRequiredResponse } from './support/mpp';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';
import { createMerchant, type TestMerchant } from './support/merchants';
import { freePort } from './support/net';
import { until } from './support/webhook-receiver';

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, '..');

/**
 * The merchant's server from the README's "Use the facilitator from your API" section, written against the packed
 * package as a merchant installs it: a paid route through MppFacilitatorClient and a webhook receiver through
 * verifyWebhookSignature. It logs one JSON line per event it handles, for the test to read.
 */
const CONSUMER_SOURCE = `
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MppFacilitatorClient, verifyWebhookSignature, type MppTerms } from '@machine-payments/clients';

const mpp = new MppFacilitatorClient({ url: process.env.FACILITATOR_URL!, apiKey: process.env.FACILITATOR_API_KEY });
const terms: MppTerms = JSON.parse(process.env.ROUTE_TERMS!);

async function rawBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const server = createServer(async (req, res) => {
  const body = await rawBody(req);
  if (req.method === 'POST' && req.url === '/hooks/payments') {
    const verified = verifyWebhookSignature({ secret: process.env.WEBHOOK_SECRET!, headers: req.headers, body });
    if (!verified.ok) return void res.writeHead(400).end(verified.reason);
    const event = JSON.parse(body.toString('utf8')) as { type: string; data: unknown };
    console.log(JSON.stringify({ webhook: { id: verified.id, type: event.type, data: event.data } }));
    return void res.writeHead(204).end();
  }
  if (req.method === 'GET' && req.url === '/weather') {
    if (!req.headers.authorization) {
      const { wwwAuthenticate } = await mpp.challenges(terms);
      return void res.writeHead(402, { 'www-authenticate': wwwAuthenticate }).end();
    }
    const settled = await mpp.settle(req.headers.authorization, terms);
    if (!settled.ok) {
      return void res.writeHead(settled.status, { 'content-type': 'application/problem+json', 'www-authenticate': settled.wwwAuthenticate }).end(JSON.stringify(settled.problem));
    }
    console.log(JSON.stringify({ settled: settled.receipt.reference }));
    return void res.writeHead(200, { 'content-type': 'application/json', 'payment-receipt': settled.paymentReceipt }).end(JSON.stringify({ forecast: 'sunny' }));
  }
  res.writeHead(404).end();
});
server.listen(Number(process.env.PORT), '127.0.0.1', () => console.log(JSON.stringify({ listening: (server.address() as AddressInfo).port })));
`;

/** A misuse the package's declarations must refuse (a number for the secret). */
const WRONG_SOURCE = `import { verifyWebhookSignature } from '@machine-payments/clients';
verifyWebhookSignature({ secret: 1, headers: {}, body: '' });
`;

const CONSUMER_TSCONFIG = {
  compilerOptions: {
    module: 'nodenext',
    moduleResolution: 'nodenext',
    target: 'es2022',
    lib: ['es2023'],
    types: ['node'],
    strict: true,
    outDir: 'dist',
    skipLibCheck: true,
  },
  files: ['server.ts', 'wrong.ts'],
};

/** What the facilitator's webhook body carries and the consumer logs. */
interface ConsumerLine {
  listening?: number;
  settled?: string;
  webhook?: { id: string; type: string; data: Record<string, unknown> };
}

describe('@machine-payments/clients, packed and installed outside the workspace', () => {
  const { manifest, client } = testChain();
  const usdc = manifest.tokens.usdc;
  const root = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
    version: string;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  let scratch: string;
  let facilitator: RunningFacilitator;
  let merchant: TestMerchant;
  let consumer: ChildProcess;
  let consumerUrl: string;
  const lines: ConsumerLine[] = [];
  const consumerEnv: Record<string, string> = {};

  const terms = {
    realm: 'weather.example',
    offers: [
      {
        method: 'evm',
        intent: 'charge',
        request: {
          amount: '12345',
          currency: usdc.address,
          recipient: getAddress(manifest.accounts.merchant.address),
          methodDetails: { chainId: manifest.chainId },
        },
      },
    ],
  };

  beforeAll(async () => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'mp-clients-consumer-'));
    const tarball = packClients(path.join(scratch, 'packed'));
    // A merchant's own project: npm init, the tarball, and the TypeScript toolchain a TypeScript merchant has.
    const project = path.join(scratch, 'merchant');
    fs.mkdirSync(project);
    const npm = (...args: string[]) => run('npm', args, { cwd: project });
    await npm('init', '-y');
    await npm('pkg', 'set', 'type=module');
    const [facilitatorStarted] = await Promise.all([
      startFacilitator(),
      npm(
        'install',
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        tarball,
        `typescript@${root.devDependencies.typescript}`,
        `@types/node@${root.devDependencies['@types/node']}`,
      ),
    ]);
    facilitator = facilitatorStarted;
    fs.writeFileSync(path.join(project, 'server.ts'), CONSUMER_SOURCE);
    fs.writeFileSync(path.join(project, 'wrong.ts'), WRONG_SOURCE);
    fs.writeFileSync(path.join(project, 'tsconfig.json'), JSON.stringify(CONSUMER_TSCONFIG, null, 2));
    const port = await freePort();
    merchant = createMerchant('clients package consumer', `http://127.0.0.1:${port}/hooks/payments`);
    consumerUrl = `http://127.0.0.1:${port}`;
    Object.assign(consumerEnv, {
      FACILITATOR_URL: facilitator.url,
      FACILITATOR_API_KEY: merchant.apiKey,
      WEBHOOK_SECRET: merchant.webhookSecret,
      ROUTE_TERMS: JSON.stringify(terms),
      PORT: String(port),
    });
  }, 120_000);

  afterAll(async () => {
    consumer?.kill();
    await facilitator?.close();
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  const project = () => path.join(scratch, 'merchant');

  it('installs as a package whose version and dependencies are the root’s, with nothing from the workspace', () => {
    const installed = JSON.parse(fs.readFileSync(path.join(project(), 'node_modules/@machine-payments/clients/package.json'), 'utf8'));
    expect(installed.version).toBe(root.version);
    expect(Object.keys(installed.dependencies)).toEqual(['zod']);
    expect(installed.dependencies.zod).toBe(`^${root.dependencies.zod}`);
    const shipped = fs.readdirSync(path.join(project(), 'node_modules/@machine-payments/clients/dist'), { recursive: true }).map(String);
    const code = shipped
      .filter((f) => f.endsWith('.js') || f.endsWith('.d.ts'))
      .map((f) => fs.readFileSync(path.join(project(), 'node_modules/@machine-payments/clients/dist', f), 'utf8'));
    expect(code.filter((text) => /["']@mp\//.test(text))).toEqual([]);
    expect(shipped).toEqual(expect.arrayContaining([path.join('esm', 'vendor', 'mpp', 'challenge.js'), path.join('cjs', 'vendor', 'mpp', 'challenge.js')]));
  });

  it('type-checks the README’s TypeScript against the installed declarations, and a type error beside it fails', async () => {
    // One tsc run for both files: server.ts compiles clean; wrong.ts misuses the package and must be the only error,
    // which also proves the declarations resolve (skipLibCheck, as most projects set it, would otherwise hide an
    // unresolvable declaration behind \`any\`).
    const checked = await run(process.execPath, ['node_modules/typescript/bin/tsc', '-p', 'tsconfig.json'], { cwd: project() }).then(
      () => ({ stdout: '' }),
      (err: { stdout: string }) => err,
    );
    const errors = checked.stdout.split('\n').filter((line) => / error TS\d+/.test(line));
    expect(errors).toEqual([expect.stringMatching(/^wrong\.ts\(2,\d+\): error TS2322/)]);
    expect(fs.existsSync(path.join(project(), 'dist/server.js'))).toBe(true);
  });

  it('loads from require() as well as import, with the same exports', () => {
    const names = (source: string) =>
      JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', source], { cwd: project(), encoding: 'utf8' })) as string[];
    const esm = names(`const m = await import('@machine-payments/clients'); console.log(JSON.stringify(Object.keys(m).filter((k) => k !== 'default').sort()))`);
    const cjs = names(
      `import { createRequire } from 'node:module'; const m = createRequire(process.cwd() + '/')('@machine-payments/clients'); console.log(JSON.stringify(Object.keys(m).sort()))`,
    );
    expect(esm).toEqual(
      expect.arrayContaining([
        'MppFacilitatorClient',
        'MppFacilitatorError',
        'verifyWebhookSignature',
        'signWebhook',
        'PAYMENT_EVENTS_QUEUE',
        'MERCHANT_NOTICES_QUEUE',
      ]),
    );
    expect(cjs).toEqual(esm);
  });

  it('runs the README’s merchant server against the facilitator: a 402 with challenges, settlement on chain, the signed webhook verified', async () => {
    consumer = spawn(process.execPath, ['dist/server.js'], { cwd: project(), env: { ...process.env, ...consumerEnv }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    consumer.stderr!.on('data', (chunk) => (stderr += chunk));
    let pending = '';
    consumer.stdout!.on('data', (chunk) => {
      pending += chunk;
      const complete = pending.split('\n');
      pending = complete.pop()!;
      for (const line of complete) if (line.trim()) lines.push(JSON.parse(line) as ConsumerLine);
    });
    await until('the consumer listening', () => {
      if (consumer.exitCode !== null) throw new Error(`the consumer exited ${consumer.exitCode}: ${stderr}`);
      return lines.find((l) => l.listening);
    });

    // No credential: the package's client asked the facilitator for challenges; mppx reads them from the 402.
    const unpaid = await fetch(`${consumerUrl}/weather`);
    expect(unpaid.status).toBe(402);
    expect(unpaid.headers.get('www-authenticate')).toMatch(/^Payment /);
    const payer = payerAccount(manifest, 6);
    const mppx = Mppx.create({ methods: [evm.charge({ account: payer, authorization: { name: usdc.name, version: usdc.version } })], polyfill: false });
    const credential = await mppx.createCredential(unpaid);

    // With the credential: the client settled it; the route answers with the facilitator's Payment-Receipt.
    const paid = await fetch(`${consumerUrl}/weather`, { headers: { authorization: credential } });
    expect(paid.status).toBe(200);
    expect(await paid.json()).toEqual({ forecast: 'sunny' });
    const receipt = decodeReceipt(paid.headers.get('payment-receipt')!);
    expect(receipt.ok).toBe(true);
    const { reference } = (receipt as { ok: true; value: { reference: string; method: string; status: string } }).value;
    expect(receipt).toMatchObject({ value: { method: 'evm', status: 'success' } });
    const onChain = await client.getTransactionReceipt({ hash: reference as Hex });
    expect(onChain.status).toBe('success');

    // The facilitator's webhook for that payment, signed with the merchant's secret, passes the package's check.
    const webhook = await until('the payment.confirmed webhook', () => lines.find((l) => l.webhook?.type === 'payment.confirmed')?.webhook);
    expect(JSON.stringify(webhook.data)).toContain(reference);

    // A payment failure reaches the buyer as the facilitator's problem and fresh challenges, relayed by the route:
    // here a credential for a challenge the facilitator issued to this merchant on other terms (another amount).
    const otherTerms = { ...terms, offers: [{ ...terms.offers[0], request: { ...terms.offers[0].request, amount: '99' } }] };
    const issued = await fetch(`${facilitator.url}/mpp/challenges`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${merchant.apiKey}` },
      body: JSON.stringify(otherTerms),
    });
    expect(issued.status).toBe(201);
    const otherCredential = await mppx.createCredential(paymentRequiredResponse(((await issued.json()) as { wwwAuthenticate: string[] }).wwwAuthenticate));
    const refused = await fetch(`${consumerUrl}/weather`, { headers: { authorization: otherCredential } });
    expect(refused.status).toBe(402);
    expect(((await refused.json()) as { type: string }).type).toMatch(/^https:\/\/paymentauth\.org\/problems\//);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Payment /);
  });

  it('refuses a webhook delivery not signed with the merchant’s secret', async () => {
    const genuine = lines.find((l) => l.webhook)!.webhook!;
    const forged = await fetch(`${consumerUrl}/hooks/payments`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'webhook-id': genuine.id,
        'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
        'webhook-signature': `v1,${Buffer.alloc(32).toString('base64')}`,
      },
      body: JSON.stringify({ type: 'payment.confirmed', data: {} }),
    });
    expect(forged.status).toBe(400);
    expect(await forged.text()).toBe('bad_signature');
  });
});
