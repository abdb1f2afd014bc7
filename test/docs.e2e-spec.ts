import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { RequestMethod, type DynamicModule, type INestApplication, type Type } from '@nestjs/common';
import { METHOD_METADATA, MODULE_METADATA, PATH_METADATA } from '@nestjs/common/constants';
import { Test } from '@nestjs/testing';
import type { z } from 'zod';
import { ConfigError, configureHttpApp, PROBLEM_STATUS, problemBody, type ProblemCode } from '@mp/platform';
import { MPP_WIRE_SCHEMAS } from '@mp/mpp';
import {
  decodePaymentRequest,
  exactEvmEip3009PayloadSchema,
  facilitatorRequestEnvelopeSchema,
  paymentIdentifierInfoSchema,
  paymentPayloadV1Schema,
  paymentPayloadV2Schema,
  paymentRequirementsV1Schema,
  paymentRequirementsV2Schema,
  resourceInfoSchema,
  X402_WIRE_SCHEMAS,
  X402Reason,
} from '@mp/x402';
import { AppModule as FacilitatorModule } from '../apps/facilitator/src/app.module';
import { loadFacilitatorConfig } from '../apps/facilitator/src/config/facilitator.config';
import { MPP_API_SCHEMAS } from '../apps/facilitator/src/mpp/mpp.api';
import { facilitatorOpenApiJson } from '../apps/facilitator/src/openapi.document';
import { AppModule as LedgerModule } from '../apps/ledger/src/app.module';
import { loadLedgerConfig } from '../apps/ledger/src/ledger.config';
import { ledgerOpenApiJson } from '../apps/ledger/src/openapi.document';
import { generatePrivateKey } from 'viem/accounts';
import { A2A_DOCUMENTED_ROUTES } from '../apps/merchant-agent/src/a2a/a2a-paths';
import { mountA2a } from '../apps/merchant-agent/src/a2a/mount-a2a';
import { AppModule as MerchantModule } from '../apps/merchant-agent/src/app.module';
import { loadMerchantConfig } from '../apps/merchant-agent/src/merchant.config';
import { createMppPaywall } from '../apps/merchant-agent/src/mpp/mpp-paywall';
import { createSubscriptionPaywall } from '../apps/merchant-agent/src/subscriptions/subscription-paywall';
import { merchantAgentOpenApiJson } from '../apps/merchant-agent/src/openapi.document';
import { createBatchPaywall } from '../apps/merchant-agent/src/paid-http/batch-paywall';
import { createPaywall } from '../apps/merchant-agent/src/paid-http/paywall';
import { PROBLEM_BASE, PROBLEMS } from '@mp/mpp';
import { startFacilitator, TEST_DATABASE_URL, type RunningFacilitator } from './support/facilitator';
import { startTestStripe, type TestStripe } from './support/stripe';

/**
 * Keeps docs/ true to the code: the generated OpenAPI documents (every route, every schema, no drift from the committed
 * files), problem codes, reasons, wire schemas, env vars and the example networks files.
 */
const ROOT = path.resolve(__dirname, '..');
const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
const configurationMd = read('docs/configuration.md');

type Service = 'facilitator' | 'ledger' | 'merchant-agent';
/**
 * GET /mpp/briefing is mounted when the agent sells a subscription, GET /paid/metered-forecast with a batch-settlement
 * price, POST /mpp/balance/top-up with prepaid balances: the document is made with all three (openapi.document.ts).
 */
const SUBSCRIPTION_ENV = {
  MERCHANT_SUBSCRIPTION_PLAN_ID: '4b0d6f3e-8c1a-4e55-9a7b-2f4c6d8e0a13',
  LEDGER_URL: 'http://127.0.0.1:4030',
  FACILITATOR_API_KEY: 'mpk_docs',
  MERCHANT_BATCH_PRICE: '1000',
  MERCHANT_PREPAID_TOP_UP_AMOUNT: '5000000',
};
const SERVICES: Service[] = ['facilitator', 'ledger', 'merchant-agent'];
const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
/** The committed documents under docs/api/, one per service. */
const documentFile = (service: Service) => `docs/api/${service}.openapi.json`;
const documents = Object.fromEntries(SERVICES.map((service) => [service, JSON.parse(read(documentFile(service)))])) as Record<Service, any>;
/** How `npm run docs:openapi` makes each document. */
const GENERATE: Record<Service, () => Promise<string>> = {
  facilitator: facilitatorOpenApiJson,
  ledger: ledgerOpenApiJson,
  'merchant-agent': merchantAgentOpenApiJson,
};
const facilitatorDoc = documents.facilitator;

