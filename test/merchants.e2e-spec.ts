import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { getAddress, type Address, type Hex } from 'viem';
import { generatePrivateKey, privateKeyToAccount } from 'viem/accounts';
import { Mppx, evm } from 'mppx/client';
import { PrismaService } from '@mp/db';
import { configureHttpApp } from '@mp/platform';
import { AppModule as MerchantAppModule } from '../apps/merchant-agent/src/app.module';
import { buy } from '../apps/merchant-agent/src/buyer/buyer';
import { loadMerchantConfig } from '../apps/merchant-agent/src/merchant.config';
import { createPaywall } from '../apps/merchant-agent/src/paid-http/paywall';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from './support/chain';
import { call } from './support/http';
import { startFacilitator, type RunningFacilitator } from './support/facilitator';
import { merchantsCli, type CliResult } from './support/merchants';
import { paymentRequiredResponse } from './support/mpp';
import { freePort } from './support/net';

/** the facilitator the CLI talks to (set once it runs) */
let cliFacilitatorUrl = '';

/** scripts/merchants.mjs against the test facilitator's operator API */
const cli = (...args: string[]): Promise<CliResult> => merchantsCli(cliFacilitatorUrl, ...args);

async function cliJson(...args: string[]): Promise<any> {
  const r = await cli(...args, '--json');
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout);
}

