import { randomUUID } from 'node:crypto';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { startTcpProxy } from '../../../test/support/tcp-proxy';
import { createMerchant, revokeKey, type TestMerchant } from '../../../test/support/merchants';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';

const USD = 'stripe/usd';

describe('ledger API: merchants and their API keys', () => {
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let a: TestMerchant;
  let b: TestMerchant;
  const url = (path: string) => `${ledger.url}${path}`;

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', API_KEY_CACHE_MS: '0', AUTH_FAILURES_PER_MINUTE: '0' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url, API_KEY_CACHE_MS: '60000' });
    a = createMerchant('Ledger merchant A');
    b = createMerchant('Ledger merchant B');
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
  });

  it('requires a valid key, as a bearer token or X-API-Key, and says nothing about the others', async () => {
    for (const key of [undefined, 'mpk_aaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb', 'not a key', `${a.apiKey}x`]) {
      const answer = await call(url('/accounts'), { key });
      expect(answer.status).toBe(401);
      expect(answer.body).toMatchObject({ code: 'unauthorized', status: 401 });
      expect(answer.headers.get('www-authenticate')).toBe('Bearer realm="ledger"');
      expect(answer.headers.get('content-type')).toMatch(/^application\/problem\+json/);
    }
    expect((await call(url('/accounts'), { key: a.apiKey })).status).toBe(200);
    expect((await call(url('/accounts'), { key: a.apiKey, keyHeader: 'x-api-key' })).status).toBe(200);
  });

  it("keeps each merchant's accounts, transfers and statements to itself; ids are per merchant", async () => {
    const [x, y] = [randomUUID(), randomUUID()];
    const created = await call(url('/accounts'), {
      key: a.apiKey,
      body: [
        { id: x, asset: USD, code: 1 },
        { id: y, asset: USD, code: 1 },
      ],
    });
    expect(created.body.results.map((r: any) => r.result)).toEqual(['created', 'created']);
    const t = randomUUID();
    expect(
      (await call(url('/transfers'), { key: a.apiKey, body: [{ id: t, debitAccountId: x, creditAccountId: y, amount: '5', asset: USD, code: 1 }] })).body
        .results[0].result,
    ).toBe('created');

    // B sees none of it
    expect((await call(url(`/accounts/${x}`), { key: b.apiKey })).status).toBe(404);
    expect((await call(url(`/transfers/${t}`), { key: b.apiKey })).status).toBe(404);
    expect((await call(url(`/transfers?account=${x}`), { key: b.apiKey })).status).toBe(404);
    expect((await call(url(`/statements?account=${x}`), { key: b.apiKey })).status).toBe(404);
    expect((await call(url('/accounts'), { key: b.apiKey })).body.data.map((acc: any) => acc.id)).not.toContain(x);
    expect((await call(url('/transfers'), { key: b.apiKey })).body.data.map((tr: any) => tr.id)).not.toContain(t);
    // nor can B move A's money: to B, A's accounts do not exist
    const theft = await call(url('/transfers'), {
      key: b.apiKey,
      body: [{ id: randomUUID(), debitAccountId: x, creditAccountId: y, amount: '5', asset: USD, code: 1 }],
    });
    expect(theft.body.results[0].result).toBe('debit_account_not_found');
    // the same ids mean other accounts and transfers to B
    expect((await call(url('/accounts'), { key: b.apiKey, body: [{ id: x, asset: 'stripe/eur', code: 9 }] })).body.results[0].result).toBe('created');
    expect((await call(url(`/accounts/${x}`), { key: a.apiKey })).body).toMatchObject({ asset: USD, code: 1, creditsPosted: '0', debitsPosted: '5' });
    expect((await call(url(`/accounts/${x}`), { key: b.apiKey })).body).toMatchObject({ asset: 'stripe/eur', code: 9, debitsPosted: '0' });
  });

  it('counts failed keys per client, not against the ledger: one client guessing keys locks out only itself', async () => {
    const strict = await startFacilitator({
      FACILITATOR_OPEN_MODE: 'false',
      API_KEY_CACHE_MS: '0',
      AUTH_FAILURES_PER_MINUTE: '3',
      QUEUE_PREFIX: `mp:test-ledger-authfail-${Date.now()}`,
    });
    const guarded = await startLedger({ FACILITATOR_URL: strict.url, API_KEY_CACHE_MS: '0' });
    // both clients reach the ledger through a proxy on this host, which names them in X-Forwarded-For
    const asClient = (client: string, key: string) =>
      fetch(`${guarded.url}/accounts`, { headers: { authorization: `Bearer ${key}`, 'x-forwarded-for': client } });
    try {
      for (let i = 0; i < 3; i++) expect((await asClient('203.0.113.7', 'mpk_aaaaaaaa_bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb')).status).toBe(401);
      const locked = await asClient('203.0.113.7', a.apiKey);
      expect(locked.status).toBe(429);
      expect(Number(locked.headers.get('retry-after'))).toBeGreaterThan(0);
      expect((await asClient('198.51.100.9', a.apiKey)).status).toBe(200);
    } finally {
      await guarded.close();
      await strict.close();
    }
  });

  it('remembers a valid key for API_KEY_CACHE_MS, never a failure, and answers 503 while the facilitator is away', async () => {
    const proxy = await startTcpProxy(Number(new URL(facilitator.url).port));
    const cached = await startLedger({ FACILITATOR_URL: proxy.url('http'), FACILITATOR_TIMEOUT_MS: '500', API_KEY_CACHE_MS: '60000' });
    const uncached = await startLedger({ FACILITATOR_URL: proxy.url('http'), FACILITATOR_TIMEOUT_MS: '500', API_KEY_CACHE_MS: '0' });
    try {
      proxy.set('refuse');
      for (const l of [cached, uncached])
        expect((await call(`${l.url}/accounts`, { key: a.apiKey })).body).toMatchObject({ status: 503, code: 'upstream_unavailable' });
      proxy.set('pass');
      for (const l of [cached, uncached]) expect((await call(`${l.url}/accounts`, { key: a.apiKey })).status).toBe(200);
      proxy.set('refuse');
      expect((await call(`${cached.url}/accounts`, { key: a.apiKey })).status).toBe(200);
      expect((await call(`${uncached.url}/accounts`, { key: a.apiKey })).status).toBe(503);
      proxy.set('pass');
      // a revoked key stops working at once where nothing is cached
      const c = createMerchant('Ledger merchant C');
      expect((await call(`${uncached.url}/accounts`, { key: c.apiKey })).status).toBe(200);
      revokeKey(c.keyId);
      expect((await call(`${uncached.url}/accounts`, { key: c.apiKey })).status).toBe(401);
    } finally {
      await cached.close();
      await uncached.close();
      await proxy.close();
    }
  });
});
