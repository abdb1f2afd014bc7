import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { rpcFetch } from './rpc-fetch';

/**
 * rpcFetch's batching against a JSON-RPC endpoint on a local port (the HTTP behaviour under test, not a chain): calls of
 * one turn share one HTTP request, each caller gets its own answer, and failures reach every caller as they would alone.
 */
describe('rpcFetch', () => {
  let server: http.Server;
  let url: string;
  /** The bodies the endpoint received, one per HTTP request. */
  let received: unknown[] = [];
  type Answer = (calls: { id: number; method: string }[]) => { status: number; body: string; delayMs?: number };
  const echo: Answer = (calls) => ({ status: 200, body: JSON.stringify(calls.map((c) => ({ jsonrpc: '2.0', id: c.id, result: c.method }))) });
  let answer = echo;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (chunk: Buffer) => (text += chunk.toString()));
      req.on('end', () => {
        const body = JSON.parse(text) as { id: number; method: string } | { id: number; method: string }[];
        received.push(body);
        const calls = Array.isArray(body) ? body : [body];
        const reply = answer(calls);
        const single = !Array.isArray(body) && reply.status === 200 ? JSON.stringify((JSON.parse(reply.body) as unknown[])[0]) : reply.body;
        setTimeout(() => res.writeHead(reply.status, { 'content-type': 'application/json' }).end(single), reply.delayMs ?? 0);
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

  const call = (id: number, method: string, signal?: AbortSignal) =>
    rpcFetch(url, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ jsonrpc: '2.0', id, method }), signal });
  const resultOf = async (response: Response) => JSON.parse(await response.text()) as { id: number; result?: string; error?: unknown };

  it('sends a lone call as it is, at once', async () => {
    const response = await call(1, 'eth_blockNumber');
    expect(await resultOf(response)).toEqual({ jsonrpc: '2.0', id: 1, result: 'eth_blockNumber' });
    expect(received).toEqual([{ jsonrpc: '2.0', id: 1, method: 'eth_blockNumber' }]);
  });

  it('sends the calls of one turn as one batch and answers each caller with its own element, whatever their order', async () => {
    answer = (calls) => ({ status: 200, body: JSON.stringify([...calls].reverse().map((c) => ({ jsonrpc: '2.0', id: c.id, result: `${c.method}#${c.id}` }))) });
    const responses = await Promise.all([call(10, 'a'), call(11, 'b'), call(12, 'c')]);
    expect(await Promise.all(responses.map(resultOf))).toEqual([
      { jsonrpc: '2.0', id: 10, result: 'a#10' },
      { jsonrpc: '2.0', id: 11, result: 'b#11' },
      { jsonrpc: '2.0', id: 12, result: 'c#12' },
    ]);
    expect(received).toHaveLength(1);
    expect((received[0] as unknown[]).length).toBe(3);
  });

  it('splits more than 64 calls into batches of at most 64', async () => {
    await Promise.all(Array.from({ length: 100 }, (_, i) => call(100 + i, 'm')));
    expect(received.map((b) => (b as unknown[]).length)).toEqual([64, 36]);
  });

  it('gives every caller of a batch the HTTP error status and body, as each would get alone', async () => {
    answer = () => ({ status: 503, body: 'overloaded' });
    const responses = await Promise.all([call(1, 'a'), call(2, 'b')]);
    expect(responses.map((r) => r.status)).toEqual([503, 503]);
    expect(await Promise.all(responses.map((r) => r.text()))).toEqual(['overloaded', 'overloaded']);
  });

  it('rejects a call with no element in the batch answer, and answers the others', async () => {
    answer = (calls) => ({ status: 200, body: JSON.stringify(calls.filter((c) => c.id !== 2).map((c) => ({ jsonrpc: '2.0', id: c.id, result: c.method }))) });
    const [one, two] = await Promise.allSettled([call(1, 'a'), call(2, 'b')]);
    expect(one.status).toBe('fulfilled');
    expect(two).toMatchObject({ status: 'rejected', reason: { message: expect.stringContaining('no answer for call 2') } });
  });

  it('lets one caller of a batch give up (AbortError) while the others get their answers', async () => {
    answer = (calls) => ({ ...echo(calls), delayMs: 100 });
    const patience = new AbortController();
    const calls = Promise.allSettled([call(1, 'a', patience.signal), call(2, 'b')]);
    setTimeout(() => patience.abort(), 20);
    const [gaveUp, answered] = await calls;
    expect(gaveUp).toMatchObject({ status: 'rejected', reason: { name: 'AbortError' } });
    expect(answered.status).toBe('fulfilled');
  });

  it('rejects every caller when the endpoint cannot be reached', async () => {
    const closed = http.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((resolve) => closed.close(resolve));
    const at = (id: number) => rpcFetch(`http://127.0.0.1:${port}/`, { method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id, method: 'm' }) });
    const outcomes = await Promise.allSettled([at(1), at(2)]);
    expect(outcomes.map((o) => o.status)).toEqual(['rejected', 'rejected']);
    expect(outcomes.map((o) => (o as PromiseRejectedResult).reason.code)).toEqual(['ECONNREFUSED', 'ECONNREFUSED']);
  });
});
