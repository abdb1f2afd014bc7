import http from 'node:http';
import https from 'node:https';

/** Keep-alive sockets to the RPC nodes, shared by every network client of the process. */
const agents = { 'http:': new http.Agent({ keepAlive: true }), 'https:': new https.Agent({ keepAlive: true }) };

/** What viem's HTTP transport reads of a response (status, headers, text): see rpcFetch. */
interface RpcResponse {
  ok: boolean;
  status: number;
  statusText: string;
  headers: Headers;
  body: null;
  text(): Promise<string>;
  json(): Promise<unknown>;
}

/**
 * The `fetchFn` of the network clients' HTTP transports: a JSON-RPC POST over node:http(s) with keep-alive, instead of
 * the global fetch. Same request, same answer, for about half the CPU per call (measured 0.39 against 0.70 ms per
 * eth_blockNumber on this machine's anvil; the settlement path makes three calls per payment, verification one).
 * Failures keep their meaning for viem: a refused or cut connection rejects (viem reports an HttpRequestError, a
 * transport failure), an abort rejects with an AbortError (viem's timeout reports a TimeoutError), and an HTTP error
 * status is answered as a response. A redirect, which fetch would follow, is handed to fetch.
 */
export function rpcFetch(input: string | URL | Request, init: RequestInit = {}): Promise<Response> {
  const url = new URL(typeof input === 'string' || input instanceof URL ? input : input.url);
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent || typeof init.body !== 'string') return fetch(input, init);
  const request = url.protocol === 'https:' ? https.request : http.request;
  return new Promise<Response>((resolve, reject) => {
    const req = request(url, { method: init.method ?? 'POST', headers: plainHeaders(init.headers), agent, signal: init.signal ?? undefined }, (res) => {
      const status = res.statusCode ?? 0;
      if (status >= 300 && status < 400 && res.headers.location) {
        res.resume();
        resolve(fetch(input, init));
        return;
      }
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('close', () => {
        if (!res.complete) reject(new Error(`the answer from ${url.origin} was cut off`));
      });
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        const headers = new Headers();
        for (const [name, value] of Object.entries(res.headers)) {
          if (value !== undefined) headers.set(name, Array.isArray(value) ? value.join(', ') : value);
        }
        const response: RpcResponse = {
          ok: status >= 200 && status < 300,
          status,
          statusText: res.statusMessage ?? '',
          headers,
          body: null,
          text: () => Promise.resolve(text),
          json: () => Promise.resolve().then(() => JSON.parse(text) as unknown),
        };
        resolve(response as unknown as Response);
      });
    });
    req.on('error', reject);
    req.end(init.body);
  });
}

function plainHeaders(headers: RequestInit['headers']): Record<string, string> {
  if (!headers) return {};
  if (headers instanceof Headers) return Object.fromEntries(headers.entries());
  if (Array.isArray(headers)) return Object.fromEntries(headers);
  return headers as Record<string, string>;
}