describe('merchants: API keys, tenant isolation, rate limits and the CLI', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchantAddress = manifest.accounts.merchant.address as Address;
  /** where the test chain pays its merchant, as a merchant declares it: `<network>:<address>` */
  const receiving = `${manifest.network}:${merchantAddress}`;
  const amount = 4_321n;
  const signer = manifest.accounts.facilitatorSigners[0].privateKey;
  let facilitator: RunningFacilitator;
  let db: PrismaService;
  let a: { merchantId: string; keyId: string; apiKey: string; webhookSecret: string };
  let b: { merchantId: string; keyId: string; apiKey: string };

  const payment = async (payerIndex = 8) =>
    v2Body(
      await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to: merchantAddress, value: amount }),
      v2Requirements(manifest, usdc, amount),
    );
  const settle = (body: unknown, key?: string, base = facilitator.url) => call(`${base}/settle`, { body, key });

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', API_KEY_CACHE_MS: '0', FACILITATOR_SIGNER_KEYS: signer });
    cliFacilitatorUrl = facilitator.url;
    db = facilitator.app.get(PrismaService);
    a = await cliJson('create', '--name', 'Merchant A', '--receiving-address', receiving);
    b = await cliJson('create', '--name', 'Merchant B', '--webhook-url', 'https://b.example/hooks', '--receiving-address', receiving);
  });
  afterAll(() => facilitator?.close());

  describe('the CLI', () => {
    it('creates a merchant with a first key and a webhook secret, printed once', async () => {
      expect(a).toEqual({
        merchantId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        name: 'Merchant A',
        webhookUrl: null,
        keyId: expect.stringMatching(/^[0-9a-f-]{36}$/),
        apiKey: expect.stringMatching(/^mpk_[a-z2-7]{8}_[a-z2-7]{32}$/),
        webhookSecret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
        receivingAddresses: [`${manifest.network}:${getAddress(merchantAddress)}`],
        allowAnyPayTo: false,
      });
      const human = await cli('create', '--name', 'Merchant printed');
      expect(human.code).toBe(0);
      expect(human.stdout).toMatch(/api key\s+mpk_[a-z2-7]{8}_[a-z2-7]{32}\n/);
      expect(human.stdout).toMatch(/webhook secret\s+whsec_[A-Za-z0-9+/]{43}=\n/);
      expect(human.stdout).toContain('shown this once');
    });

    it('lists merchants and keys by prefix only, never the key or the secret', async () => {
      const listed = await cli('list');
      expect(listed.code).toBe(0);
      expect(listed.stdout).toContain(a.merchantId);
      expect(listed.stdout).toContain(`${a.apiKey.slice(0, 12)}_…`);
      expect(listed.stdout).not.toContain(a.apiKey);
      expect(listed.stdout).not.toContain(a.webhookSecret);
      const json = await cliJson('list');
      expect(json.find((m: any) => m.merchantId === b.merchantId)).toMatchObject({
        name: 'Merchant B',
        webhookUrl: 'https://b.example/hooks',
        disabledAt: null,
        keys: [{ keyId: b.keyId, revokedAt: null }],
      });
    });

    it('answers bad usage with exit code 2 and unknown ids with exit code 1', async () => {
      expect((await cli()).code).toBe(2);
      expect((await cli('frobnicate')).code).toBe(2);
      expect((await cli('create')).code).toBe(2);
      expect((await cli('create', '--name', 'x', '--webhook-url', 'ftp://x')).code).toBe(2);
      expect((await cli('keys', 'create', '--merchant', 'not-a-uuid')).code).toBe(2);
      const unknown = '00000000-0000-4000-8000-000000000000';
      expect(await cli('keys', 'create', '--merchant', unknown)).toMatchObject({ code: 1, stderr: expect.stringContaining(`no merchant ${unknown}`) });
      expect((await cli('keys', 'revoke', '--merchant', unknown, unknown)).code).toBe(1);
      expect((await cli('disable', unknown)).code).toBe(1);
      expect((await cli('set-webhook', unknown, 'none')).code).toBe(1);
    });

    it('makes keys that work against the running facilitator, on /settle with Bearer and with X-API-Key', async () => {
      const key = await cliJson('keys', 'create', '--merchant', a.merchantId, '--name', 'second');
      expect(key).toEqual({ merchantId: a.merchantId, keyId: expect.any(String), apiKey: expect.stringMatching(/^mpk_/) });
      const bearer = await settle(await payment(), key.apiKey);
      expect(bearer.body).toMatchObject({ success: true });
      const header = await call(`${facilitator.url}/settle`, { body: await payment(), key: key.apiKey, keyHeader: 'x-api-key' });
      expect(header.body).toMatchObject({ success: true });
      const used = await db.$queryRawUnsafe<{ last_used_at: Date | null }[]>(`SELECT last_used_at FROM facilitator.api_keys WHERE id = $1::uuid`, key.keyId);
      expect(used[0].last_used_at).toBeInstanceOf(Date);
    });
  });

  describe('authentication', () => {
    it('tells another service whose key it is (GET /merchants/me), and nothing without a valid key', async () => {
      expect(await call(`${facilitator.url}/merchants/me`, { key: a.apiKey })).toMatchObject({
        status: 200,
        body: { merchantId: a.merchantId, name: 'Merchant A', keyId: a.keyId },
      });
      expect(await call(`${facilitator.url}/merchants/me`, { key: b.apiKey, keyHeader: 'x-api-key' })).toMatchObject({
        status: 200,
        body: { merchantId: b.merchantId },
      });
      expect((await call(`${facilitator.url}/merchants/me`)).status).toBe(401);
      expect((await call(`${facilitator.url}/merchants/me`, { key: `${a.apiKey}x` })).status).toBe(401);
    });

    it('answers a missing, malformed, unknown or revoked key and a disabled merchant with the very same 401', async () => {
      const revoked = await cliJson('keys', 'create', '--merchant', a.merchantId);
      expect((await call(`${facilitator.url}/payments`, { key: revoked.apiKey })).status).toBe(200);
      expect(await cliJson('keys', 'revoke', '--merchant', a.merchantId, revoked.keyId)).toMatchObject({ keyId: revoked.keyId, revokedAt: expect.any(String) });
      const disabled = await cliJson('create', '--name', 'Merchant disabled');
      expect((await cli('disable', disabled.merchantId)).code).toBe(0);
      const unknown = `mpk_${a.apiKey.slice(4, 12)}_${'a'.repeat(32)}`; // a real prefix, a wrong secret

      for (const route of ['/verify', '/settle', '/payments', `/payments/00000000-0000-4000-8000-000000000000`]) {
        const method = route === '/verify' || route === '/settle' ? 'POST' : 'GET';
        const body = method === 'POST' ? await payment() : undefined;
        const answers = await Promise.all([
          call(`${facilitator.url}${route}`, { method, body }),
          call(`${facilitator.url}${route}`, { method, body, key: 'not-a-key' }),
          call(`${facilitator.url}${route}`, { method, body, key: unknown }),
          call(`${facilitator.url}${route}`, { method, body, key: unknown, keyHeader: 'x-api-key' }),
          call(`${facilitator.url}${route}`, { method, body, key: revoked.apiKey }),
          call(`${facilitator.url}${route}`, { method, body, key: disabled.apiKey }),
        ]);
        for (const answer of answers) {
          expect(answer.status, route).toBe(401);
          expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
          expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer/);
          expect(answer.body).toEqual({
            type: 'urn:problem:unauthorized',
            title: 'Authentication required',
            status: 401,
            code: 'unauthorized',
            detail: 'a valid API key is required',
            instance: route,
          });
        }
      }
    });

    it('keeps /supported, /health, /ready, /metrics and /docs public', async () => {
      for (const route of ['/supported', '/health', '/ready', '/metrics', '/docs']) {
        expect((await call(`${facilitator.url}${route}`)).status, route).toBe(200);
      }
    });

    it('stores only the sha256 of a key: no table holds the key or its secret part', async () => {
      const { createHash } = await import('node:crypto');
      const rows = await db.$queryRawUnsafe<{ prefix: string; hash: string }[]>(`SELECT prefix, hash FROM facilitator.api_keys WHERE id = $1::uuid`, a.keyId);
      expect(rows).toEqual([{ prefix: a.apiKey.slice(4, 12), hash: createHash('sha256').update(a.apiKey).digest('hex') }]);
      const secretPart = a.apiKey.slice(13);
      for (const table of [
        'merchants',
        'api_keys',
        'payments',
        'payment_events',
        'payment_idempotency_keys',
        'webhook_deliveries',
        'webhook_delivery_attempts',
      ]) {
        const found = await db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM facilitator.${table} t WHERE t::text LIKE $1`,
          `%${secretPart}%`,
        );
        expect(found[0].n, table).toBe(0);
      }
    });
  });

  describe('tenant isolation', () => {
    it('scopes payment identifiers to the merchant: the same id for two merchants is no conflict and no leak', async () => {
      const id = `shared_id_${Date.now()}_0123456789`;
      const withId = async (payerIndex: number) => {
        const body = await payment(payerIndex);
        return { ...body, paymentPayload: { ...body.paymentPayload, extensions: { 'payment-identifier': { info: { required: false, id }, schema: {} } } } };
      };
      const first = await settle(await withId(7), a.apiKey);
      expect(first.body).toMatchObject({ success: true });
      const second = await settle(await withId(9), b.apiKey);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ success: true });
      expect(second.body.transaction).not.toBe(first.body.transaction);
      // Within one merchant the identifier still guards against a different payload.
      const conflict = await settle(await withId(6), a.apiKey);
      expect(conflict.status).toBe(409);
    });

    it('lets a merchant read its own payment, with amounts as decimal strings', async () => {
      const body = await payment();
      const settled = await settle(body, a.apiKey);
      expect(settled.body).toMatchObject({ success: true });
      const [{ id }] = await db.$queryRawUnsafe<{ id: string }[]>(
        `SELECT id FROM facilitator.payments WHERE authorization_nonce = $1`,
        body.paymentPayload.payload.authorization.nonce.toLowerCase(),
      );
      const read = await call(`${facilitator.url}/payments/${id}`, { key: a.apiKey });
      expect(read.status).toBe(200);
      expect(read.headers.get('cache-control')).toBe('no-store');
      expect(read.body).toEqual({
        id,
        state: 'confirmed',
        protocol: 'x402',
        rail: 'evm',
        network: manifest.network,
        asset: usdc.address,
        payer: payerAccount(manifest, 8).address,
        payTo: merchantAddress,
        amount: '4321',
        nonce: body.paymentPayload.payload.authorization.nonce.toLowerCase(),
        scheme: 'exact',
        x402Version: 2,
        challengeId: null,
        reference: null,
        paymentIdentifier: null,
        txHash: settled.body.transaction,
        errorReason: null,
        errorMessage: null,
        createdAt: expect.stringMatching(/Z$/),
        updatedAt: expect.stringMatching(/Z$/),
        settledAt: expect.stringMatching(/Z$/),
      });
    });

    it("merchant B cannot read, list or settle into merchant A's payment", async () => {
      const body = await payment();
      const settled = await settle(body, a.apiKey);
      expect(settled.body).toMatchObject({ success: true });
      const [{ id }] = await db.$queryRawUnsafe<{ id: string }[]>(
        `SELECT id FROM facilitator.payments WHERE authorization_nonce = $1`,
        body.paymentPayload.payload.authorization.nonce.toLowerCase(),
      );

      const read = await call(`${facilitator.url}/payments/${id}`, { key: b.apiKey });
      const missing = await call(`${facilitator.url}/payments/00000000-0000-4000-8000-000000000000`, { key: b.apiKey });
      expect(read.status).toBe(404);
      expect(read.body).toMatchObject({ code: 'not_found', detail: `no payment ${id}` });
      expect(missing.status).toBe(404);

      const list = await call(`${facilitator.url}/payments?limit=100`, { key: b.apiKey });
      expect(list.status).toBe(200);
      expect(list.body.data.map((p: any) => p.id)).not.toContain(id);
      expect((await call(`${facilitator.url}/payments?limit=100`, { key: a.apiKey })).body.data.map((p: any) => p.id)).toContain(id);

      // B presents A's settled payload: the authorization is taken, and nothing of A's outcome is told.
      const replay = await settle(body, b.apiKey);
      expect(replay.status).toBe(200);
      expect(replay.body).toEqual({
        success: false,
        errorReason: 'invalid_exact_evm_nonce_already_used',
        errorMessage: 'this authorization was already presented to this facilitator',
        payer: payerAccount(manifest, 8).address,
        transaction: '',
        network: manifest.network,
      });
      expect(JSON.stringify(replay.body)).not.toContain(settled.body.transaction.slice(2));
      // A still gets its own outcome, and the record is still A's.
      expect((await settle(body, a.apiKey)).body).toEqual(settled.body);
      const owner = await db.$queryRawUnsafe<{ merchant_id: string }[]>(`SELECT merchant_id::text FROM facilitator.payments WHERE id = $1::uuid`, id);
      expect(owner).toEqual([{ merchant_id: a.merchantId }]);
    });

    it('two merchants presenting one fresh payload at once: one settles it, the other is told it is taken', async () => {
      const body = await payment(9);
      const answers = await Promise.all([settle(body, a.apiKey), settle(body, b.apiKey), settle(body, a.apiKey), settle(body, b.apiKey)]);
      const winners = answers.filter((r) => r.body.success);
      const losers = answers.filter((r) => !r.body.success);
      expect(winners.length).toBe(2);
      expect(losers.map((r) => r.body)).toEqual([
        expect.objectContaining({ errorReason: 'invalid_exact_evm_nonce_already_used', transaction: '' }),
        expect.objectContaining({ errorReason: 'invalid_exact_evm_nonce_already_used', transaction: '' }),
      ]);
      expect(new Set(winners.map((r) => r.body.transaction)).size).toBe(1);
    });

    it('an open-mode payment taken without a key belongs to no merchant', async () => {
      const open = await startFacilitator({ FACILITATOR_OPEN_MODE: 'true', API_KEY_CACHE_MS: '0', FACILITATOR_SIGNER_KEYS: signer });
      try {
        const body = await payment();
        const anonymous = await settle(body, undefined, open.url);
        expect(anonymous.body).toMatchObject({ success: true });
        expect((await settle(body, a.apiKey)).body).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_nonce_already_used', transaction: '' });
        // In open mode a key that is presented is still checked, and scopes the payment.
        expect((await settle(await payment(), 'mpk_wrongwro_aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', open.url)).status).toBe(401);
        const scoped = await payment();
        expect((await settle(scoped, a.apiKey, open.url)).body).toMatchObject({ success: true });
        expect((await settle(scoped, undefined, open.url)).body).toMatchObject({ errorReason: 'invalid_exact_evm_nonce_already_used' });
        // The read API always needs a key.
        expect((await call(`${open.url}/payments`)).status).toBe(401);
      } finally {
        await open.close();
      }
    });
  });

  describe('GET /payments', () => {
    it('pages newest first with an opaque cursor, and filters by state', async () => {
      const merchant = await cliJson('create', '--name', 'Merchant pages', '--receiving-address', receiving);
      const bodies = [await payment(), await payment(), await payment()];
      const hashes: string[] = [];
      for (const body of bodies) hashes.push((await settle(body, merchant.apiKey)).body.transaction);
      const failing = await signAuthorization(payerAccount(manifest, 8), manifest.tokens.misreportingUsdc, manifest.chainId, {
        to: merchantAddress,
        value: amount,
      });
      expect((await settle(v2Body(failing, v2Requirements(manifest, manifest.tokens.misreportingUsdc, amount)), merchant.apiKey)).body).toMatchObject({
        success: false,
      });

      const first = await call(`${facilitator.url}/payments?limit=2`, { key: merchant.apiKey });
      expect(first.status).toBe(200);
      expect(first.body.data.map((p: any) => p.state)).toEqual(['failed', 'confirmed']);
      expect(first.body.data[0]).toMatchObject({ errorReason: 'invalid_exact_evm_transfer_event_mismatch', txHash: expect.stringMatching(/^0x/) });
      expect(first.body.data[1].txHash).toBe(hashes[2]);
      expect(first.body.nextCursor).toEqual(expect.any(String));
      const second = await call(`${facilitator.url}/payments?limit=2&cursor=${first.body.nextCursor}`, { key: merchant.apiKey });
      expect(second.body.data.map((p: any) => p.txHash)).toEqual([hashes[1], hashes[0]]);
      expect(second.body.nextCursor).toBeNull();
      const confirmed = await call(`${facilitator.url}/payments?state=confirmed`, { key: merchant.apiKey });
      expect(confirmed.body.data.map((p: any) => p.txHash)).toEqual([hashes[2], hashes[1], hashes[0]]);
      expect((await call(`${facilitator.url}/payments?state=expired`, { key: merchant.apiKey })).body).toEqual({ data: [], nextCursor: null });
    });

    it('refuses bad parameters with a 400 naming them', async () => {
      const bad = async (query: string, name: string) => {
        const answer = await call(`${facilitator.url}/payments${query}`, { key: a.apiKey });
        expect(answer.status, query).toBe(400);
        expect(answer.body).toMatchObject({ code: 'validation_failed', invalidParams: [expect.objectContaining({ name })] });
      };
      await bad('?limit=0', 'limit');
      await bad('?limit=101', 'limit');
      await bad('?limit=ten', 'limit');
      await bad('?state=paid', 'state');
      await bad('?cursor=bm9wZQ', 'cursor');
      await bad('?colour=blue', 'colour');
      await bad('/not-a-uuid', 'id');
    });
  });

  describe('rate limits', () => {
    it('slows down an address that keeps presenting bad keys, before looking at its keys', async () => {
      const strict = await startFacilitator({
        FACILITATOR_OPEN_MODE: 'false',
        AUTH_FAILURES_PER_MINUTE: '3',
        QUEUE_PREFIX: `mp:test-authfail-${Date.now()}`,
        FACILITATOR_SIGNER_KEYS: signer,
      });
      try {
        const body = await payment(5);
        // The address was just found under the limit (a good key): its bad keys are still counted, each one.
        expect((await call(`${strict.url}/payments`, { key: a.apiKey })).status).toBe(200);
        for (let i = 0; i < 3; i++) expect((await settle(body, 'mpk_aaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', strict.url)).status).toBe(401);
        const locked = await settle(body, a.apiKey, strict.url);
        expect(locked.status).toBe(429);
        expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(locked.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('failed API-key attempts') });
      } finally {
        await strict.close();
      }
    });

    it('answers 429 rate_limited with Retry-After once a key has used its burst, per key', async () => {
      const limited = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', RATE_LIMIT_PER_MINUTE: '3', RATE_LIMIT_BURST: '3', FACILITATOR_ROLE: 'api' });
      try {
        const key = (await cliJson('keys', 'create', '--merchant', a.merchantId)).apiKey;
        const statuses = [];
        for (let i = 0; i < 3; i++) statuses.push((await call(`${limited.url}/payments`, { key })).status);
        expect(statuses).toEqual([200, 200, 200]);
        const refused = await call(`${limited.url}/payments`, { key });
        expect(refused.status).toBe(429);
        // Whole seconds, at least 1, at most what one token takes to come back at 3 a minute (20 s): how much of that
        // is left depends on how long the requests above took, which is not this test's business.
        const retryAfter = Number(refused.headers.get('retry-after'));
        expect(Number.isInteger(retryAfter)).toBe(true);
        expect(retryAfter).toBeGreaterThanOrEqual(1);
        expect(retryAfter).toBeLessThanOrEqual(20);
        expect(refused.body).toMatchObject({ type: 'urn:problem:rate_limited', status: 429, code: 'rate_limited', retryAfter });
        // /settle is limited by the same bucket, and answers the same problem.
        expect((await settle(await payment(), key, limited.url)).status).toBe(429);
        // Another key of the same merchant has its own budget; a wrong key is still 401, not 429.
        const other = (await cliJson('keys', 'create', '--merchant', a.merchantId)).apiKey;
        expect((await call(`${limited.url}/payments`, { key: other })).status).toBe(200);
        // the last character changed (a key that ended in "a" was its own key, and 429)
        const wrong = `${key.slice(0, -1)}${key.endsWith('a') ? 'b' : 'a'}`;
        expect((await call(`${limited.url}/payments`, { key: wrong })).status).toBe(401);
      } finally {
        await limited.close();
      }
    });

    it('lets traffic through when Redis is unreachable (fails open)', async () => {
      const deadRedis = `redis://127.0.0.1:${await freePort()}`;
      const blind = await startFacilitator({
        FACILITATOR_OPEN_MODE: 'false',
        RATE_LIMIT_PER_MINUTE: '1',
        RATE_LIMIT_BURST: '1',
        REDIS_URL: deadRedis,
        FACILITATOR_ROLE: 'api',
      });
      try {
        for (let i = 0; i < 3; i++) expect((await call(`${blind.url}/payments`, { key: a.apiKey })).status).toBe(200);
      } finally {
        await blind.close();
      }
    });
  });

  describe('the merchant agent with FACILITATOR_API_KEY', () => {
    let merchant: INestApplication | undefined;
    afterAll(() => merchant?.close());

    it("pays through the official client and paywall against a facilitator that requires keys; the payment is the merchant's", async () => {
      const config = loadMerchantConfig({ ...process.env, FACILITATOR_URL: cliFacilitatorUrl, FACILITATOR_API_KEY: b.apiKey, MERCHANT_PRICE: '7000' });
      merchant = (await Test.createTestingModule({ imports: [MerchantAppModule.forConfig(config)] }).compile()).createNestApplication({
        bodyParser: false,
        logger: ['error'],
      });
      configureHttpApp(merchant);
      merchant.use(createPaywall(config));
      await merchant.listen(0, '127.0.0.1');
      const url = `http://127.0.0.1:${(merchant.getHttpServer().address() as { port: number }).port}/paid/forecast`;
      const payer = manifest.accounts.payers[9];

      const purchase = await buy({
        url,
        privateKey: payer.privateKey as Hex,
        network: manifest.network as `${string}:${string}`,
        asset: usdc.address,
        maxAmountPerPayment: '100000',
      });

      expect(purchase.status).toBe(200);
      const list = await call(`${facilitator.url}/payments?limit=5`, { key: b.apiKey });
      expect(list.body.data[0]).toMatchObject({ state: 'confirmed', amount: '7000', txHash: purchase.transaction });
    });
  });

  describe("receiving addresses: where a merchant's money may go", () => {
    const fresh = () => privateKeyToAccount(generatePrivateKey()).address;
    const paymentTo = async (to: Address, payerIndex = 8) =>
      v2Body(
        await signAuthorization(payerAccount(manifest, payerIndex), usdc, manifest.chainId, { to, value: amount }),
        v2Requirements(manifest, usdc, amount, { payTo: to }),
      );
    const paymentsWithNonce = async (body: { paymentPayload: { payload: { authorization: { nonce: string } } } }) =>
      (
        await db.$queryRawUnsafe<{ n: number }[]>(
          `SELECT count(*)::int AS n FROM facilitator.payments WHERE authorization_nonce = $1`,
          body.paymentPayload.payload.authorization.nonce.toLowerCase(),
        )
      )[0].n;
    const addresses = (key: string) => call(`${facilitator.url}/merchants/me/receiving-addresses`, { key });
    const declare = (key: string, body: unknown) => call(`${facilitator.url}/merchants/me/receiving-addresses`, { key, body });

    it('refuses /verify and /settle to a payTo the merchant did not declare, with a reason, and writes nothing', async () => {
      const undeclared = await cliJson('create', '--name', 'Merchant undeclared');
      const body = await payment();
      const verified = await call(`${facilitator.url}/verify`, { body, key: undeclared.apiKey });
      expect(verified.status).toBe(200);
      expect(verified.body).toEqual({
        isValid: false,
        invalidReason: 'pay_to_not_allowed',
        invalidMessage: expect.stringContaining(
          `payTo ${getAddress(merchantAddress)} is not a receiving address this merchant declared for ${manifest.network}`,
        ),
        payer: payerAccount(manifest, 8).address,
      });
      const settled = await settle(body, undeclared.apiKey);
      expect(settled.status).toBe(200);
      expect(settled.body).toEqual({
        success: false,
        errorReason: 'pay_to_not_allowed',
        errorMessage: expect.stringContaining('allowAnyPayTo'),
        transaction: '',
        network: manifest.network,
      });
      expect(await paymentsWithNonce(body)).toBe(0);
      // Nothing was taken: the merchant that declared the address settles the very same payload.
      expect((await settle(body, a.apiKey)).body).toMatchObject({ success: true });
      // A declared address is declared for its network and itself only.
      const other = await paymentTo(fresh());
      expect((await settle(other, a.apiKey)).body).toMatchObject({ success: false, errorReason: 'pay_to_not_allowed', transaction: '' });
      expect(await paymentsWithNonce(other)).toBe(0);
    });

    it("declares, lists and removes addresses over the API, whatever their case, for the key's own merchant", async () => {
      const merchant = await cliJson('create', '--name', 'Merchant declaring');
      const address = fresh();
      expect(await addresses(merchant.apiKey)).toMatchObject({ status: 200, body: { allowAnyPayTo: false, data: [] } });
      const created = await declare(merchant.apiKey, { network: manifest.network, address: address.toLowerCase() });
      expect(created.status).toBe(201);
      expect(created.body).toEqual({ network: manifest.network, address, createdAt: expect.stringMatching(/Z$/) });
      const again = await declare(merchant.apiKey, { network: manifest.network, address: `0x${address.slice(2).toUpperCase()}` });
      expect(again).toMatchObject({ status: 200, body: { address, createdAt: created.body.createdAt } });
      expect((await addresses(merchant.apiKey)).body.data).toEqual([created.body]);
      expect((await addresses(a.apiKey)).body.data.map((r: any) => r.address)).not.toContain(address);

      // payTo compares case-insensitively
      const lower = await paymentTo(address.toLowerCase() as Address);
      expect((await settle(lower, merchant.apiKey)).body).toMatchObject({ success: true });

      const removal = `${facilitator.url}/merchants/me/receiving-addresses/${manifest.network}/${address}`;
      expect((await call(removal, { method: 'DELETE', key: a.apiKey })).status).toBe(404); // another merchant's is not its to remove
      expect((await call(removal, { method: 'DELETE', key: merchant.apiKey })).status).toBe(204);
      expect((await call(removal, { method: 'DELETE', key: merchant.apiKey })).body).toMatchObject({ status: 404, code: 'not_found' });
      expect((await settle(await paymentTo(address), merchant.apiKey)).body).toMatchObject({ errorReason: 'pay_to_not_allowed' });
    });

    it('answers bad declarations with a 400 naming the field', async () => {
      const address = fresh();
      const i = address.slice(2).search(/[a-fA-F]/) + 2;
      const flipped = `${address.slice(0, i)}${address[i] === address[i].toLowerCase() ? address[i].toUpperCase() : address[i].toLowerCase()}${address.slice(i + 1)}`;
      const cases: [unknown, string][] = [
        [{ network: 'base', address }, 'network'],
        [{ network: manifest.network, address: '0x1234' }, 'address'],
        [{ network: manifest.network, address: flipped }, 'address'],
        [{ network: manifest.network, address: '0x0000000000000000000000000000000000000000' }, 'address'],
        [{ network: manifest.network, address, note: 'x' }, 'note'],
        // a body that is not an object is refused as a whole, as on every DTO-validated route
        [[{ network: manifest.network, address }], '(body)'],
      ];
      for (const [body, name] of cases) {
        const answer = await declare(a.apiKey, body);
        expect(answer.status, JSON.stringify(body)).toBe(400);
        expect(answer.body).toMatchObject({ code: 'validation_failed', invalidParams: expect.arrayContaining([expect.objectContaining({ name })]) });
      }
      expect((await call(`${facilitator.url}/merchants/me/receiving-addresses/base/${address}`, { method: 'DELETE', key: a.apiKey })).status).toBe(400);
    });

    it('lets a merchant that sets allowAnyPayTo settle to any address, and no longer once it clears it', async () => {
      const merchant = await cliJson('create', '--name', 'Merchant anywhere');
      const me = `${facilitator.url}/merchants/me`;
      for (const body of [{}, { allowAnyPayTo: 'yes' }, { allowAnyPayTo: true, colour: 'blue' }]) {
        expect((await call(me, { method: 'PATCH', key: merchant.apiKey, body })).body, JSON.stringify(body)).toMatchObject({
          status: 400,
          code: 'validation_failed',
        });
      }
      expect(await call(me, { method: 'PATCH', key: merchant.apiKey, body: { allowAnyPayTo: true } })).toMatchObject({
        status: 200,
        body: { merchantId: merchant.merchantId, allowAnyPayTo: true },
      });
      expect((await addresses(merchant.apiKey)).body).toEqual({ allowAnyPayTo: true, data: [] });
      expect((await settle(await paymentTo(fresh()), merchant.apiKey)).body).toMatchObject({ success: true });
      expect((await call(me, { method: 'PATCH', key: merchant.apiKey, body: { allowAnyPayTo: false } })).body).toMatchObject({ allowAnyPayTo: false });
      expect((await settle(await paymentTo(fresh()), merchant.apiKey)).body).toMatchObject({ success: false, errorReason: 'pay_to_not_allowed' });
    });

    it('refuses an MPP evm charge to an undeclared recipient with a problem, claims nothing, and settles it once declared', async () => {
      const merchant = await cliJson('create', '--name', 'Merchant MPP undeclared');
      const terms = {
        realm: 'shop.example',
        offers: [
          {
            method: 'evm',
            intent: 'charge',
            request: { amount: '3000', currency: usdc.address, recipient: merchantAddress, methodDetails: { chainId: manifest.chainId } },
          },
        ],
      };
      const issued = await call(`${facilitator.url}/mpp/challenges`, { key: merchant.apiKey, body: terms });
      expect(issued.status).toBe(201);
      const payer = Mppx.create({
        methods: [evm.charge({ account: payerAccount(manifest, 4), authorization: { name: usdc.name, version: usdc.version } })],
        polyfill: false,
      });
      const credential = await payer.createCredential(paymentRequiredResponse(issued.body.wwwAuthenticate));
      const challengeId = issued.body.challenges[0].id as string;

      for (const route of ['/mpp/verify', '/mpp/settle']) {
        const refused = await call(`${facilitator.url}${route}`, { key: merchant.apiKey, body: { credential, terms } });
        expect(refused.status, route).toBe(402);
        expect(refused.headers.get('content-type')).toMatch(/^application\/problem\+json/);
        expect(refused.body).toMatchObject({
          type: 'https://paymentauth.org/problems/verification-failed',
          challengeId,
          detail: expect.stringContaining('pay_to_not_allowed'),
        });
      }
      const claims = await db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM facilitator.mpp_claims WHERE challenge_id = $1`, challengeId);
      const payments = await db.$queryRawUnsafe<{ n: number }[]>(`SELECT count(*)::int AS n FROM facilitator.payments WHERE challenge_id = $1`, challengeId);
      expect([claims[0].n, payments[0].n]).toEqual([0, 0]);

      await cliJson('receiving-addresses', 'add', merchant.merchantId, receiving);
      const settled = await call(`${facilitator.url}/mpp/settle`, { key: merchant.apiKey, body: { credential, terms } });
      expect(settled.status).toBe(200);
      expect(settled.body).toMatchObject({ success: true, receipt: { challengeId } });
    });

    it('manages receiving addresses and the allow-any switch from the CLI', async () => {
      const address = fresh();
      const elsewhere = `eip155:8453:${address.toLowerCase()}`;
      const merchant = await cliJson('create', '--name', 'Merchant CLI addresses', '--receiving-address', receiving, '--receiving-address', elsewhere);
      const expected = [`${manifest.network}:${getAddress(merchantAddress)}`, `eip155:8453:${address}`].sort();
      expect([...merchant.receivingAddresses].sort()).toEqual(expected);
      expect([...(await cliJson('receiving-addresses', 'list', merchant.merchantId)).receivingAddresses].sort()).toEqual(expected);
      expect(await cliJson('receiving-addresses', 'remove', merchant.merchantId, elsewhere)).toMatchObject({ removed: true, address });
      expect(await cli('receiving-addresses', 'remove', merchant.merchantId, elsewhere)).toMatchObject({
        code: 1,
        stderr: expect.stringContaining('has no receiving address'),
      });
      expect(await cliJson('receiving-addresses', 'add', merchant.merchantId, `${manifest.network}:${address}`)).toMatchObject({
        network: manifest.network,
        address,
      });
      expect(await cliJson('allow-any-pay-to', merchant.merchantId, 'on')).toEqual({ merchantId: merchant.merchantId, allowAnyPayTo: true });
      expect((await cliJson('list')).find((m: any) => m.merchantId === merchant.merchantId)).toMatchObject({
        allowAnyPayTo: true,
        receivingAddresses: expect.arrayContaining([`${manifest.network}:${address}`]),
      });
      expect((await cli('list')).stdout).toContain(`${manifest.network}:${getAddress(merchantAddress)}`);

      const unknown = '00000000-0000-4000-8000-000000000000';
      expect((await cli('receiving-addresses', 'add', unknown, receiving)).code).toBe(1);
      expect((await cli('allow-any-pay-to', unknown, 'off')).code).toBe(1);
      expect((await cli('allow-any-pay-to', merchant.merchantId, 'maybe')).code).toBe(2);
      expect((await cli('receiving-addresses', 'add', merchant.merchantId, address)).code).toBe(2); // no network
      expect((await cli('create', '--name', 'x', '--receiving-address', `${manifest.network}:0x1234`)).code).toBe(2);
      expect((await cli('receiving-addresses', 'frobnicate')).code).toBe(2);
    });
  });

  describe('open mode', () => {
    it('limits requests without a key per client address: 429 rate_limited with Retry-After, other addresses and keys unaffected', async () => {
      const open = await startFacilitator({
        FACILITATOR_OPEN_MODE: 'true',
        OPEN_MODE_RATE_LIMIT_PER_MINUTE: '2',
        OPEN_MODE_RATE_LIMIT_BURST: '2',
        QUEUE_PREFIX: `mp:test-openlimit-${Date.now()}`,
        FACILITATOR_ROLE: 'api',
      });
      // clients behind a proxy on this host (TRUST_PROXY loopback), which names them in X-Forwarded-For
      const asClient = (client: string, key?: string) =>
        fetch(`${open.url}/mpp/supported`, { headers: { 'x-forwarded-for': client, ...(key ? { authorization: `Bearer ${key}` } : {}) } }).then(async (r) => ({
          status: r.status,
          headers: r.headers,
          body: (await r.json()) as any,
        }));
      try {
        expect([(await asClient('203.0.113.7')).status, (await asClient('203.0.113.7')).status]).toEqual([200, 200]);
        const refused = await asClient('203.0.113.7');
        expect(refused.status).toBe(429);
        expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
        expect(refused.body).toMatchObject({ code: 'rate_limited', detail: expect.stringContaining('without an API key from this address') });
        const body = await payment(5);
        const settled = await fetch(`${open.url}/verify`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.7' },
          body: JSON.stringify(body),
        });
        expect(settled.status).toBe(429);
        expect((await asClient('198.51.100.9')).status).toBe(200);
        expect((await asClient('203.0.113.7', a.apiKey)).status).toBe(200);
      } finally {
        await open.close();
      }
    });
  });
});
