import { randomUUID } from 'node:crypto';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';
import { call } from '../../../test/support/http';
import { startLedger, type RunningLedger } from '../../../test/support/ledger-app';
import { createMerchant, type TestMerchant } from '../../../test/support/merchants';

const USD = 'stripe/usd';

/**
 * POST /transfers is served below Express and Nest (serveHotRoutes); a request naming its client in X-Forwarded-For
 * still goes through the framework. Each request here is sent both ways and must get the same answer.
 */
describe('ledger POST /transfers served below the framework', () => {
  let facilitator: RunningFacilitator;
  let ledger: RunningLedger;
  let merchant: TestMerchant;
  let frameworkRequests = 0;
  const [debit, credit] = [randomUUID(), randomUUID()];

  beforeAll(async () => {
    facilitator = await startFacilitator({ FACILITATOR_OPEN_MODE: 'false', AUTH_FAILURES_PER_MINUTE: '0' });
    ledger = await startLedger({ FACILITATOR_URL: facilitator.url });
    merchant = createMerchant('Ledger hot routes');
    const express = ledger.app.getHttpAdapter().getInstance() as { handle: (...args: unknown[]) => unknown };
    const handle = express.handle.bind(express);
    express.handle = (...args: unknown[]) => {
      frameworkRequests++;
      return handle(...args);
    };
    const accounts = [debit, credit].map((id) => ({ id, asset: USD, code: 1 }));
    expect((await call(`${ledger.url}/accounts`, { key: merchant.apiKey, body: accounts })).status).toBe(200);
  });
  afterAll(async () => {
    await ledger?.close();
    await facilitator?.close();
  });

  const HEADERS_READ = ['content-type', 'content-length', 'www-authenticate', 'retry-after', 'connection'];

  async function send(body: string, headers: Record<string, string>) {
    const response = await fetch(`${ledger.url}/transfers`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    return {
      status: response.status,
      headers: Object.fromEntries(HEADERS_READ.map((h) => [h, response.headers.get(h)])),
      requestId: response.headers.get('x-request-id'),
      body: await response.text(),
    };
  }

  /** The answers below the framework and through it (X-Forwarded-For), checked equal; `second`: another body for the framework. */
  async function bothWays(body: string, headers: Record<string, string> = {}, second = body) {
    const before = frameworkRequests;
    const hot = await send(body, headers);
    expect(frameworkRequests).toBe(before);
    const framework = await send(second, { ...headers, 'x-forwarded-for': '127.0.0.1' });
    expect(frameworkRequests).toBe(before + 1);
    expect(hot.requestId).toMatch(/^[0-9a-f-]{36}$/);
    return { hot, framework };
  }
  /** An answer without what differs by nature between two requests: the transfer's id and the time it was written. */
  const withoutIds = (text: string) => text.replace(/"id":"[0-9a-f-]{36}"/g, '"id":""').replace(/"timestamp":"[^"]+"/g, '"timestamp":""');
  const key = () => ({ authorization: `Bearer ${merchant.apiKey}` });
  const transfer = (id: string, overrides: Record<string, unknown> = {}) =>
    JSON.stringify([{ id, debitAccountId: debit, creditAccountId: credit, amount: '5', asset: USD, code: 1, ...overrides }]);

  it('a transfer is created either way, with the same answer but its id and time', async () => {
    const { hot, framework } = await bothWays(transfer(randomUUID()), key(), transfer(randomUUID()));
    expect(hot).toMatchObject({ status: 200, headers: { ...framework.headers, 'content-type': 'application/json; charset=utf-8' } });
    expect(withoutIds(hot.body)).toBe(withoutIds(framework.body));
    expect(JSON.parse(hot.body).results[0]).toMatchObject({ result: 'created' });
    expect((await call(`${ledger.url}/accounts/${debit}`, { key: merchant.apiKey })).body).toMatchObject({ debitsPosted: '10' });
  });

  it('the same answers to a refused transfer, a malformed batch, bad JSON and a missing key', async () => {
    const missing = randomUUID();
    const refused = await bothWays(transfer(randomUUID(), { debitAccountId: missing }), key(), transfer(randomUUID(), { debitAccountId: missing }));
    const malformed = await bothWays(JSON.stringify([{ id: 'x', amount: -1 }]), key());
    const badJson = await bothWays('[{"id": ', key());
    const noKey = await bothWays(transfer(randomUUID()));
    for (const { hot, framework } of [refused, malformed, badJson, noKey]) {
      expect(hot).toMatchObject({ status: framework.status, headers: framework.headers });
      expect(withoutIds(hot.body)).toBe(withoutIds(framework.body));
    }
    expect(JSON.parse(refused.hot.body).results[0].result).toBe('debit_account_not_found');
    expect(malformed.hot).toMatchObject({ status: 400, headers: { 'content-type': 'application/problem+json; charset=utf-8' } });
    expect(badJson.hot).toMatchObject({ status: 400, headers: { connection: 'close' } });
    expect(noKey.hot).toMatchObject({ status: 401, headers: { 'www-authenticate': 'Bearer realm="ledger"' } });
  });
});