interface Operation {
  service: Service;
  route: string;
  method: string;
  path: string;
  op: any;
}

const operations: Operation[] = SERVICES.flatMap((service) =>
  Object.entries(documents[service].paths as Record<string, any>).flatMap(([p, item]) =>
    HTTP_METHODS.filter((m) => item[m]).map((m) => ({ service, route: `${m.toUpperCase()} ${p}`, method: m.toUpperCase(), path: p, op: item[m] })),
  ),
);
const documented = (service: Service) => operations.filter((o) => o.service === service);
/** An operation's route as Nest and A2A_DOCUMENTED_ROUTES write it: "GET /a2a/rest/tasks/:taskId". */
const routeOf = (o: Operation) => o.route.replace(/\{(\w+)\}/g, ':$1');
const isA2a = (o: Operation) => o.service === 'merchant-agent' && A2A_DOCUMENTED_ROUTES.includes(routeOf(o));

/** "GET /health"-style routes of every controller reachable from a module, read from Nest's decorator metadata. */
function nestRoutes(root: Type<unknown> | DynamicModule): string[] {
  const seen = new Set<unknown>();
  const controllers = new Set<Type<unknown>>();
  const visit = (entry: unknown): void => {
    if (!entry || seen.has(entry) || (typeof entry !== 'function' && typeof entry !== 'object')) return;
    seen.add(entry);
    const dynamic = typeof entry === 'object' && 'module' in entry ? (entry as DynamicModule) : undefined;
    const moduleClass = (dynamic ? dynamic.module : entry) as Type<unknown>;
    const own: Type<unknown>[] = [...(Reflect.getMetadata(MODULE_METADATA.CONTROLLERS, moduleClass) ?? []), ...(dynamic?.controllers ?? [])];
    own.forEach((c) => controllers.add(c));
    [...(Reflect.getMetadata(MODULE_METADATA.IMPORTS, moduleClass) ?? []), ...(dynamic?.imports ?? [])].forEach(visit);
  };
  visit(root);
  const join = (...parts: string[]) =>
    `/${parts
      .map((p) => p.replace(/^\/+|\/+$/g, ''))
      .filter(Boolean)
      .join('/')}`;
  const routes: string[] = [];
  for (const controller of controllers) {
    const bases = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, controller) ?? '/');
    const prototype = controller.prototype as Record<string, unknown>;
    for (const name of Object.getOwnPropertyNames(prototype)) {
      const handler = name === 'constructor' ? undefined : prototype[name];
      if (typeof handler !== 'function') continue;
      const method = Reflect.getMetadata(METHOD_METADATA, handler) as RequestMethod | undefined;
      if (method === undefined) continue;
      const paths = ([] as string[]).concat(Reflect.getMetadata(PATH_METADATA, handler) ?? '/');
      for (const base of bases) for (const p of paths) routes.push(`${RequestMethod[method]} ${join(base, p)}`);
    }
  }
  return routes.sort();
}

const resolveIn = (document: any, node: any): any =>
  node?.$ref
    ? (node.$ref as string)
        .split('/')
        .slice(1)
        .reduce((o: any, k: string) => o?.[k], document)
    : node;

/** Every $ref anywhere in a document. */
function refsOf(node: unknown, found = new Set<string>()): Set<string> {
  if (Array.isArray(node)) node.forEach((n) => refsOf(n, found));
  else if (node && typeof node === 'object') {
    for (const [key, value] of Object.entries(node)) {
      if (key === '$ref' && typeof value === 'string') found.add(value);
      else refsOf(value, found);
    }
  }
  return found;
}

/** Every example body of every response of every operation, with its status and content type. */
function responseExamples(): { route: string; status: string; contentType: string; value: any }[] {
  return operations.flatMap(({ service, route, op }) =>
    Object.entries(op.responses as Record<string, unknown>).flatMap(([status, raw]) =>
      Object.entries((resolveIn(documents[service], raw).content ?? {}) as Record<string, any>).flatMap(([contentType, media]) => [
        ...Object.values((media.examples ?? {}) as Record<string, any>).map((e) => ({
          route,
          status,
          contentType,
          value: resolveIn(documents[service], e).value,
        })),
        ...(media.example !== undefined ? [{ route, status, contentType, value: media.example }] : []),
      ]),
    ),
  );
}

