import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { BaseError, createPublicClient, HttpRequestError, RpcRequestError, TimeoutError, type PublicClient } from 'viem';
import { isDeliveryUncertain, isTransportFailure, rpcErrorCode } from './errors';
import { batchedHttp } from './rpc-transport';

/**
 * batchedHttp against a JSON-RPC endpoint on a local port (the HTTP behaviour under test, not a chain): a lone call goes
 * at once, the calls of one turn share one HTTP request, each caller gets its own answer, and failures reach every
 * caller as the errors libs/chain/src/errors.ts classifies.
 */
describe('batchedHttp', () => {
  type Call = { id: number; method: string };
  type Answer = (calls: Call[]) => { status: number; body: unknown[] | string; delayMs?: number };
  const echo: Answer = (calls) => ({ status: 200, body: calls.map((c) => ({ jsonrpc: '2.0', id: c.id, result: c.method })) });
  let answer = echo;
  let server: http.Server;
  let url: string;
  /** The bodies the endpoint received, one per HTTP request. */
  let received: unknown[] = [];
  /** The Authorization header of the last request. */
  let authorization: string | undefined;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        authorization = req.headers.authorization;
        const body = JSON.parse(text) as Call | Call[];
        received.push(body);
        const reply = answer(Array.isArray(body) ? body : [body]);
        const payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(Array.isArray(body) ? reply.body : reply.body[0]);
        setTimeout(() => res.writeHead(reply.status, { 'content-type': 'application/json' }).end(payload), reply.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));
  beforeEach(() => {
    received = [];
    answer = echo;
  });

  const clientAt = (at: string, timeout = 2_000): PublicClient => createPublicClient({ transport: batchedHttp(at, { timeout, retryCount: 0 }) });
  const ask = (client: PublicClient, method: string) => client.request({ method: method as 'eth_blockNumber' }) as Promise<unknown>;

  it('sends a lone call as it is, not as a batch', async () => {
    const client = clientAt(url);
    expect(await ask(client, 'eth_blockNumber')).toBe('eth_blockNumber');
    expect(received).toEqual([expect.objectContaining({ method: 'eth_blockNumber' })]);
    for (let i = 0; i < 5; i++) await ask(client, 'eth_chainId');
    expect(received.slice(1).every((b) => !Array.isArray(b))).toBe(true);
  });

  it('sends the calls of one turn as one batch and answers each caller with its own result, whatever the order', async () => {
    answer = (calls) => ({ status: 200, body: [...calls].reverse().map((c) => ({ jsonrpc: '2.0', id: c.id, result: `${c.method}!` })) });
    const client = clientAt(url);
    expect(await Promise.all([ask(client, 'a'), ask(client, 'b'), ask(client, 'c')])).toEqual(['a!', 'b!', 'c!']);
    expect(received).toHaveLength(1);
    expect((received[0] as Call[]).map((c) => c.method)).toEqual(['a', 'b', 'c']);
  });

  it('splits more than 64 calls into batches of at most 64', async () => {
    const client = clientAt(url);
    await Promise.all(Array.from({ length: 100 }, (_, i) => ask(client, `m${i}`)));
    expect(received.map((b) => (b as Call[]).length)).toEqual([64, 36]);
  });

  it("gives one call of a batch the node's JSON-RPC error and the others their results", async () => {
    answer = (calls) => ({
      status: 200,
      body: calls.map((c) =>
        c.method === 'bad'
          ? { jsonrpc: '2.0', id: c.id, error: { code: -32601, message: 'method not found' } }
          : { jsonrpc: '2.0', id: c.id, result: c.method },
      ),
    });
    const client = clientAt(url);
    const [good, bad] = await Promise.allSettled([ask(client, 'good'), ask(client, 'bad')]);
    expect(good).toEqual({ status: 'fulfilled', value: 'good' });
    expect(bad).toMatchObject({ status: 'rejected', reason: { code: -32601 } });
    expect(isTransportFailure((bad as PromiseRejectedResult).reason)).toBe(true);
    expect(isDeliveryUncertain((bad as PromiseRejectedResult).reason)).toBe(false);
  });

  it("gives eth_sendRawTransactionSync's answers their codes: EIP-7966's 4 and 5 (sent, no receipt), method not found", async () => {
    const hash = `0x${'ab'.repeat(32)}`;
    for (const code of [4, 5, -32601]) {
      answer = (calls) => ({ status: 200, body: calls.map((c) => ({ jsonrpc: '2.0', id: c.id, error: { code, message: 'no receipt', data: hash } })) });
      const client = clientAt(url);
      const error = await client.sendRawTransactionSync({ serializedTransaction: '0x02' }).catch((e: unknown) => e);
      expect(rpcErrorCode(error)).toBe(code);
      expect(isDeliveryUncertain(error)).toBe(false);
    }
    answer = () => ({ status: 503, body: 'overloaded' });
    expect(rpcErrorCode(await ask(clientAt(url), 'eth_sendRawTransactionSync').catch((e: unknown) => e))).toBeUndefined();
  });

  it('fails every caller of a batch with an HttpRequestError on an HTTP error status: a transport failure', async () => {
    answer = () => ({ status: 503, body: 'overloaded' });
    const client = clientAt(url);
    const outcomes = await Promise.allSettled([ask(client, 'a'), ask(client, 'b')]);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      const error = (outcome as PromiseRejectedResult).reason;
      expect(error).toBeInstanceOf(HttpRequestError);
      expect(isDeliveryUncertain(error)).toBe(true);
    }
  });

  it('fails every caller with a TimeoutError when the node does not answer in time', async () => {
    answer = (calls) => ({ ...echo(calls), delayMs: 300 });
    const client = clientAt(url, 50);
    const outcomes = await Promise.allSettled([ask(client, 'a'), ask(client, 'b')]);
    expect(outcomes.map((o) => (o as PromiseRejectedResult).reason instanceof TimeoutError)).toEqual([true, true]);
    expect(isTransportFailure((outcomes[0] as PromiseRejectedResult).reason)).toBe(true);
  });

  it('answers every caller of a batch the node refused whole with its one JSON-RPC error (geth)', async () => {
    answer = () => ({ status: 200, body: JSON.stringify({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'batch too large' } }) });
    const client = clientAt(url);
    const outcomes = await Promise.allSettled([ask(client, 'a'), ask(client, 'b')]);
    for (const outcome of outcomes) expect(outcome).toMatchObject({ status: 'rejected', reason: { code: -32600, details: 'batch too large' } });
  });

  it("takes a JSON-RPC error under an HTTP error status as the node's answer, not a failed delivery", async () => {
    answer = (calls) => ({ status: 429, body: JSON.stringify({ jsonrpc: '2.0', id: calls[0].id, error: { code: -32005, message: 'rate limited' } }) });
    const client = clientAt(url);
    const error = await ask(client, 'eth_blockNumber').catch((e: unknown) => e);
    // viem names the code (LimitExceededRpcError) around the RpcRequestError the transport threw
    expect((error as BaseError).walk((e) => e instanceof RpcRequestError)).toMatchObject({ code: -32005, details: 'rate limited', status: 429 });
    expect(isDeliveryUncertain(error)).toBe(false);
  });

  it('fails with an HttpRequestError when a 200 answer is not JSON', async () => {
    answer = () => ({ status: 200, body: '<html>gateway</html>' });
    const error = await ask(clientAt(url), 'eth_blockNumber').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(HttpRequestError);
    expect(isDeliveryUncertain(error)).toBe(true);
  });

  it("sends the URL's user and password as Basic authorization, as node providers' URLs carry them", async () => {
    const withCredentials = url.replace('http://', 'http://user:p%40ss@');
    expect(await ask(clientAt(withCredentials), 'eth_chainId')).toBe('eth_chainId');
    expect(authorization).toBe(`Basic ${Buffer.from('user:p@ss').toString('base64')}`);
  });

  it('fails every caller with an HttpRequestError when the node cannot be reached', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const client = clientAt(`http://127.0.0.1:${port}/`);
    const outcomes = await Promise.allSettled([ask(client, 'a'), ask(client, 'b')]);
    expect(outcomes.map((o) => (o as PromiseRejectedResult).reason instanceof HttpRequestError)).toEqual([true, true]);
  });
});
