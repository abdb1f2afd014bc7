import type { Address } from 'viem';
import { payerAccount, signAuthorization, testChain, v2Body, v2Requirements } from '../../../test/support/chain';
import { startFacilitator, type RunningFacilitator } from '../../../test/support/facilitator';

/**
 * POST /verify and /settle are served below Express and Nest (serveHotRoutes); a request naming its client in
 * X-Forwarded-For still goes through the framework. Each request here is sent both ways and must get the same answer:
 * status, body, and the headers a client reads.
 */
describe('x402 routes served below the framework', () => {
  const { manifest } = testChain();
  const usdc = manifest.tokens.usdc;
  const merchant = manifest.accounts.merchant.address as Address;
  const payer = payerAccount(manifest, 0);
  const amount = 10_000n;
  let facilitator: RunningFacilitator;
  let frameworkRequests = 0;

  beforeAll(async () => {
    facilitator = await startFacilitator();
    const express = facilitator.app.getHttpAdapter().getInstance() as { handle: (...args: unknown[]) => unknown };
    const handle = express.handle.bind(express);
    express.handle = (...args: unknown[]) => {
      frameworkRequests++;
      return handle(...args);
    };
  });
  afterAll(() => facilitator?.close());

  const HEADERS_READ = ['content-type', 'content-length', 'www-authenticate', 'retry-after', 'connection', 'x-powered-by', 'etag'];

  async function send(path: string, body: string, headers: Record<string, string>) {
    const response = await fetch(`${facilitator.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
    const text = await response.text();
    return {
      status: response.status,
      headers: Object.fromEntries(HEADERS_READ.map((h) => [h, response.headers.get(h)])),
      requestId: response.headers.get('x-request-id'),
      body: text,
    };
  }

  /** The answer served below the framework, after checking the framework gives the same one. */
  async function bothWays(path: string, body: string, headers: Record<string, string> = {}) {
    const before = frameworkRequests;
    const hot = await send(path, body, headers);
    expect(frameworkRequests).toBe(before);
    const framework = await send(path, body, { ...headers, 'x-forwarded-for': '127.0.0.1' });
    expect(frameworkRequests).toBe(before + 1);
    expect(hot).toMatchObject({ status: framework.status, headers: framework.headers, body: framework.body });
    expect(hot.requestId).toMatch(/^[0-9a-f-]{36}$/);
    return { ...hot, json: JSON.parse(hot.body) as Record<string, unknown> };
  }

  const signed = (overrides: { to?: Address; value?: bigint } = {}) =>
    signAuthorization(payer, usdc, manifest.chainId, { to: merchant, value: amount, ...overrides }).then((payload) =>
      JSON.stringify(v2Body(payload, v2Requirements(manifest, usdc, amount))),
    );

  it('a valid payment: isValid with its payer', async () => {
    const answer = await bothWays('/verify', await signed());
    expect(answer).toMatchObject({ status: 200, headers: { 'content-type': 'application/json; charset=utf-8' } });
    expect(answer.json).toEqual({ isValid: true, payer: payer.address });
  });

  it('an invalid payment: the protocol answers, on /verify and on /settle', async () => {
    const body = await signed({ to: payer.address });
    expect((await bothWays('/verify', body)).json).toMatchObject({ isValid: false, invalidReason: 'invalid_exact_evm_recipient_mismatch' });
    expect((await bothWays('/settle', body)).json).toMatchObject({ success: false, errorReason: 'invalid_exact_evm_recipient_mismatch' });
  });

  it('a body that is no payment request: the validation problem, field by field', async () => {
    const answer = await bothWays('/verify', JSON.stringify({ x402Version: 2, paymentPayload: {} }));
    expect(answer).toMatchObject({ status: 400, headers: { 'content-type': 'application/problem+json; charset=utf-8' } });
    expect(answer.json).toMatchObject({ type: 'urn:problem:validation_failed', instance: '/verify' });
    expect(answer.json.invalidParams).toEqual(expect.arrayContaining([expect.objectContaining({ name: expect.any(String) })]));
  });

  it('JSON that does not parse, or nests too deep: the body problems, and the connection closes', async () => {
    const malformed = await bothWays('/settle', '{"x402Version": 2,');
    expect(malformed).toMatchObject({ status: 400, headers: { connection: 'close' } });
    expect(malformed.json).toMatchObject({ type: 'urn:problem:malformed_json', instance: '/settle' });
    const deep = await bothWays('/verify', `${'['.repeat(65)}${']'.repeat(65)}`);
    expect(deep).toMatchObject({ status: 400, headers: { connection: 'close' } });
    expect(deep.json).toMatchObject({ type: 'urn:problem:json_too_deep' });
  });

  it('an unknown API key: 401 with its challenge, even in open mode', async () => {
    const answer = await bothWays('/verify', await signed(), { authorization: 'Bearer mp_test_not_a_key' });
    expect(answer).toMatchObject({ status: 401, headers: { 'www-authenticate': 'Bearer realm="facilitator"' } });
    expect(answer.json).toMatchObject({ type: 'urn:problem:unauthorized' });
  });

  it('keeps a sane request id, and counts the request in http_request_duration_seconds under its route', async () => {
    const count = async () => {
      const text = await (await fetch(`${facilitator.url}/metrics`)).text();
      const line = text
        .split('\n')
        .find((l) => l.startsWith('http_request_duration_seconds_count{') && l.includes('route="/verify"') && l.includes('status="200"'));
      return Number(line?.split(' ').at(-1) ?? 0);
    };
    const before = await count();
    const response = await fetch(`${facilitator.url}/verify`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-request-id': 'buyer-42.call:7' },
      body: await signed(),
    });
    expect(response.headers.get('x-request-id')).toBe('buyer-42.call:7');
    await response.text();
    expect(await count()).toBe(before + 1);
  });

  it('leaves to the framework what it does not take whole: a query, another content type, an empty body', async () => {
    const before = frameworkRequests;
    const body = await signed();
    expect((await send('/verify?trace=1', body, {})).status).toBe(200);
    expect((await send('/verify', body, { 'content-type': 'text/plain' })).status).toBe(415);
    expect((await send('/verify', '', {})).status).toBe(400);
    expect(frameworkRequests).toBe(before + 3);
  });
});