describe('docs', () => {
  describe('docs/api/<service>.openapi.json, generated', () => {
    it.each(SERVICES)('the committed %s document is what npm run docs:openapi generates now', async (service) => {
      expect(read(documentFile(service)), `${documentFile(service)} is stale: run npm run docs:openapi`).toBe(await GENERATE[service]());
    });

    it.each(SERVICES)('%s: OpenAPI 3.1 with a relative server', (service) => {
      expect(documents[service].openapi).toMatch(/^3\.1\./);
      expect(documents[service].servers).toEqual([expect.objectContaining({ url: '/' })]);
    });

    it("documents exactly the routes of every controller of every app with their methods, and the merchant agent's A2A routes", () => {
      const facilitatorConfig = loadFacilitatorConfig({ CHAIN_MANIFEST: process.env.CHAIN_MANIFEST });
      const apps: Record<Service, DynamicModule> = {
        facilitator: FacilitatorModule.forConfig(facilitatorConfig),
        ledger: LedgerModule.forConfig(loadLedgerConfig({ CHAIN_MANIFEST: process.env.CHAIN_MANIFEST })),
        'merchant-agent': MerchantModule.forConfig(loadMerchantConfig({ CHAIN_MANIFEST: process.env.CHAIN_MANIFEST, ...SUBSCRIPTION_ENV })),
      };
      for (const service of SERVICES) {
        const inCode = nestRoutes(apps[service]);
        expect(inCode.length, service).toBeGreaterThan(0);
        // The A2A routes are the SDK's Express routers, mounted outside Nest by mountA2a.
        const expected = service === 'merchant-agent' ? [...inCode, ...A2A_DOCUMENTED_ROUTES].sort() : inCode;
        expect(documented(service).map(routeOf).sort(), `documented routes of ${service}`).toEqual(expected);
      }
    });

    it.each(SERVICES)('%s: every $ref resolves, and every operation has a summary and its responses', (service) => {
      const document = documents[service];
      for (const ref of refsOf(document)) expect(resolveIn(document, { $ref: ref }), `${service}: ${ref}`).toBeDefined();
      for (const { route, op } of documented(service)) {
        expect(op.summary, `${service} ${route}`).toEqual(expect.any(String));
        expect(Object.keys(op.responses).length, `${service} ${route}`).toBeGreaterThan(0);
      }
    });

    it('has a component schema for every zod wire codec and every DTO class a route takes', () => {
      const schemas = (service: Service) => Object.keys(documents[service].components.schemas);
      expect(schemas('facilitator')).toEqual(
        expect.arrayContaining([...Object.keys(X402_WIRE_SCHEMAS), ...Object.keys(MPP_WIRE_SCHEMAS), ...Object.keys(MPP_API_SCHEMAS)]),
      );
      expect(schemas('merchant-agent')).toEqual(expect.arrayContaining(Object.keys(X402_WIRE_SCHEMAS)));
      for (const service of SERVICES) {
        // a DTO class is a component the request body or a response refers to; none may be missing
        const dtoRefs = [...refsOf(documents[service].paths)].filter((ref) => /Dto$|Query$|Path$/.test(ref));
        for (const ref of dtoRefs) expect(resolveIn(documents[service], { $ref: ref }), `${service}: ${ref}`).toBeDefined();
      }
    });

    it('the merchant agent keeps its payment discovery document at /openapi.json; the others serve this one there too', () => {
      expect(documents['merchant-agent'].paths['/openapi.json'].get.summary).toMatch(/discovery/i);
      for (const service of ['facilitator', 'ledger'] as const) expect(documents[service].paths['/openapi.json']?.get, service).toBeDefined();
    });

    describe('against the running apps', () => {
      let facilitator: RunningFacilitator;
      let ledger: INestApplication;
      let merchant: INestApplication;
      const urls = {} as Record<Service, string>;

      const listen = async (app: INestApplication) => {
        await app.listen(0, '127.0.0.1');
        return `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
      };

      let stripe: TestStripe;

      beforeAll(async () => {
        stripe = await startTestStripe();
        // batch-settlement served, so the merchant's batch paywall finds its kind in /supported
        facilitator = await startFacilitator({
          ...stripe.facilitatorEnv,
          BATCH_SETTLEMENT_SENDER_KEY: generatePrivateKey(),
          BATCH_SETTLEMENT_AUTHORIZER_KEY: generatePrivateKey(),
        });
        urls.facilitator = facilitator.url;

        const ledgerConfig = loadLedgerConfig({ ...process.env, DATABASE_URL: TEST_DATABASE_URL });
        ledger = (await Test.createTestingModule({ imports: [LedgerModule.forConfig(ledgerConfig)] }).compile()).createNestApplication({
          bodyParser: false,
          logger: ['error'],
        });
        configureHttpApp(ledger);
        urls.ledger = await listen(ledger);

        const merchantConfig = loadMerchantConfig({ ...process.env, FACILITATOR_URL: facilitator.url });
        // The subscription's key is no merchant's: its route answers a documented 503 (the facilitator refuses the key).
        const subscribed = loadMerchantConfig({ ...process.env, FACILITATOR_URL: facilitator.url, ...SUBSCRIPTION_ENV, LEDGER_URL: urls.ledger });
        merchant = (await Test.createTestingModule({ imports: [MerchantModule.forConfig(subscribed)] }).compile()).createNestApplication({
          bodyParser: false,
          logger: ['error'],
        });
        mountA2a(merchant); // before configureHttpApp, as main.ts does
        configureHttpApp(merchant);
        merchant.use(createPaywall(merchantConfig));
        // the top-up's challenge from the facilitator, as the forecast's (the prepaid config comes with the subscription's key)
        merchant.use(createMppPaywall({ ...merchantConfig, prepaid: subscribed.prepaid }));
        merchant.use(createSubscriptionPaywall(subscribed));
        merchant.use(createBatchPaywall({ ...merchantConfig, batchSettlement: subscribed.batchSettlement! }).middleware);
        urls['merchant-agent'] = await listen(merchant);
      });
      afterAll(async () => {
        await merchant?.close();
        await ledger?.close();
        await facilitator?.close();
        await stripe?.fake.stop();
      });

      it.each(SERVICES)('%s serves its committed document at /docs/openapi.json', async (service) => {
        const response = await fetch(`${urls[service]}/docs/openapi.json`);
        expect(response.status).toBe(200);
        expect(await response.text()).toBe(read(documentFile(service)));
      });

      it.each(SERVICES)('every documented %s operation exists and answers one of its documented statuses', async (service) => {
        const ops = documented(service).filter((o) => !isA2a(o)); // the next test asks the A2A routes as A2A clients do
        expect(ops.length).toBeGreaterThan(0);
        for (const { route, method, path: p, op } of ops) {
          const hasBody = Boolean(op.requestBody);
          const response = await fetch(`${urls[service]}${p}`, {
            method,
            ...(hasBody ? { headers: { 'content-type': 'application/json' }, body: '{}' } : {}),
          });
          await response.arrayBuffer();
          expect(response.status, `${service} ${route}`).not.toBe(404);
          expect(Object.keys(op.responses), `${service} ${route} answered ${response.status}`).toContain(String(response.status));
        }
      });

      it('serves every documented A2A route: none falls through to mountA2a\'s "not an A2A endpoint" 404, each answers a documented status', async () => {
        const base = urls['merchant-agent'];
        const fellThrough = (status: number, body: string) => status === 404 && body.includes('is not an A2A endpoint of this agent');
        const unserved = await fetch(`${base}/a2a/rest/v1/no-such-route`, { headers: { 'a2a-version': '0.3' } });
        expect(fellThrough(unserved.status, await unserved.text()), 'a route the SDK does not serve').toBe(true);

        const ops = documented('merchant-agent').filter(isA2a);
        expect(ops.map(routeOf).sort()).toEqual([...A2A_DOCUMENTED_ROUTES].sort());
        for (const { route, method, path: p, op } of ops) {
          // A task nobody has: the SDK's own 404 (-32001) for it proves the route is there.
          const url = `${base}${p.replace('{taskId}', crypto.randomUUID())}`;
          const version = p.startsWith('/a2a/rest/v1/') ? '0.3' : '1.0';
          const body = p === '/a2a/jsonrpc' ? JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'GetTask', params: { id: crypto.randomUUID() } }) : '{}';
          const response = await fetch(url, {
            method,
            headers: { 'a2a-version': version, ...(op.requestBody ? { 'content-type': 'application/json' } : {}) },
            ...(op.requestBody ? { body } : {}),
          });
          const contentType = response.headers.get('content-type') ?? '';
          const text = contentType.startsWith('text/event-stream') ? (await response.body?.cancel(), '') : await response.text();
          expect(fellThrough(response.status, text), `${route} fell through: ${text}`).toBe(false);
          expect(contentType, `${route}: answered by the SDK, not as a problem`).not.toMatch(/problem\+json/);
          expect(Object.keys(op.responses), `${route} answered ${response.status}: ${text}`).toContain(String(response.status));
        }
      });

      it('an undocumented route is a 404 problem, as documented', async () => {
        const response = await fetch(`${urls.facilitator}/no-such-route`);
        expect(response.status).toBe(404);
        expect(await response.json()).toMatchObject({ code: 'not_found', type: 'urn:problem:not_found' });
      });
    });
  });

  describe('problem codes', () => {
    it('ProblemCode lists every code of PROBLEM_STATUS with its status', () => {
      for (const service of SERVICES) {
        const schema = documents[service].components.schemas.ProblemCode;
        expect([...schema.enum].sort(), service).toEqual(Object.keys(PROBLEM_STATUS).sort());
        expect(schema['x-problem-status'], service).toEqual(PROBLEM_STATUS);
        for (const [code, status] of Object.entries(PROBLEM_STATUS)) {
          expect(schema.description, code).toContain(`| \`${code}\` | ${status} |`);
        }
      }
    });

    it('every problem example has the code, status, type and title the code produces', () => {
      const problems = responseExamples().filter((e) => e.contentType === 'application/problem+json' && !String(e.value?.type).startsWith(PROBLEM_BASE));
      expect(problems.length).toBeGreaterThan(5);
      for (const { route, status, value } of problems) {
        const code = value.code as ProblemCode;
        expect(PROBLEM_STATUS, `${route} ${status}`).toHaveProperty(code);
        const expected = problemBody(code, value.detail, value.instance);
        expect(value, `${route} ${status}`).toMatchObject({ type: expected.type, title: expected.title, status: expected.status });
        expect(String(value.status), `${route}: example under the wrong status`).toBe(status);
      }
      const codes = new Set(problems.map((p) => p.value.code));
      for (const code of [
        'validation_failed',
        'malformed_json',
        'payment_identifier_conflict',
        'payload_too_large',
        'unsupported_media_type',
        'internal_error',
        'upstream_unavailable',
      ]) {
        expect(codes, code).toContain(code);
      }
    });
  });

  describe('MPP problem types', () => {
    const mppExamples = () => responseExamples().filter((e) => String(e.value?.type).startsWith(PROBLEM_BASE));

    it("MppProblemType lists the Payment scheme's problem types with the status each is answered with", () => {
      const schema = facilitatorDoc.components.schemas.MppProblemType;
      const types = Object.keys(PROBLEMS);
      expect([...schema.enum].sort()).toEqual(types.map((t) => `${PROBLEM_BASE}${t}`).sort());
      for (const type of types) {
        expect(schema['x-problem-status'][type], type).toBe(PROBLEMS[type as keyof typeof PROBLEMS].status);
        expect(schema.description, type).toContain(`| \`${type}\` | ${PROBLEMS[type as keyof typeof PROBLEMS].status} |`);
      }
    });

    it('every MPP problem example has the title and status its type has', () => {
      const examples = mppExamples();
      expect(examples.length).toBeGreaterThan(5);
      for (const { route, status, value } of examples) {
        const code = (value.type as string).slice(PROBLEM_BASE.length) as keyof typeof PROBLEMS;
        expect(PROBLEMS, `${route}: ${value.type}`).toHaveProperty(code);
        expect({ title: value.title, status: value.status }, `${route} ${status}`).toEqual({ title: PROBLEMS[code].title, status: PROBLEMS[code].status });
        expect(String(value.status), `${route}: example under the wrong status`).toBe(status);
      }
    });
  });

  describe('x402 reasons', () => {
    it('X402Reason lists every reason, each with where it is emitted', () => {
      const reasons = Object.values(X402Reason);
      const schema = facilitatorDoc.components.schemas.X402Reason;
      expect([...schema.enum].sort()).toEqual([...reasons].sort());
      expect(Object.keys(schema['x-emitted-by']).sort()).toEqual([...reasons].sort());
      for (const reason of reasons) {
        expect(schema.description, reason).toContain(`| \`${reason}\` |`);
      }
    });

    it('every verify/settle example answers with a real reason', () => {
      const values = new Set<string>(Object.values(X402Reason));
      const answers = responseExamples().filter((e) => ['POST /verify', 'POST /settle'].includes(e.route) && e.status === '200');
      expect(answers.length).toBeGreaterThan(10);
      for (const { route, value } of answers) {
        const reason = value.invalidReason ?? value.errorReason;
        if (reason !== undefined) expect(values, `${route}: ${reason}`).toContain(reason);
        if (route === 'POST /settle') expect(value, route).toEqual(expect.objectContaining({ transaction: expect.any(String), network: expect.any(String) }));
      }
    });
  });

  describe('wire schemas', () => {
    const schemas = facilitatorDoc.components.schemas;
    const pairs: [string, any, z.ZodObject][] = [
      ['ResourceInfo', schemas.ResourceInfo, resourceInfoSchema],
      ['PaymentRequirementsV2', schemas.PaymentRequirementsV2, paymentRequirementsV2Schema],
      ['PaymentPayloadV2', schemas.PaymentPayloadV2, paymentPayloadV2Schema],
      ['PaymentRequirementsV1', schemas.PaymentRequirementsV1, paymentRequirementsV1Schema],
      ['PaymentPayloadV1', schemas.PaymentPayloadV1, paymentPayloadV1Schema],
      ['FacilitatorRequestV2', schemas.FacilitatorRequestV2, facilitatorRequestEnvelopeSchema],
      ['FacilitatorRequestV1', schemas.FacilitatorRequestV1, facilitatorRequestEnvelopeSchema],
      ['ExactEvmEip3009Payload', schemas.ExactEvmEip3009Payload, exactEvmEip3009PayloadSchema],
      ['ExactEvmEip3009Payload.authorization', schemas.ExactEvmEip3009Payload.properties.authorization, exactEvmEip3009PayloadSchema.shape.authorization],
      ['PaymentIdentifierExtension.info', resolveIn(facilitatorDoc, schemas.PaymentIdentifierExtension.properties.info), paymentIdentifierInfoSchema],
    ];

    it.each(pairs)('%s has the members, required members and strictness of its zod schema', (_name, documentedSchema, zodSchema) => {
      const shape = zodSchema.shape as Record<string, z.ZodType>;
      expect(Object.keys(documentedSchema.properties).sort()).toEqual(Object.keys(shape).sort());
      const required = Object.keys(shape).filter((k) => !shape[k].safeParse(undefined).success);
      expect([...(documentedSchema.required ?? [])].sort()).toEqual(required.sort());
      const strict = (zodSchema.safeParse({ __unknown__: 1 }).error?.issues ?? []).some((i) => i.code === 'unrecognized_keys');
      expect(documentedSchema.additionalProperties === false).toBe(strict);
    });

    it("every request example of /verify and /settle decodes with the facilitator's own decoder", () => {
      for (const route of ['/verify', '/settle']) {
        const examples = Object.entries(
          facilitatorDoc.paths[route].post.requestBody.content['application/json'].examples as Record<string, { value: unknown }>,
        );
        expect(examples.length).toBeGreaterThanOrEqual(3);
        for (const [name, { value }] of examples) {
          const decoded = decodePaymentRequest(value);
          expect(decoded, `${route} ${name}`).toMatchObject({ ok: true });
          if (decoded.ok) expect(exactEvmEip3009PayloadSchema.safeParse(decoded.request.payload).success, `${route} ${name}`).toBe(true);
        }
      }
    });
  });

  describe('docs/configuration.md', () => {
    /** Keys of `const envSchema = z.object({ … })` in a config source file. */
    const envSchemaKeys = (file: string) => {
      const block = /const envSchema = z\.object\(\{([\s\S]*?)\n\}\);/.exec(read(file));
      expect(block, `envSchema in ${file}`).not.toBeNull();
      return [...block![1].matchAll(/^\s+([A-Z][A-Z0-9_]*):/gm)].map((m) => m[1]);
    };
    const sourceFiles = (dir: string, pattern: RegExp): string[] =>
      readdirSync(path.join(ROOT, dir), { withFileTypes: true }).flatMap((entry) => {
        const rel = path.join(dir, entry.name);
        if (entry.isDirectory()) return entry.name === 'generated' || entry.name === 'node_modules' ? [] : sourceFiles(rel, pattern);
        return pattern.test(entry.name) && !/\.(e2e-)?spec\.ts$/.test(entry.name) ? [rel] : [];
      });
    const documentedVariables = new Set([...configurationMd.matchAll(/`([A-Z][A-Z0-9_]*)`/g)].map((m) => m[1]));

    it('names every variable of every app config schema', () => {
      const files = [
        'apps/facilitator/src/config/facilitator.config.ts',
        'apps/ledger/src/ledger.config.ts',
        'apps/ledger/src/reconciliation/reconciliation.config.ts',
        'apps/merchant-agent/src/merchant.config.ts',
      ];
      const keys = files.flatMap(envSchemaKeys);
      expect(keys).toEqual(expect.arrayContaining(['FACILITATOR_PORT', 'SETTLE_BUDGET_MS', 'LEDGER_PORT', 'MERCHANT_PRICE', 'DATABASE_URL']));
      expect(keys.filter((k) => !documentedVariables.has(k))).toEqual([]);
    });

    it('names every variable the apps, libraries, scripts and test setup read from process.env', () => {
      const files = [
        ...['apps', 'libs'].flatMap((dir) => sourceFiles(dir, /\.ts$/)),
        ...sourceFiles('scripts', /\.m?js$/),
        'test/global-setup.ts',
        ...sourceFiles('test/support', /\.ts$/),
        'prisma.config.ts',
      ];
      const used = new Set(files.flatMap((file) => [...read(file).matchAll(/process\.env\.([A-Z][A-Z0-9_]*)/g)].map((m) => m[1])));
      expect([...used]).toEqual(expect.arrayContaining(['DATABASE_URL', 'LOG_LEVEL', 'CHAIN_PORT', 'TEST_ANVIL_PORT', 'BUYER_PRIVATE_KEY']));
      expect([...used].filter((k) => !documentedVariables.has(k))).toEqual([]);
    });
  });

  describe('example networks files', () => {
    const dummyKey = (n: number) => `0x${n.toString(16).padStart(2, '0').repeat(32)}`;
    const examples = [
      {
        file: 'docs/examples/networks.base-sepolia.json',
        network: 'eip155:84532',
        asset: '0x036CbD53842c5426634e7929541eC2318f3dCF7e',
        eip712: { name: 'USDC', version: '2' },
      },
      {
        file: 'docs/examples/networks.base.json',
        network: 'eip155:8453',
        asset: '0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913',
        eip712: { name: 'USD Coin', version: '2' },
      },
    ];
    const signerVariables = (file: string) => (JSON.parse(read(file)).networks as { signerKeyEnv: string[] }[]).flatMap((n) => n.signerKeyEnv);

    it.each(examples)('$file loads through loadFacilitatorConfig', ({ file, network, asset, eip712 }) => {
      const names = signerVariables(file);
      const env = { FACILITATOR_NETWORKS_FILE: path.join(ROOT, file), ...Object.fromEntries(names.map((name, i) => [name, dummyKey(i + 1)])) };
      const config = loadFacilitatorConfig(env);
      expect(config.networks).toHaveLength(1);
      expect(config.networks[0]).toMatchObject({ network, chainId: Number(network.split(':')[1]), signerKeys: names.map((_, i) => dummyKey(i + 1)) });
      expect(config.networks[0].assets).toEqual([{ address: asset, symbol: 'USDC', decimals: 6, eip712 }]);
    });

    it.each(examples)('$file without its signer keys fails naming them', ({ file }) => {
      const names = signerVariables(file);
      let error: unknown;
      try {
        loadFacilitatorConfig({ FACILITATOR_NETWORKS_FILE: path.join(ROOT, file) });
      } catch (e) {
        error = e;
      }
      expect(error).toBeInstanceOf(ConfigError);
      for (const name of names) expect((error as ConfigError).message).toContain(name);
    });

    it.each(examples)('$file is shown verbatim in configuration.md, and its signer variables are documented', ({ file }) => {
      const blocks = [...configurationMd.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1]));
      expect(blocks).toContainEqual(JSON.parse(read(file)));
      expect(configurationMd).toContain(file);
      for (const name of signerVariables(file)) expect(configurationMd).toContain(`\`${name}\``);
    });
  });
});
