import type { Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import express from 'express';
import fc from 'fast-check';
import { rawPost } from '../../../test/support/raw-http';
import { jsonBody, jsonBodyBounds, jsonNestingExceeds, MAX_JSON_DEPTH } from './json-body';

/** Depth as the scan must see it: 0 for a scalar, 1 for [] or {}, one more per level inside. */
function depthOf(value: unknown): number {
  if (Array.isArray(value)) return 1 + Math.max(0, ...value.map(depthOf));
  if (value !== null && typeof value === 'object') return 1 + Math.max(0, ...Object.values(value).map(depthOf));
  return 0;
}

describe('jsonNestingExceeds', () => {
  it('agrees with the depth of the parsed value, for any JSON (strings full of brackets, quotes and escapes included)', () => {
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ':', ',', '\u00e9') });
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        text,
        fc.integer(),
        fc.constant(null),
        fc.array(tie('node'), { maxLength: 3 }),
        fc.dictionary(text, tie('node'), { maxKeys: 3 }),
      ),
    })).node;
    fc.assert(
      fc.property(value, fc.integer({ min: 0, max: 8 }), fc.boolean(), (v, max, pretty) => {
        const json = JSON.stringify(v, null, pretty ? 2 : undefined);
        expect(jsonNestingExceeds(json, max)).toBe(depthOf(v) > max);
      }),
      { numRuns: 500 },
    );
  });

  it('counts nothing inside strings, escaped quotes included', () => {
    expect(jsonNestingExceeds(JSON.stringify({ a: '[[[[{{{{', b: 'say \\"[[[" ]' }), 1)).toBe(false);
    expect(jsonNestingExceeds(JSON.stringify(['\\', [[]]]), 2)).toBe(true);
  });

  it('takes 20,000 levels without recursing', () => {
    expect(jsonNestingExceeds(`${'['.repeat(20_000)}${']'.repeat(20_000)}`, MAX_JSON_DEPTH)).toBe(true);
    expect(jsonNestingExceeds(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`, MAX_JSON_DEPTH)).toBe(false);
  });
});

describe('jsonBody on a real server', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    const app = express();
    app.use(jsonBody(1024));
    app.post('/echo', (req, res) => void res.json({ got: req.body }));
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const post = (body: string) =>
    fetch(`${url}/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body }).then(async (r) => ({
      status: r.status,
      body: await r.json(),
    }));

  it('answers nesting past the bound 400 json_too_deep, and parses what is within it', async () => {
    expect(await post(`${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`)).toMatchObject({
      status: 400,
      body: { code: 'json_too_deep', detail: `the body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels` },
    });
    expect(await post(`${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`)).toMatchObject({ status: 200 });
  });

  it('answers 413 to a client that reads only after sending the whole body, whether it declared its length or not', async () => {
    for (const chunked of [false, true]) {
      const answer = await rawPost(url, '/echo', Buffer.alloc(2 * 1024 * 1024, ' '), { chunked, writeBytes: 4096, readAfterWriting: true });
      expect(answer, `chunked: ${chunked}`).toMatchObject({ status: 413 });
      expect(answer.head).toMatch(/^connection: close$/im);
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'payload_too_large' });
    }
  });
});

describe('jsonBodyBounds in front of a router that reads its own body (express.json, as the A2A SDK does)', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    const app = express();
    app.use(jsonBodyBounds(1024), express.json({ strict: false }));
    app.post('/rpc', (req, res) => void res.json({ got: req.body }));
    // The router's own answer to what it cannot parse (the SDK's is JSON-RPC -32700).
    app.use(
      (error: Error, _req: express.Request, res: express.Response, _next: express.NextFunction) => void res.status(200).json({ routerError: error.name }),
    );
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  });
  afterAll(() => new Promise((resolve) => server.close(resolve)));

  const post = (body: string | Buffer, headers: Record<string, string> = {}) =>
    fetch(`${url}/rpc`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body }).then(async (r) => ({
      status: r.status,
      body: await r.json(),
    }));

  it('hands every body within the bounds to the router unread: it parses it, or refuses it in its own shape', async () => {
    expect(await post('{"jsonrpc":"2.0","params":[[1],{"a":"]]"}]}')).toEqual({ status: 200, body: { got: { jsonrpc: '2.0', params: [[1], { a: ']]' }] } } });
    expect(await post('null')).toEqual({ status: 200, body: { got: null } });
    expect(await post('{"jsonrpc":')).toEqual({ status: 200, body: { routerError: 'SyntaxError' } });
    const streamed = new ReadableStream({ start: (c) => (c.enqueue(new TextEncoder().encode('[1,')), c.enqueue(new TextEncoder().encode('2]')), c.close()) });
    const chunked = await fetch(`${url}/rpc`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: streamed,
      duplex: 'half',
    } as RequestInit);
    expect(await chunked.json()).toEqual({ got: [1, 2] });
  });

  it('answers a body nested too deep 400 json_too_deep, compressed or not', async () => {
    const deep = `{"params":${'['.repeat(MAX_JSON_DEPTH + 1)}${']'.repeat(MAX_JSON_DEPTH + 1)}}`;
    expect(await post(deep)).toMatchObject({ status: 400, body: { code: 'json_too_deep' } });
    expect(await post(gzipSync(deep), { 'content-encoding': 'gzip' })).toMatchObject({ status: 400, body: { code: 'json_too_deep' } });
    expect(await post(gzipSync('{"a":[1]}'), { 'content-encoding': 'gzip' })).toEqual({ status: 200, body: { got: { a: [1] } } });
  });

  it('answers a body over the limit with the drained 413, declared or chunked', async () => {
    for (const chunked of [false, true]) {
      const answer = await rawPost(url, '/rpc', Buffer.alloc(2 * 1024 * 1024, ' '), { chunked, writeBytes: 4096, readAfterWriting: true });
      expect(answer, `chunked: ${chunked}`).toMatchObject({ status: 413 });
      expect(JSON.parse(answer.body)).toMatchObject({ code: 'payload_too_large' });
    }
  });
});
